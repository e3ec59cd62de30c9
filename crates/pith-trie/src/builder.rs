//! Builds a trie from sorted, unique keys.
//!
//! The builder keeps the keys it is given (one copy of the key bytes plus one
//! `usize` per key), then lays the Patricia trie out breadth-first in a single
//! pass over a FIFO of key ranges: each node is a range `lo..hi` of keys that
//! share a prefix of `depth` bytes; its children are the maximal runs of keys
//! with the same byte at `depth`, and each child's edge label runs to the
//! longest common prefix of its run (path compression). Labels of more than
//! one byte are recorded as `(key, start, end)` triples ([`Tails`]: varints,
//! about 4 bytes each) and encoded at the end, after the label symbol table
//! has been trained.
//!
//! Each key's level (the depth of its terminal) is recorded for the key
//! ids ([`crate::levels`]): levels are popped from the FIFO in order, so a
//! level's first edge and the terminals before it are known as it starts.
//!
//! Memory bound: key bytes (kept in pages of up to 4 MiB that are never
//! reallocated) + 12 bytes per key + about 4 bytes per multi-byte label +
//! about 16 bits per edge + the output; while the labels are encoded, 4
//! bytes per label more (their offsets; the encoded labels go straight
//! into the output, whose room for them is reserved exactly). The keys
//! are freed before the key ids are written. `Vec` growth can double the
//! per-key and per-label arrays while they are filled.

use std::collections::VecDeque;

use pith_enc::prefix::common_len;

use crate::dense::{self, shape, Shape};
use crate::edges::EdgesBuilder;
use crate::error::{Error, Result};
use crate::format::{
    write_header, AlignedBytes, FormatVersion, Header, FLAG_ROOT_TERMINAL, FLAG_SHARED_LABELS,
    HEADER_BYTES,
};
use crate::labels::{write_labels, Copies, Layout};
use crate::levels::write_levels;
use crate::perm::write_perm;

/// The format a build writes: the current one, or one of those written
/// before (tests of their readers only).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Version 6 (or 5 when no label is a copy or the labels are shared;
    /// 4 for dense keys; 3 when the labels are too large for the blocks).
    Current,
    /// Version 6 wherever a label is shorter as a copy, with a table of
    /// no symbols.
    #[cfg(any(test, feature = "fuzzing"))]
    Copies,
    /// Version 5 (or 4 for dense keys; 3 when the labels are too large
    /// for the blocks).
    #[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
    V5,
    /// Version 3 (or 4 for dense keys).
    #[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
    V3,
    /// Versions 1 and 2.
    #[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
    Legacy,
}

/// Accepts keys in strictly increasing byte order and builds a trie.
///
/// ```
/// let mut b = pith_trie::TrieBuilder::new();
/// b.push(b"apple").unwrap();
/// b.push(b"banana").unwrap();
/// assert!(b.push(b"apple").is_err()); // out of order
/// let bytes = b.finish().unwrap();
/// let trie = pith_trie::Trie::open(bytes.as_bytes()).unwrap();
/// assert_eq!(trie.lookup(b"banana"), Some(1));
/// ```
#[derive(Default)]
pub struct TrieBuilder {
    /// Key bytes in pages of `PAGE` bytes (a longer key gets a page of its own).
    pages: Vec<Vec<u8>>,
    /// Per key: its page `<< 32 |` its start within the page. A key ends
    /// where the next one starts, or at its page's end: the keys of a page
    /// lie back to back.
    starts: Vec<u64>,
    /// Some key's length differs from the first key's (then the keys are
    /// not dense integers).
    mixed_widths: bool,
    /// Length of the longest key, which bounds the trie's depth.
    longest: usize,
}

const PAGE: usize = 4 << 20;

