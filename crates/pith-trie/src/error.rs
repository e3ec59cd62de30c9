//! The one error type of `pith-trie`.
//!
//! Every failure to open bytes as a trie, and every rejected builder input,
//! is a variant here with the facts needed to act on it. Queries on an opened
//! trie cannot fail: they stay in bounds and end on any bytes that opened,
//! and give right answers once [`crate::Trie::validate`] has accepted the
//! structure (see the trust model in the `trie` module).

use thiserror::Error;

/// Errors from building or opening a trie.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The bytes do not start with the trie magic `PITHTRIE`.
    #[error("not a pith trie: bad magic (expected \"PITHTRIE\")")]
    BadMagic,
    /// The format version is not one this build reads.
    #[error("unsupported trie format version {found} (this build reads versions 1 to {expected}); upgrade pith-trie")]
    UnsupportedVersion {
        /// Newest version this build reads.
        expected: u32,
        /// Version found in the header.
        found: u32,
    },
    /// A stored checksum does not match the bytes it covers.
    #[error("trie checksum mismatch in {region}: stored {stored:#010x}, computed {computed:#010x}; the bytes are corrupt")]
    ChecksumMismatch {
        /// Which checksummed region failed (`header` or `body`).
        region: &'static str,
        /// Checksum stored in the file.
        stored: u32,
        /// Checksum computed over the bytes.
        computed: u32,
    },
    /// The bytes are shorter than the header says, or a section runs past the end.
    #[error("trie truncated: {what} needs {needed} bytes at offset {offset}, only {available} available")]
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Byte offset where it starts.
        offset: usize,
        /// Bytes it needs.
        needed: usize,
        /// Bytes that remain.
        available: usize,
    },
    /// The buffer is not 8-byte aligned; copy it with [`crate::AlignedBytes::copy_from`].
    #[error("trie bytes must be 8-byte aligned (as from mmap or AlignedBytes); copy them with AlignedBytes::copy_from")]
    Misaligned,
    /// A structural invariant does not hold although the checksums matched.
    #[error("trie corrupt at byte {offset}: {detail}")]
    Corrupt {
        /// Byte offset of the structure that failed validation.
        offset: usize,
        /// What was wrong.
        detail: String,
    },
    /// Builder input was not strictly increasing.
    #[error("keys must be pushed in strictly increasing order: key #{index} is {problem} its predecessor")]
    UnsortedInput {
        /// Zero-based position of the offending key.
        index: u64,
        /// `"equal to"` or `"less than"`.
        problem: &'static str,
    },
    /// The input is beyond what the format can address.
    #[error("too many {what} for one trie (at most {limit}); split the keys into several tries")]
    TooLarge {
        /// What overflowed.
        what: &'static str,
        /// The largest supported count.
        limit: u64,
    },
    /// The regular expression did not compile to a DFA.
    #[error("regex error: {0}")]
    Regex(String),
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
