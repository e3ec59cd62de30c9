//! The trie file header, checksums and an aligned owned buffer.
//!
//! A trie file is a 64-byte header followed by the body, both little-endian
//! and a whole number of 8-byte words (see `docs/format.md` for every byte):
//!
//! ```text
//! 0   magic "PITHTRIE"            32  body length in bytes (multiple of 8)
//! 8   format version (u32): 1-6   40  crc32c of the body (u32)
//! 12  flags (u32), bit 0: the     44  16 reserved bytes, zero
//!     empty key is present; bit   60  crc32c of header bytes 0..60 (u32)
//!     1 (versions 3, 5): shared
//! 16  number of keys (u64)
//! 24  number of edges (u64)
//! ```

use pith_enc::le;

use crate::error::{Error, Result};

/// The file magic.
pub const MAGIC: [u8; 8] = *b"PITHTRIE";
/// Header size in bytes.
pub(crate) const HEADER_BYTES: usize = 64;

/// Format versions this crate knows. Version numbers are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatVersion {
    /// LOUDS-sparse Patricia trie, symbol-table labels, cycle-shortcut permutation.
    V1 = 1,
    /// Version 1 with shared labels: each distinct label stored once and
    /// referenced from every edge that has it. Written only when that
    /// layout is smaller; otherwise a trie is written as version 1, byte
    /// for byte as before.
    V2 = 2,
    /// Key ids by level: instead of version 1's permutation, each level's
    /// keys' ranks as Elias-Fano lists and the level of every key in key
    /// order as a Huffman-shaped wavelet tree (11-15 bits a key measured,
    /// where the permutation took 19-23). Labels are inline or shared as
    /// header flag bit 1 says.
    V3 = 3,
    /// Dense integer keys: keys of one width of 1 to 8 bytes that, read
    /// as big-endian integers, span at most eight times their count, kept
    /// as the smallest key, the span and (unless every integer in the span
    /// is a key) a bit vector over the span; no LOUDS parts (`dense.rs`).
    /// Written only for such key sets; every other trie is version 5
    /// (or 3).
    V4 = 4,
    /// Version 3 with the inline labels found by blocks of lengths
    /// (`label_blocks.rs`): 6.4 bits a label where version 3's sampled
    /// offsets took 10-12, and one read where they took two. Shared labels
    /// as in version 3 (header flag bit 1). A trie whose label pool is too
    /// large for the blocks (2^34 bytes) is written as version 3.
    V5 = 5,
    /// Version 5 whose blocks-layout labels may each copy the end of one
    /// of the 16 labels before it (`copies.rs`): 12% fewer pool bytes on
    /// Debian keys and package files. Written when the labels are in
    /// blocks and some label is a copy; otherwise a trie is written as
    /// version 5 (or 3, 4). No shared-labels flag.
    V6 = 6,
}

impl FormatVersion {
    /// The newest version this build writes and reads (it reads every
    /// older one too).
    pub const CURRENT: FormatVersion = FormatVersion::V6;
}

pub(crate) const FLAG_ROOT_TERMINAL: u32 = 1;
/// Versions 3 and 5: the labels are in the shared layout (what version
/// 2 means for versions 1 and 2).
pub(crate) const FLAG_SHARED_LABELS: u32 = 2;

/// The parsed header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Header {
    pub(crate) version: FormatVersion,
    pub(crate) flags: u32,
    pub(crate) num_keys: u64,
    pub(crate) num_edges: u64,
    pub(crate) body_crc: u32,
}

/// Writes the header for `body`, computing both checksums (`h.body_crc`
/// is not read).
pub(crate) fn write_header(out: &mut [u8], h: &Header, body: &[u8]) {
    out[0..8].copy_from_slice(&MAGIC);
    out[8..12].copy_from_slice(&(h.version as u32).to_le_bytes());
    out[12..16].copy_from_slice(&h.flags.to_le_bytes());
    out[16..24].copy_from_slice(&h.num_keys.to_le_bytes());
    out[24..32].copy_from_slice(&h.num_edges.to_le_bytes());
    out[32..40].copy_from_slice(&(body.len() as u64).to_le_bytes());
    out[40..44].copy_from_slice(&crc32c::crc32c(body).to_le_bytes());
    out[44..60].fill(0);
    let hcrc = crc32c::crc32c(&out[0..60]);
    out[60..64].copy_from_slice(&hcrc.to_le_bytes());
}