impl TrieBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys pushed so far.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// True when no key has been pushed.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    fn key(&self, i: usize) -> &[u8] {
        let at = self.starts[i];
        let page = &self.pages[(at >> 32) as usize];
        let end = match self.starts.get(i + 1) {
            Some(&next) if next >> 32 == at >> 32 => next as u32 as usize,
            _ => page.len(),
        };
        &page[at as u32 as usize..end]
    }

    /// Appends `key`, which must sort strictly after the previous key.
    pub fn push(&mut self, key: &[u8]) -> Result<()> {
        if let Some(last) = self.starts.len().checked_sub(1) {
            match self.key(last).cmp(key) {
                std::cmp::Ordering::Less => {}
                o => {
                    return Err(Error::UnsortedInput {
                        index: self.starts.len() as u64,
                        problem: if o == std::cmp::Ordering::Equal {
                            "equal to"
                        } else {
                            "less than"
                        },
                    })
                }
            }
        }
        let too_large = || Error::TooLarge {
            what: "keys or key bytes",
            limit: u64::from(u32::MAX),
        };
        // A page's offsets are 32 bits.
        u32::try_from(key.len()).map_err(|_| too_large())?;
        let fits = self
            .pages
            .last()
            .is_some_and(|p| p.capacity() - p.len() >= key.len());
        if !fits {
            // Pages grow with the input (64 KiB up to PAGE) so small inputs
            // stay small; full pages are never copied.
            let so_far: usize = self.pages.iter().map(Vec::len).sum();
            self.pages.push(Vec::with_capacity(
                so_far.clamp(64 << 10, PAGE).max(key.len()),
            ));
        }
        let page_no = u32::try_from(self.pages.len() - 1).map_err(|_| too_large())?;
        if self.starts.len() >= u32::MAX as usize - 1 {
            return Err(too_large());
        }
        if !self.starts.is_empty() && key.len() != self.key(0).len() {
            self.mixed_widths = true;
        }
        self.longest = self.longest.max(key.len());
        let page = self.pages.last_mut().ok_or_else(too_large)?;
        let start = page.len() as u64;
        page.extend_from_slice(key);
        self.starts.push(u64::from(page_no) << 32 | start);
        Ok(())
    }

    /// Whether [`TrieBuilder::finish`] will write the keys pushed so far as
    /// dense integer keys (format version 4: keys of one width up to 8
    /// bytes spanning at most 8 times their count as big-endian integers),
    /// whose lookups need no filter in front of them. Constant time.
    pub fn is_dense(&self) -> bool {
        self.dense_shape().is_some()
    }

    fn dense_shape(&self) -> Option<Shape> {
        let last = self.starts.len().checked_sub(1)?;
        shape(
            self.key(0),
            self.key(last),
            self.starts.len() as u64,
            !self.mixed_widths,
        )
    }

    /// Builds the trie and returns its serialized, checksummed bytes.
    pub fn finish(self) -> Result<AlignedBytes> {
        self.finish_as(Target::Current)
    }

    /// Builds the trie as written before format version 3 (version 1, or
    /// 2 when the labels are shared), for tests of the readers of those
    /// files.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn finish_legacy(self) -> Result<AlignedBytes> {
        self.finish_as(Target::Legacy)
    }

    /// Builds the trie as written before format version 5 (version 3, or
    /// 4 for dense keys), for tests of the readers of those files.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn finish_v3(self) -> Result<AlignedBytes> {
        self.finish_as(Target::V3)
    }

    /// Builds the trie with every label that is shorter as a copy written
    /// as one (version 6 if any is), coded by a table of no symbols (every
    /// byte escaped): small tries with copies, for golden bytes and tests.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn finish_with_copies(self) -> Result<AlignedBytes> {
        self.finish_as(Target::Copies)
    }

    /// Builds the trie as written before format version 6 (version 5, or
    /// 3 or 4 as [`TrieBuilder::finish`] would), for tests of the readers
    /// of those files.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn finish_v5(self) -> Result<AlignedBytes> {
        self.finish_as(Target::V5)
    }

    /// Builds the trie: dense integer keys (version 4) when they are, or
    /// else a LOUDS trie, its key ids as a permutation (versions 1 and 2,
    /// [`Target::Legacy`]) or by level (versions 3, 5 and 6).
    fn finish_as(mut self, target: Target) -> Result<AlignedBytes> {
        let legacy = target == Target::Legacy;
        // No key comes after these: the last page's room for more (up to
        // half the key bytes: pages grow by doubling) and the starts'
        // go back.
        if let Some(page) = self.pages.last_mut() {
            page.shrink_to_fit();
        }
        self.starts.shrink_to_fit();
        let n = self.starts.len();
        if let Some(shape) = self.dense_shape().filter(|_| !legacy) {
            let mut words: Vec<u64> = vec![0; HEADER_BYTES / 8];
            dense::write(&mut words, shape, (0..n).map(|i| self.key(i)), n as u64);
            let header = Header {
                version: FormatVersion::V4,
                flags: 0,
                num_keys: n as u64,
                num_edges: 0,
                body_crc: 0, // computed by write_header
            };
            return Ok(with_header(words, &header));
        }
        let mut edges = EdgesBuilder::default();
        let mut tails = Tails::default();
        // Per key other than the empty one, in key order: its level.
        let root_terminal = n > 0 && self.key(0).is_empty();
        let rt = usize::from(root_terminal);
        let mut levels = KeyLevels::new(n - rt, self.longest);
        // Per level: its first edge and the TERM edges before it.
        let (mut edge_start, mut term_start) = (Vec::new(), Vec::new());
        let mut terminals = 0u64;
        // Legacy versions only: key index per terminal, breadth-first.
        let mut pi: Vec<u64> = Vec::new();
        if legacy && root_terminal {
            pi.push(0);
        }
        let mut queue: VecDeque<(usize, usize, usize, u32)> = VecDeque::new();
        if n > 0 {
            queue.push_back((0, n, 0, 1));
        }
        while let Some((lo, hi, depth, level)) = queue.pop_front() {
            let mut i = lo;
            if self.key(i).len() == depth {
                i += 1; // this node's own key; recorded with its edge
            }
            let mut first_child = true;
            while i < hi {
                let c = self.key(i)[depth];
                let j = self.run_end(i + 1, hi, depth, c);
                let (end, child) = if j - i == 1 {
                    (self.key(i).len(), false)
                } else {
                    (
                        depth + common_len(&self.key(i)[depth..], &self.key(j - 1)[depth..]),
                        true,
                    )
                };
                let terminal = self.key(i).len() == end;
                if level as usize > edge_start.len() {
                    edge_start.push(edges.len() as u64);
                    term_start.push(terminals);
                }
                edges.push(c, [first_child, child, terminal, end - depth > 1]);
                if end - depth > 1 {
                    tails.push(i, depth + 1, end);
                }
                if terminal {
                    levels.set(i - rt, level);
                    terminals += 1;
                    if legacy {
                        pi.push(i as u64);
                    }
                }
                if child {
                    let deeper = level.checked_add(1).ok_or(Error::TooLarge {
                        what: "trie depth",
                        limit: u64::from(u32::MAX),
                    })?;
                    queue.push_back((i, j, end, deeper));
                }
                i = j;
                first_child = false;
            }
        }
        // What the walk and the edges no longer need goes before the
        // labels are encoded, the builder's peak (the queue keeps the
        // capacity of its widest level).
        drop(queue);
        // Grown by doubling, it may hold as much again unused through the
        // labels' encoding, the builder's peak.
        tails.bytes.shrink_to_fit();
        let num_edges = edges.len();
        // The header is filled in last, over the first words.
        let mut words: Vec<u64> = vec![0; HEADER_BYTES / 8];
        edges.write(&mut words)?;
        drop(edges);
        let labels = tails.iter().map(|(k, s, e)| &self.key(k)[s..e]);
        let (blocks, copies) = match target {
            Target::Current => (true, Copies::WherePaying),
            #[cfg(any(test, feature = "fuzzing"))]
            Target::Copies => (true, Copies::Always),
            Target::V5 => (true, Copies::Never),
            Target::V3 | Target::Legacy => (false, Copies::Never),
        };
        let layout = write_labels(&mut words, labels, blocks, copies)?;
        drop(tails);
        // The key ids need only the levels: the keys go before they are
        // written (the output may double its capacity then).
        drop(self);
        edge_start.push(num_edges as u64);
        term_start.push(terminals);
        let mut flags = 0;
        if root_terminal {
            flags |= FLAG_ROOT_TERMINAL;
        }
        let version = if legacy {
            write_perm(&mut words, &pi);
            match layout {
                Layout::Shared => FormatVersion::V2,
                Layout::Inline | Layout::Blocks | Layout::Copies => FormatVersion::V1,
            }
        } else {
            levels.write(&mut words, &edge_start, &term_start);
            match layout {
                Layout::Shared => {
                    flags |= FLAG_SHARED_LABELS;
                    if target == Target::V3 {
                        FormatVersion::V3
                    } else {
                        FormatVersion::V5
                    }
                }
                Layout::Blocks => FormatVersion::V5,
                Layout::Copies => FormatVersion::V6,
                // Written before version 5, or pools too large for the
                // blocks.
                Layout::Inline => FormatVersion::V3,
            }
        };
        let header = Header {
            version,
            flags,
            num_keys: n as u64,
            num_edges: num_edges as u64,
            body_crc: 0, // computed by write_header
        };
        Ok(with_header(words, &header))
    }

    /// End of the run of keys from `from` (all longer than `depth`, in
    /// `from..hi`) whose byte at `depth` is `c`.
    fn run_end(&self, from: usize, hi: usize, depth: usize, c: u8) -> usize {
        let is_c = |x: usize| self.key(x)[depth] == c;
        // Runs are usually short: gallop, then binary search.
        let (mut lo, mut up, mut step) = (from, hi, 1);
        loop {
            let p = lo + step - 1;
            if p >= hi {
                break;
            }
            if is_c(p) {
                lo = p + 1;
                step *= 2;
            } else {
                up = p;
                break;
            }
        }
        while lo < up {
            let mid = lo + (up - lo) / 2;
            if is_c(mid) {
                lo = mid + 1;
            } else {
                up = mid;
            }
        }
        lo
    }
}

