//! The dictionary of a global-codec model, inflated in memory once and
//! shared: by the model's decoder and by the matcher's index an encoder
//! builds over it ([`super::DictIndex`]), so encoding with a model costs
//! the index's tables and no second copy of the dictionary (a copy of up
//! to 8 MiB per model while any flush or merge encoded, before).
//!
//! Invariants: `padded()` is the dictionary followed by [`SLACK`] zero
//! bytes, so the decoder's 16-byte moves may read past a match's end; the
//! bytes never change once built.

/// Zero bytes after the dictionary, that the decoder's moves may read
/// past a match's end (its `SLACK`, checked at compile time there).
pub(crate) const SLACK: usize = 64;

/// The inflated dictionary, in huge pages where the kernel gives them: its
/// reads are random, and 4 KiB pages would add a TLB miss to most.
pub(crate) struct Dictionary {
    storage: Storage,
    len: usize,
}

enum Storage {
    Mapped(memmap2::MmapMut),
    Heap(Vec<u8>),
}

impl Dictionary {
    /// Takes `bytes` as the dictionary (into an anonymous mapping advised
    /// for huge pages from 2 MiB on).
    pub(crate) fn new(mut bytes: Vec<u8>) -> Self {
        let len = bytes.len();
        bytes.resize(len + SLACK, 0);
        let storage = if len < 2 << 20 {
            Storage::Heap(bytes)
        } else {
            match memmap2::MmapMut::map_anon(bytes.len()) {
                Ok(mut map) => {
                    // Only a hint: without transparent huge pages it is a no-op.
                    #[cfg(target_os = "linux")]
                    let _ = map.advise(memmap2::Advice::HugePage);
                    map.copy_from_slice(&bytes);
                    Storage::Mapped(map)
                }
                Err(_) => Storage::Heap(bytes),
            }
        };
        Dictionary { storage, len }
    }

    /// The dictionary and its slack.
    pub(crate) fn padded(&self) -> &[u8] {
        match &self.storage {
            Storage::Mapped(m) => m,
            Storage::Heap(v) => v,
        }
    }

    /// The dictionary.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.padded().get(..self.len).unwrap_or_default()
    }

    /// Its length in bytes (the slack not counted).
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}
