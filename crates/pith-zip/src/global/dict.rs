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

/// Dictionaries at least this large go into an anonymous mapping (fresh
/// pages are zero, so the slack needs no writing) advised for huge pages.
const HUGE: usize = 2 << 20;

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
    /// Takes `bytes` as the dictionary (from 2 MiB on, copied into an
    /// anonymous mapping advised for huge pages).
    pub(crate) fn new(bytes: Vec<u8>) -> Self {
        if bytes.len() < HUGE {
            let len = bytes.len();
            let mut bytes = bytes;
            bytes.resize(len + SLACK, 0);
            return Dictionary {
                storage: Storage::Heap(bytes),
                len,
            };
        }
        Dictionary::from_slice(&bytes)
    }

    /// A dictionary holding a copy of `bytes`, made in one allocation of
    /// its final size (a matcher's index over training material: a
    /// `to_vec` then [`Dictionary::new`] briefly held it three times).
    pub(crate) fn from_slice(bytes: &[u8]) -> Self {
        let len = bytes.len();
        if len >= HUGE {
            if let Ok(mut map) = memmap2::MmapMut::map_anon(len + SLACK) {
                // Only a hint: without transparent huge pages it is a no-op.
                #[cfg(target_os = "linux")]
                let _ = map.advise(memmap2::Advice::HugePage);
                map[..len].copy_from_slice(bytes);
                return Dictionary {
                    storage: Storage::Mapped(map),
                    len,
                };
            }
        }
        let mut heap = Vec::with_capacity(len + SLACK);
        heap.extend_from_slice(bytes);
        heap.resize(len + SLACK, 0);
        Dictionary {
            storage: Storage::Heap(heap),
            len,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways of making a dictionary, below and above the mapping's
    /// threshold, hold the bytes followed by `SLACK` zeros.
    #[test]
    fn a_dictionary_is_its_bytes_then_zero_slack() {
        for len in [0, 1, 1000, HUGE - 1, HUGE, HUGE + 12_345] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            for d in [
                Dictionary::new(bytes.clone()),
                Dictionary::from_slice(&bytes),
            ] {
                assert_eq!(d.len(), len);
                assert_eq!(d.bytes(), &bytes[..]);
                assert_eq!(d.padded().len(), len + SLACK);
                assert!(d.padded()[len..].iter().all(|&b| b == 0), "slack of {len}");
            }
        }
    }
}
