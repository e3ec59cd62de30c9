//! Regex search: the keys matching a pattern (as a whole-key match), with
//! their values, at one snapshot, in key order, found one at a time.
//!
//! Each segment contributes the matches of a walk of the pattern's DFA
//! through its trie, which skips every subtree no key of which can match
//! (`segment::cursor::SegmentMatches`); each memtable, its visible keys
//! filtered by the pattern (a memtable is in memory and bounded by
//! `Options::memtable_bytes`). The merge is the iterators' (`iter.rs`):
//! per key the newest visible version wins, and deleted keys are hidden,
//! and so are keys expired when the search was made.
//!
//! A search holds `Arc`s of the memtables and segments it was made on, so
//! later writes do not change what it returns. Thread safety: `Send`, not
//! `Sync`.

use std::sync::Arc;

use pith_trie::KeyRegex;

use crate::error::{Error, Result};
use crate::iter::{land, step_past, Direction, MemCursor, Source, VersionCursor};

/// Compiles a search pattern; a bad one is an [`Error::Regex`] holding the
/// regex parser's message, which points at the offending position.
pub(crate) fn compile(pattern: &str) -> Result<Arc<KeyRegex>> {
    match KeyRegex::new(pattern) {
        Ok(re) => Ok(Arc::new(re)),
        Err(pith_trie::Error::Regex(message)) => Err(Error::Regex(message)),
        Err(other) => Err(Error::Regex(other.to_string())),
    }
}

/// A memtable's visible keys that match a pattern, in order.
pub(crate) struct MemMatches {
    cursor: MemCursor,
    re: Arc<KeyRegex>,
}

impl MemMatches {
    /// Positioned on the first match `>= from`.
    pub(crate) fn new(mut cursor: MemCursor, re: Arc<KeyRegex>, from: &[u8]) -> Self {
        cursor.seek(from);
        let mut matches = MemMatches { cursor, re };
        matches.skip_mismatches();
        matches
    }

    fn skip_mismatches(&mut self) {
        while self.cursor.key().is_some_and(|k| !self.re.is_match(k)) {
            self.cursor.next();
        }
    }
}

impl Source for MemMatches {
    fn next(&mut self) {
        self.cursor.next();
        self.skip_mismatches();
    }

    fn key(&self) -> Option<&[u8]> {
        self.cursor.key()
    }

    fn tag(&self) -> u64 {
        self.cursor.tag()
    }

    fn deadline(&self) -> u64 {
        self.cursor.deadline()
    }

    fn value(&self, out: &mut Vec<u8>) -> Result<()> {
        self.cursor.value(out)
    }
}

/// The `(key, value)` pairs whose keys match a pattern, in key order,
/// found lazily: from [`crate::DB::search`] and [`crate::DB::search_at`].
/// Stop early with `.take(n)`; [`Search::keys`] decodes no value.
///
/// Segments are searched by walking the pattern's DFA through their
/// tries, skipping subtrees no key of which can match, not by scanning
/// their keys. A value that cannot be decoded (corruption) is returned as
/// an error once, and ends the search.
///
/// Thread safety: `Send`, not `Sync`.
pub struct Search {
    sources: Vec<Box<dyn Source>>,
    /// The key last returned.
    key: Vec<u8>,
    /// The source holding its visible version.
    current: usize,
    started: bool,
    done: bool,
    /// The time expiry is judged at: when the search was made.
    now: u64,
}

impl Search {
    /// A merge of `sources` that hides the keys expired at `now`.
    pub(crate) fn new(sources: Vec<Box<dyn Source>>, now: u64) -> Self {
        Search {
            now,
            sources,
            key: Vec::new(),
            current: 0,
            started: false,
            done: false,
        }
    }

    /// The matching keys only: no value is decoded.
    pub fn keys(self) -> SearchKeys {
        SearchKeys { search: self }
    }

    /// The next matching key with a visible put, without its value.
    fn next_key(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        if self.started {
            step_past(&mut self.sources, &self.key);
        }
        self.started = true;
        let now = self.now;
        match land(
            &mut self.sources,
            Direction::Forward,
            now,
            &mut self.key,
            |s| s.next(),
        ) {
            Some(b) => {
                self.current = b;
                Some(self.key.clone())
            }
            None => {
                self.done = true;
                None
            }
        }
    }
}

impl Iterator for Search {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let key = self.next_key()?;
        let mut value = Vec::new();
        let decoded = match self.sources.get(self.current) {
            Some(s) => s.value(&mut value),
            None => Err(Error::Internal("search source out of range".into())),
        };
        match decoded {
            Ok(()) => Some(Ok((key, value))),
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for Search {}

/// The keys of a [`Search`], in order, without their values (no value is
/// decoded); from [`Search::keys`]. Finding keys cannot fail; the items
/// are `Result`s like a [`crate::ScanKeys`]'s, so both read alike.
pub struct SearchKeys {
    search: Search,
}

impl Iterator for SearchKeys {
    type Item = Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.search.next_key().map(Ok)
    }
}

impl std::iter::FusedIterator for SearchKeys {}
