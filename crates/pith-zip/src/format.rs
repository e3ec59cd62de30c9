//! The record-store footer and file layout.
//!
//! ```text
//! [pool, zero-padded to 8] [dictionary, zero-padded to 8] [offsets words] [footer, 80 bytes]
//!
//! footer:
//! 0   magic "PITHZIP\0"              48  largest decoded record, u64
//! 8   version u32 = 1, 2 or 3        56  total decoded bytes, u64
//! 12  codec u32 (0 plain, 1 zstd,   64  crc32c of the padded pool, u32
//!       2 global, 3 shared, 4 fixed)
//! 16  records u64                    68  crc32c of padded dictionary + offsets, u32
//! 24  pool length u64                72  flags u32 (below)
//! 32  dictionary length u64          76  crc32c of footer bytes 0..76, u32
//! 40  offsets length in bytes u64
//! ```
//!
//! Flags: version 1, bit 0: every record is followed by the crc32c of its
//! decoded bytes. Version 2, bit 1: records are checksummed in groups of
//! `2^g` consecutive records, `g` in bits 8..16 (at most 6), the crc32c of
//! each group's stored bytes after the offsets (`checksums.rs`). Every
//! other bit is 0. Version 3 has version 2's flags; its offsets carry a
//! stride (`offsets.rs`), and it may use the fixed codec (`fixed.rs`).
//! Builders write version 3.
//!
//! The footer comes last so the builder can stream records to any writer
//! and fill in the sizes at the end, as LevelDB tables do.

use pith_enc::le;

use crate::error::{Error, Result};

/// Footer magic.
pub const MAGIC: [u8; 8] = *b"PITHZIP\0";
pub(crate) const FOOTER_BYTES: usize = 80;
/// The version builders write; readers read it and versions 1 and 2.
pub(crate) const VERSION: u32 = 3;
/// Version 1: a crc32c of the decoded record after each record.
pub(crate) const FLAG_RECORD_CRC: u32 = 1;
/// Version 2: a crc32c per group of records, after the offsets.
pub(crate) const FLAG_GROUP_CRC: u32 = 2;
/// Version 2: where the log2 of the group size sits in the flags.
const GROUP_SHIFT: u32 = 8;
/// The largest log2 of a group size.
pub(crate) const MAX_GROUP_LOG2: u32 = 6;
/// The most record bytes one byte of zstd frame may decode to, plus one
/// per record: zstd's worst case is an RLE block, 4 bytes for 128 KiB.
pub(crate) const MAX_EXPANSION: u64 = 32_768;

/// The codec a store uses. Tag values are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Codec {
    /// Records stored as they are.
    Plain = 0,
    /// Each record a magicless zstd frame against the store's dictionary.
    ZstdDict = 1,
    /// Our own codec: sequences of Huffman-coded literals and matches into
    /// a megabytes-large store-wide dictionary or back into the record.
    Global = 2,
    /// The global codec with a model kept outside the store (a
    /// [`crate::Model`] shared by many stores); the dictionary section
    /// holds a reference to it, and each record a small header.
    Shared = 3,
    /// Records of one length whose bytes at some positions are the same
    /// in every record: those are held once, in the section, and each
    /// record stores only its other bytes (random hashes, keys of one
    /// width). Version 3 on; builders choose it in place of `Plain`.
    Fixed = 4,
}

impl Codec {
    fn from_tag(tag: u32) -> Option<Codec> {
        match tag {
            0 => Some(Codec::Plain),
            1 => Some(Codec::ZstdDict),
            2 => Some(Codec::Global),
            3 => Some(Codec::Shared),
            4 => Some(Codec::Fixed),
            _ => None,
        }
    }

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Plain => "plain",
            Codec::ZstdDict => "zstd-dict",
            Codec::Global => "global",
            Codec::Shared => "global-shared",
            Codec::Fixed => "fixed",
        }
    }
}

/// The decoded footer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Footer {
    /// The store's format version (builders write [`VERSION`]).
    pub(crate) version: u32,
    pub(crate) codec: Codec,
    pub(crate) records: u64,
    pub(crate) pool_len: u64,
    pub(crate) dict_len: u64,
    pub(crate) offsets_len: u64,
    pub(crate) max_record: u64,
    pub(crate) raw_bytes: u64,
    pub(crate) pool_crc: u32,
    pub(crate) meta_crc: u32,
    pub(crate) flags: u32,
}