/// Checks magic, version, the header checksum and the body length (all
/// O(1)); returns the header and the body, whose checksum is checked by
/// [`check_body`].
pub(crate) fn read_header(bytes: &[u8]) -> Result<(Header, &[u8])> {
    let Some(h) = bytes.first_chunk::<HEADER_BYTES>() else {
        if bytes.len() >= 8 && bytes[..8] != MAGIC {
            return Err(Error::BadMagic);
        }
        return Err(Error::Truncated {
            what: "header",
            offset: 0,
            needed: HEADER_BYTES,
            available: bytes.len(),
        });
    };
    if h[..8] != MAGIC {
        return Err(Error::BadMagic);
    }
    let stored = le::u32_in(h, 60);
    let computed = crc32c::crc32c(&bytes[..60]);
    if stored != computed {
        return Err(Error::ChecksumMismatch {
            region: "header",
            stored,
            computed,
        });
    }
    let version = le::u32_in(h, 8);
    if !(FormatVersion::V1 as u32..=FormatVersion::CURRENT as u32).contains(&version) {
        return Err(Error::UnsupportedVersion {
            expected: FormatVersion::CURRENT as u32,
            found: version,
        });
    }
    if h[44..60].iter().any(|&b| b != 0) {
        return Err(Error::Corrupt {
            offset: 44,
            detail: "reserved header bytes are not zero".into(),
        });
    }
    let body_len = le::u64_in(h, 32);
    let available = bytes.len() - HEADER_BYTES;
    if body_len > available as u64 || body_len % 8 != 0 {
        return Err(Error::Truncated {
            what: "body",
            offset: HEADER_BYTES,
            needed: usize::try_from(body_len).unwrap_or(usize::MAX),
            available,
        });
    }
    if body_len < available as u64 {
        return Err(Error::Corrupt {
            offset: HEADER_BYTES + body_len as usize,
            detail: format!("{} bytes follow the body", available as u64 - body_len),
        });
    }
    let body = &bytes[HEADER_BYTES..HEADER_BYTES + body_len as usize];
    let h = Header {
        version: match version {
            1 => FormatVersion::V1,
            2 => FormatVersion::V2,
            3 => FormatVersion::V3,
            4 => FormatVersion::V4,
            5 => FormatVersion::V5,
            _ => FormatVersion::V6,
        },
        flags: le::u32_in(h, 12),
        num_keys: le::u64_in(h, 16),
        num_edges: le::u64_in(h, 24),
        body_crc: le::u32_in(h, 40),
    };
    Ok((h, body))
}

/// Checks the body against the header's crc32c (linear in the body: left
/// to [`crate::Trie::validate`], not done at open).
pub(crate) fn check_body(h: &Header, body: &[u8]) -> Result<()> {
    let computed = crc32c::crc32c(body);
    if h.body_crc != computed {
        return Err(Error::ChecksumMismatch {
            region: "body",
            stored: h.body_crc,
            computed,
        });
    }
    Ok(())
}

/// An owned byte buffer aligned to 8 bytes, as [`crate::Trie::open`] requires.
///
/// The builder returns one; use [`AlignedBytes::copy_from`] for bytes read
/// into an ordinary `Vec<u8>`. Memory maps are page-aligned already.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AlignedBytes {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBytes {
    /// Copies `bytes` into a new aligned buffer.
    pub fn copy_from(bytes: &[u8]) -> Self {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
        AlignedBytes {
            words,
            len: bytes.len(),
        }
    }

    pub(crate) fn from_words(words: Vec<u64>) -> Self {
        let len = words.len() * 8;
        AlignedBytes { words, len }
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBytes({} bytes)", self.len)
    }
}

impl AsRef<[u8]> for AlignedBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}