/// Each key's level (the depth of its terminal, at most its length), in
/// the narrowest integer the longest key allows: a byte for keys of up to
/// 255 bytes, where a `u32` per key was a twentieth of the builder's peak
/// on small key sets.
enum KeyLevels {
    Byte(Vec<u8>),
    Short(Vec<u16>),
    Word(Vec<u32>),
}

impl KeyLevels {
    fn new(keys: usize, longest: usize) -> Self {
        if longest <= usize::from(u8::MAX) {
            KeyLevels::Byte(vec![0; keys])
        } else if longest <= usize::from(u16::MAX) {
            KeyLevels::Short(vec![0; keys])
        } else {
            KeyLevels::Word(vec![0; keys])
        }
    }

    /// Sets key `i`'s level, which `new`'s `longest` bounds.
    fn set(&mut self, i: usize, level: u32) {
        match self {
            KeyLevels::Byte(v) => v[i] = level as u8,
            KeyLevels::Short(v) => v[i] = level as u16,
            KeyLevels::Word(v) => v[i] = level,
        }
    }

    fn write(&self, out: &mut Vec<u64>, edge_start: &[u64], term_start: &[u64]) {
        match self {
            KeyLevels::Byte(v) => write_levels(out, v, edge_start, term_start),
            KeyLevels::Short(v) => write_levels(out, v, edge_start, term_start),
            KeyLevels::Word(v) => write_levels(out, v, edge_start, term_start),
        }
    }
}

