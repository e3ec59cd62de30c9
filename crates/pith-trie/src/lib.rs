//! `pith-trie`: a static succinct trie mapping byte-string keys to dense ids.
//!
//! Built once from sorted, unique keys, a [`Trie`] answers, without
//! decompressing anything:
//!
//! * [`Trie::lookup`]: key -> id, where the id is the key's rank in sorted
//!   order (`0..len()`), and [`Trie::key`]: id -> key, so a store keyed by id
//!   need not keep the keys a second time;
//! * [`Trie::lower_bound`] (seek) and a [`Cursor`] that moves both ways;
//! * [`Trie::prefix_range`] and [`Trie::range`] as id ranges;
//! * [`Trie::regex_search`]: a DFA walked through the trie, pruning dead
//!   subtrees instead of scanning keys ([`Trie::regex_walk`]: the same
//!   walk, one match at a time).
//!
//! It opens zero-copy from bytes (an mmapped file) in constant time:
//! [`Trie::open`] checks the magic, version, header checksum and section
//! bounds, and [`Trie::validate`] (run by `verify`, or use
//! [`Trie::open_validated`]) the body checksum and every structural
//! invariant. Bad bytes get a typed [`Error`], never a panic, and queries on
//! bytes that opened but were not validated stay in bounds and end (the
//! trust model is in the `trie` module's docs).
//!
//! # Design, and why
//!
//! A Patricia trie (runs of single-child nodes collapsed into one edge) in
//! LOUDS-sparse order, as in Fast Succinct Tries (SuRF): per edge, one byte of
//! label and four flag bits, interleaved 64 edges to a block with their rank
//! counters so one step of a lookup touches two adjacent cache lines. Rank
//! and select are our own (no crate reads its structures in place from a
//! borrowed, checksummed buffer), with runtime POPCNT dispatch. The rest of each multi-byte label is compressed with a
//! static FSST-style symbol table rather than nested into a second trie as
//! marisa-trie and Terark's NLT do: nesting shares suffixes, but costs a
//! `log2(labels)`-bit link per label and a pointer chase per label on every
//! lookup and every id -> key, which is what made TerarkDB run shallower
//! nesting for speed. A symbol table decodes one label alone, in a handful of
//! table loads, and compares against a query without materializing it.
//! Where each label lies in the pool is kept as blocks of 5-bit lengths
//! with a base per 30 labels (format version 5, `label_blocks.rs`): 6.4
//! bits a label and one read, where offsets took about 11 bits and two.
//! The suffix sharing that nesting would buy comes mostly from neighbours
//! (a source's packages share a version, sibling directories their
//! files), so a label may instead copy the end of one of the 16 labels
//! before it, for two bytes (format version 6, `copies.rs`): 12% fewer
//! pool bytes on Debian keys, and one more label read only where a label
//! is a copy.
//!
//! Ids are key ranks from the start (TerarkDB's breadth-first ids were not,
//! and its value store had to be rewritten after the index was built):
//! breadth-first terminal order is mapped to key order through the one
//! thing that map depends on, the level of each key (a level's terminals
//! are already in key order): per level an Elias-Fano list of its keys'
//! ranks, and the level sequence as a Huffman-shaped wavelet tree for the
//! way back: 11-15 bits a key measured (Debian keys, file paths) where a
//! stored permutation took 19-23. The top two levels, where nodes are
//! widest, get byte-indexed tables built at open (in memory
//! only), the role SuRF gives its LOUDS-dense levels, and every internal
//! node's first edge is kept in memory too (16 bits a node, one pass over
//! the LOUDS flags at open, for tries of up to 2^21 nodes), which spares
//! each step down a level the select that LOUDS-sparse order otherwise
//! needs: a fifth to a quarter of a lookup's time, measured.
//!
//! Keys that are integers close together (all of one width up to 8 bytes,
//! spanning at most eight times their count as big-endian numbers: a
//! table's primary keys) need no trie at all: the builder writes them as
//! the smallest key, the span and, unless every integer in it is a key, a
//! bit vector over it (format version 4, `dense.rs`), where key -> id is a
//! subtraction and a rank, as TerarkDB's integer indexes did beside its
//! tries. Every query above works on both.
//!
//! # Example
//!
//! ```
//! use pith_trie::{KeyRegex, Trie, TrieBuilder};
//!
//! let mut builder = TrieBuilder::new();
//! for key in ["apple", "apricot", "banana", "blueberry", "cherry"] {
//!     builder.push(key.as_bytes())?;
//! }
//! let bytes = builder.finish()?; // write these to a file, mmap them later
//! let trie = Trie::open(bytes.as_bytes())?;
//!
//! assert_eq!(trie.lookup(b"banana"), Some(2));
//! assert_eq!(trie.key(3).as_deref(), Some(&b"blueberry"[..]));
//! assert_eq!(trie.lower_bound(b"b"), 2);
//! assert_eq!(trie.prefix_range(b"ap"), 0..2);
//! let re = KeyRegex::new("b.*y")?;
//! let mut found = Vec::new();
//! trie.regex_search(&re, |id, _key| { found.push(id); true });
//! assert_eq!(found, vec![3]);
//! # Ok::<(), pith_trie::Error>(())
//! ```
//!
//! # Thread safety
//!
//! [`Trie`] is an immutable view and is `Send + Sync`; [`Cursor`] is per thread.

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

#[cfg(target_endian = "big")]
compile_error!(
    "pith-trie reads its little-endian format in place and supports little-endian targets only"
);

mod bitvec;
mod builder;
mod copies;
mod cpu;
mod cursor;
mod dense;
mod edges;
mod error;
mod format;
mod ids;
// The fuzz entry points are not API: built for this crate's tests, and for
// the cargo-fuzz targets (`fuzz/`) with the `fuzzing` feature.
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
mod label_blocks;
mod labels;
mod levels;
mod nodes;
mod perm;
mod regex;
mod symbols;
mod trie;
mod words;

pub use builder::TrieBuilder;
pub use cursor::{Cursor, Keys};
pub use error::{Error, Result};
pub use format::{AlignedBytes, FormatVersion, MAGIC};
pub use regex::{KeyRegex, RegexStats, RegexWalk};
pub use trie::{SizeReport, Trie};

/// Builds a trie from keys in strictly increasing order.
pub fn build<I, K>(keys: I) -> Result<AlignedBytes>
where
    I: IntoIterator<Item = K>,
    K: AsRef<[u8]>,
{
    let mut b = TrieBuilder::new();
    for k in keys {
        b.push(k.as_ref())?;
    }
    b.finish()
}

#[cfg(test)]
mod tests;
