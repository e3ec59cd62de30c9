//! The segment file header (`docs/format.md`, "Segment file").
//!
//! ```text
//! 0    magic "PITHSEG\0"
//! 8    version u32 (1)          12  flags u32 (0)
//! 16   keys u64                 24  records u64 (keys + older versions)
//! 32   min_seq u64              40  max_seq u64
//! 48   raw_key_bytes u64
//! 56   5 sections, 24 bytes each: offset u64 | len u64 | crc32c u32 | reserved u32
//!      in order: trie, store, tags, history, bloom
//! 176  crc32c of bytes 0..176 u32 | reserved u32
//! 184  (sections follow, each at an 8-byte aligned offset)
//! ```
//!
//! All integers little-endian. Every section's crc32c covers its `len`
//! bytes; open checks the small sections' checksums (tags, history,
//! bloom) and relies on the trie's and the store's own checksums of their
//! metadata; `verify` checks all five.

use pith_enc::le;

pub(crate) const MAGIC: &[u8; 8] = b"PITHSEG\0";
pub(crate) const VERSION: u32 = 1;
pub(crate) const HEADER_BYTES: usize = 184;
pub(crate) const SECTIONS: usize = 5;
pub(crate) const SECTION_NAMES: [&str; SECTIONS] = ["trie", "store", "tags", "history", "bloom"];

/// Section indexes.
pub(crate) const TRIE: usize = 0;
pub(crate) const STORE: usize = 1;
pub(crate) const TAGS: usize = 2;
pub(crate) const HISTORY: usize = 3;
pub(crate) const BLOOM: usize = 4;

/// One section's place in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Section {
    pub offset: u64,
    pub len: u64,
    pub crc: u32,
}

/// The decoded header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Header {
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
    Checksum { stored: u32, computed: u32 },
    Reserved,
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
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
        for (i, s) in self.sections.iter().enumerate() {
            let at = 56 + 24 * i;
            b[at..at + 8].copy_from_slice(&s.offset.to_le_bytes());
            b[at + 8..at + 16].copy_from_slice(&s.len.to_le_bytes());
            b[at + 16..at + 20].copy_from_slice(&s.crc.to_le_bytes());
        }
        let crc = crc32c::crc32c(&b[..176]);
        b[176..180].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Header, HeaderError> {
        let Some(b) = b.first_chunk::<HEADER_BYTES>() else {
            return Err(HeaderError::Truncated);
        };
        if &b[..8] != MAGIC {
            return Err(HeaderError::BadMagic);
        }
        let (stored, computed) = (le::u32_in(b, 176), crc32c::crc32c(&b[..176]));
        if stored != computed {
            return Err(HeaderError::Checksum { stored, computed });
        }
        let version = le::u32_in(b, 8);
        if version != VERSION {
            return Err(HeaderError::Version(version));
        }
        if le::u32_in(b, 12) != 0 || le::u32_in(b, 180) != 0 {
            return Err(HeaderError::Reserved);
        }
        let mut h = Header {
            keys: le::u64_in(b, 16),
            records: le::u64_in(b, 24),
            min_seq: le::u64_in(b, 32),
            max_seq: le::u64_in(b, 40),
            raw_key_bytes: le::u64_in(b, 48),
            sections: Default::default(),
        };
        for (i, s) in h.sections.iter_mut().enumerate() {
            let at = 56 + 24 * i;
            if le::u32_in(b, at + 20) != 0 {
                return Err(HeaderError::Reserved);
            }
            *s = Section {
                offset: le::u64_in(b, at),
                len: le::u64_in(b, at + 8),
                crc: le::u32_in(b, at + 16),
            };
        }
        Ok(h)
    }
}