/// The multi-byte labels of the walk, in edge order, each as the key it is
/// taken from, its start and its end: per label the key as a zigzag varint
/// difference from the previous label's key (small: within a level the
/// labels' keys increase), the start and the length as varints. About 4
/// bytes a label where three `u32`s took 12, which were the largest array
/// at the builder's peak after the keys (Debian package keys).
#[derive(Default)]
struct Tails {
    bytes: Vec<u8>,
    count: usize,
    last_key: usize,
}

impl Tails {
    fn push(&mut self, key: usize, start: usize, end: usize) {
        let delta = key as i64 - self.last_key as i64;
        pith_enc::varint::put(&mut self.bytes, ((delta << 1) ^ (delta >> 63)) as u64);
        pith_enc::varint::put(&mut self.bytes, start as u64);
        pith_enc::varint::put(&mut self.bytes, (end - start) as u64);
        self.last_key = key;
        self.count += 1;
    }

    fn iter(&self) -> TailIter<'_> {
        TailIter {
            rest: &self.bytes,
            left: self.count,
            key: 0,
        }
    }
}

/// The labels of a [`Tails`] as `(key, start, end)`.
#[derive(Clone)]
struct TailIter<'t> {
    rest: &'t [u8],
    left: usize,
    key: usize,
}

impl Iterator for TailIter<'_> {
    type Item = (usize, usize, usize);

    fn next(&mut self) -> Option<Self::Item> {
        self.left = self.left.checked_sub(1)?;
        // Whole varints: `push` wrote them.
        let mut take = || {
            let (v, rest) = pith_enc::varint::get(self.rest)?;
            self.rest = rest;
            Some(v)
        };
        let zigzag = take()?;
        let (start, len) = (take()? as usize, take()? as usize);
        let delta = (zigzag >> 1) as i64 ^ -((zigzag & 1) as i64);
        self.key = (self.key as i64 + delta) as usize;
        Some((self.key, start, start + len))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for TailIter<'_> {}

/// `words` (a header's room, then the body) with `header` written over
/// the first words, its spare capacity released.
fn with_header(mut words: Vec<u64>, header: &Header) -> AlignedBytes {
    words.shrink_to_fit();
    let (head, rest) = bytemuck::cast_slice_mut::<u64, u8>(&mut words).split_at_mut(HEADER_BYTES);
    write_header(head, header, rest);
    AlignedBytes::from_words(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_give_back_what_was_pushed() {
        // Keys jump back at each level; starts and lengths need several
        // varint bytes.
        let pushed = [
            (5, 1, 3),
            (900, 1, 2),
            (70_000, 1, 300),
            (2, 2, 5),
            (0, 40_000, 40_002),
            (u32::MAX as usize - 1, 3, 70_000),
        ];
        let mut tails = Tails::default();
        for &(k, s, e) in &pushed {
            tails.push(k, s, e);
        }
        let mut iter = tails.iter();
        assert_eq!(iter.len(), pushed.len());
        assert_eq!(iter.clone().collect::<Vec<_>>(), pushed);
        assert_eq!(iter.nth(2), Some(pushed[2]));
    }

    /// Levels are kept in bytes, 16 or 32 bits by the longest key; each
    /// width builds a trie that answers.
    #[test]
    fn every_level_width_builds() {
        for longest in [200, 300, 70_000] {
            // A chain of prefixes: key `a` x n ends at level n, past a
            // byte's range where the keys allow it.
            let mut keys: Vec<Vec<u8>> = (1..=longest.min(400)).map(|n| vec![b'a'; n]).collect();
            keys.push(b"b".to_vec());
            keys.push(vec![b'c'; longest]);
            let mut b = TrieBuilder::new();
            for k in &keys {
                b.push(k).unwrap();
            }
            let bytes = b.finish().unwrap();
            let trie = crate::Trie::open_validated(bytes.as_bytes()).unwrap();
            for (id, k) in keys.iter().enumerate() {
                assert_eq!(trie.lookup(k), Some(id as u64), "longest {longest}");
                assert_eq!(trie.key(id as u64).as_ref(), Some(k));
            }
        }
    }
}
