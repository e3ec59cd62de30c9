//! The segment file header (`docs/format.md`, "Segment file").
//!
//! ```text
//! 0    magic "PITHSEG\0"
//! 8    version u32 (1 or 2)     12  flags u32 (0)
//! 16   keys u64                 24  records u64 (keys + older versions)
//! 32   min_seq u64              40  max_seq u64
//! 48   raw_key_bytes u64
//! 56   n sections, 24 bytes each: offset u64 | len u64 | crc32c u32 | reserved u32
//!      in order: trie, store, tags, history, bloom, and in version 2 expiry
//! H-8  crc32c of bytes 0..H-8 u32 | reserved u32
//! H    (sections follow, each at an 8-byte aligned offset)
//! ```
//!
//! Version 1 has 5 sections (n = 5, header size H = 184), version 2 adds
//! the expiry section (n = 6, H = 208). A segment is written as version 1
//! unless some record has a deadline, so databases that never use expiry
//! keep files that older builds read; both versions are read.
//!
//! All integers little-endian. Every section's crc32c covers its `len`
//! bytes; open checks the small sections' checksums (tags, history,
//! bloom) and relies on the trie's and the store's own checksums of their
//! metadata; `verify` checks all five.

use pith_enc::le;

pub(crate) const MAGIC: &[u8; 8] = b"PITHSEG\0";
/// The newest version, the one written when a record has a deadline.
pub(crate) const VERSION: u32 = 2;
/// The version written when none has.
pub(crate) const VERSION_WITHOUT_EXPIRY: u32 = 1;
/// The largest header (version 2).
pub(crate) const HEADER_BYTES: usize = 208;
pub(crate) const SECTIONS: usize = 6;
pub(crate) const SECTION_NAMES: [&str; SECTIONS] =
    ["trie", "store", "tags", "history", "bloom", "expiry"];

/// Section indexes.
pub(crate) const TRIE: usize = 0;
pub(crate) const STORE: usize = 1;
pub(crate) const TAGS: usize = 2;
pub(crate) const HISTORY: usize = 3;
pub(crate) const BLOOM: usize = 4;
pub(crate) const EXPIRY: usize = 5;

/// Sections and header bytes of a version, `None` for an unknown one.
pub(crate) fn layout(version: u32) -> Option<(usize, usize)> {
    match version {
        1 => Some((5, 184)),
        2 => Some((6, 208)),
        _ => None,
    }
}

/// One section's place in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Section {
    pub offset: u64,
    pub len: u64,
    pub crc: u32,
}

/// The decoded header. A version 1 header's expiry section is empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Header {
    pub version: u32,
    pub keys: u64,
    pub records: u64,
    pub min_seq: u64,
    pub max_seq: u64,
    pub raw_key_bytes: u64,
    pub sections: [Section; SECTIONS],
}

/// Why a header did not decode.
pub(crate) enum HeaderError {
    Truncated,
    BadMagic,
    Version(u32),
    /// At byte `at`.
    Checksum {
        at: usize,
        stored: u32,
        computed: u32,
    },
    Reserved,
}

impl Header {
    /// The header's bytes: as many as its version's layout has (its
    /// version must be 1 or 2).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let (sections, len) = (self.section_count(), self.len());
        let mut b = vec![0u8; len];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        for (i, v) in [
            self.keys,
            self.records,
            self.min_seq,
            self.max_seq,
            self.raw_key_bytes,
        ]
        .iter()
        .enumerate()
        {
            b[16 + 8 * i..24 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        for (i, s) in self.sections.iter().take(sections).enumerate() {
            let at = 56 + 24 * i;
            b[at..at + 8].copy_from_slice(&s.offset.to_le_bytes());
            b[at + 8..at + 16].copy_from_slice(&s.len.to_le_bytes());
            b[at + 16..at + 20].copy_from_slice(&s.crc.to_le_bytes());
        }
        let crc = crc32c::crc32c(&b[..len - 8]);
        b[len - 8..len - 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Sections this header's version has.
    pub(crate) fn section_count(&self) -> usize {
        layout(self.version).map_or(SECTIONS, |l| l.0)
    }

    /// Header bytes of this header's version.
    pub(crate) fn len(&self) -> usize {
        layout(self.version).map_or(HEADER_BYTES, |l| l.1)
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Header, HeaderError> {
        // The version says how long the header, and so where its checksum,
        // is: an unknown version is reported as such, unchecked.
        let Some(fixed) = b.first_chunk::<16>() else {
            return Err(HeaderError::Truncated);
        };
        if &fixed[..8] != MAGIC {
            return Err(HeaderError::BadMagic);
        }
        let version = le::u32_in(fixed, 8);
        let Some((sections, len)) = layout(version) else {
            return Err(HeaderError::Version(version));
        };
        let Some(b) = b.get(..len) else {
            return Err(HeaderError::Truncated);
        };
        // Every offset read below is inside the `len` bytes of `b`.
        let u32_in = |at: usize| le::u32_at(b, at).unwrap_or_default();
        let u64_in = |at: usize| le::u64_at(b, at).unwrap_or_default();
        let (stored, computed) = (u32_in(len - 8), crc32c::crc32c(&b[..len - 8]));
        if stored != computed {
            return Err(HeaderError::Checksum {
                at: len - 8,
                stored,
                computed,
            });
        }
        if u32_in(12) != 0 || u32_in(len - 4) != 0 {
            return Err(HeaderError::Reserved);
        }
        let mut h = Header {
            version,
            keys: u64_in(16),
            records: u64_in(24),
            min_seq: u64_in(32),
            max_seq: u64_in(40),
            raw_key_bytes: u64_in(48),
            sections: Default::default(),
        };
        for (i, s) in h.sections.iter_mut().take(sections).enumerate() {
            let at = 56 + 24 * i;
            if u32_in(at + 20) != 0 {
                return Err(HeaderError::Reserved);
            }
            *s = Section {
                offset: u64_in(at),
                len: u64_in(at + 8),
                crc: u32_in(at + 16),
            };
        }
        Ok(h)
    }
}