/// The flags of a version 2 store whose records are checksummed in groups
/// of `2^log2`, or not at all.
pub(crate) fn group_flags(group_log2: Option<u32>) -> u32 {
    group_log2.map_or(0, |g| FLAG_GROUP_CRC | (g << GROUP_SHIFT))
}

impl Footer {
    pub(crate) fn encode(&self) -> [u8; FOOTER_BYTES] {
        let mut f = [0u8; FOOTER_BYTES];
        f[0..8].copy_from_slice(&MAGIC);
        f[8..12].copy_from_slice(&self.version.to_le_bytes());
        f[12..16].copy_from_slice(&(self.codec as u32).to_le_bytes());
        for (at, v) in [
            (16, self.records),
            (24, self.pool_len),
            (32, self.dict_len),
            (40, self.offsets_len),
            (48, self.max_record),
            (56, self.raw_bytes),
        ] {
            f[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        f[64..68].copy_from_slice(&self.pool_crc.to_le_bytes());
        f[68..72].copy_from_slice(&self.meta_crc.to_le_bytes());
        f[72..76].copy_from_slice(&self.flags.to_le_bytes());
        let crc = crc32c::crc32c(&f[..76]);
        f[76..80].copy_from_slice(&crc.to_le_bytes());
        f
    }

    /// Decodes and checks the footer at the end of `bytes`.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Footer> {
        let Some(f) = bytes.last_chunk::<FOOTER_BYTES>() else {
            return Err(Error::Truncated {
                what: "footer",
                needed: FOOTER_BYTES as u64,
                available: bytes.len() as u64,
            });
        };
        if f[..8] != MAGIC {
            return Err(Error::BadMagic);
        }
        let stored = le::u32_in(f, 76);
        let computed = crc32c::crc32c(&f[..76]);
        if stored != computed {
            return Err(Error::ChecksumMismatch {
                region: "footer".into(),
                stored,
                computed,
            });
        }
        let version = le::u32_in(f, 8);
        if !(1..=VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion {
                expected: VERSION,
                found: version,
            });
        }
        let at = (bytes.len() - FOOTER_BYTES) as u64;
        let tag = le::u32_in(f, 12);
        let codec = Codec::from_tag(tag)
            .filter(|&c| c != Codec::Fixed || version >= 3)
            .ok_or_else(|| Error::Corrupt {
                offset: at + 12,
                detail: format!("unknown codec {tag}"),
            })?;
        let flags = le::u32_in(f, 72);
        let known = if version == 1 {
            flags & !FLAG_RECORD_CRC == 0
        } else {
            let log2 = flags >> GROUP_SHIFT;
            flags & !(FLAG_GROUP_CRC | (0xff << GROUP_SHIFT)) == 0
                && log2 <= MAX_GROUP_LOG2
                && (log2 == 0 || flags & FLAG_GROUP_CRC != 0)
        };
        if !known {
            return Err(Error::Corrupt {
                offset: at + 72,
                detail: format!("unknown flags {flags:#x} for version {version}"),
            });
        }
        Ok(Footer {
            version,
            codec,
            records: le::u64_in(f, 16),
            pool_len: le::u64_in(f, 24),
            dict_len: le::u64_in(f, 32),
            offsets_len: le::u64_in(f, 40),
            max_record: le::u64_in(f, 48),
            raw_bytes: le::u64_in(f, 56),
            pool_crc: le::u32_in(f, 64),
            meta_crc: le::u32_in(f, 68),
            flags,
        })
    }

    /// The log2 of the group size, when records are checksummed in groups.
    pub(crate) fn group_log2(&self) -> Option<u32> {
        (self.flags & FLAG_GROUP_CRC != 0).then_some(self.flags >> GROUP_SHIFT)
    }

    /// True when every record carries the crc32c of its decoded bytes
    /// (version 1).
    pub(crate) fn record_crc(&self) -> bool {
        self.flags & FLAG_RECORD_CRC != 0
    }
}

/// `n` rounded up to a multiple of 8, or `None` when that overflows (only
/// a crafted footer gets there).
pub(crate) fn pad8(n: u64) -> Option<u64> {
    n.checked_next_multiple_of(8)
}
