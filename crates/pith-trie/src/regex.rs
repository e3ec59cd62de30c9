//! Regex search: run a DFA over the trie, pruning every subtree whose prefix
//! already drives the DFA into its dead state.
//!
//! A pattern must match a whole key (it is compiled anchored, as
//! `\A(?:pattern)\z`, with `regex::bytes` syntax: Unicode classes on, and
//! keys need not be UTF-8). The walk is a depth-first traversal in key order
//! that feeds each edge label to the DFA once; a subtree is skipped as soon
//! as its prefix reaches the dead state, so a selective pattern touches only
//! the edges on the paths of its matches and their rejected neighbours.
//! [`RegexStats::visited_edges`] counts what was touched.
//!
//! A label is fed as it is stored, a symbol-table code at a time: the
//! DFA's step over a code's bytes is remembered per (state, code) as the
//! walk meets them ([`CodeSteps`]), and a key is spelled out (its labels
//! decoded) only when it matches. Decoding every label into the key and
//! feeding it a byte at a time made a broad pattern's walk slower than
//! matching every key held in memory.
//!
//! Below a prefix that drives the DFA into a *universal* state, one that
//! matches at the end and that every byte leads back to (after `user:` in
//! the byte-mode `(?s-u)user:.*` that a Redis glob `user:*` becomes),
//! every key matches, and the walk stops feeding labels to the DFA
//! ([`Universal`]). And wherever a match follows the last one with no key
//! passed over between them (every key below such a prefix, or a run of
//! keys that all match), its id is the last one's plus one, not looked up
//! ([`RegexWalk::next_match`]). States that only some bytes lead back to
//! (every ASCII byte, in Unicode mode) are fed as any other: the walk's
//! remembered step per code ([`CodeSteps`]) keeps them in one table read a
//! code. Checking each code against the byte set instead (0b7a109) was
//! about 5% faster on `(?s).*` over Debian keys (6.24 against 6.57 ms, the
//! fastest of 15 walks) for a second walk over every label's codes; it was
//! taken out again.

use std::borrow::Borrow;

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::{primitives::StateID, start, syntax};
use regex_automata::{Anchored, MatchKind};

use crate::edges::TERM;
use crate::error::{Error, Result};
use crate::symbols::{Code, LabelCmp, Mode, Symbols, ESCAPE};
use crate::trie::Trie;

/// Largest DFA a pattern may compile to.
const DFA_SIZE_LIMIT: usize = 64 << 20;

/// A compiled full-key pattern, reusable across tries.
#[derive(Clone, Debug)]
pub struct KeyRegex {
    dfa: dense::DFA<Vec<u32>>,
    start: StateID,
}

impl KeyRegex {
    /// Compiles `pattern` to match whole keys. A pattern that does not
    /// parse is an [`Error::Regex`] carrying the parser's message, which
    /// points at the offending position in `pattern`.
    pub fn new(pattern: &str) -> Result<Self> {
        let syntax = syntax::Config::new().utf8(false);
        // Parsed alone first, so a syntax error names positions in the
        // caller's pattern rather than in the anchored wrapper below (and
        // says what is wrong: the DFA builder's own message is only
        // "error building NFA").
        syntax::parse_with(pattern, &syntax).map_err(|e| Error::Regex(e.to_string()))?;
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .match_kind(MatchKind::All)
                    .start_kind(StartKind::Anchored)
                    .dfa_size_limit(Some(DFA_SIZE_LIMIT))
                    .determinize_size_limit(Some(DFA_SIZE_LIMIT)),
            )
            .syntax(syntax)
            .thompson(thompson::Config::new().utf8(false))
            .build(&format!(r"(?:{pattern})\z"))
            .map_err(|e| regex_error(&e))?;
        let start = dfa
            .start_state(&start::Config::new().anchored(Anchored::Yes))
            .map_err(|e| regex_error(&e))?;
        Ok(KeyRegex { dfa, start })
    }

    fn is_match_at_end(&self, s: StateID) -> bool {
        self.dfa.is_match_state(self.dfa.next_eoi_state(s))
    }

    /// The state after `bytes`, or `None` once dead. The dead and quit
    /// states absorb every byte, so they are checked once after the label
    /// rather than after each byte (labels are short; a branch per byte
    /// cost more than the few bytes fed past a death).
    fn feed(&self, s: StateID, bytes: &[u8]) -> Option<StateID> {
        self.alive(self.advance(s, bytes))
    }

    /// The state after `bytes` from `s`, dead or not.
    fn advance(&self, mut s: StateID, bytes: &[u8]) -> StateID {
        for &b in bytes {
            s = self.dfa.next_state(s, b);
        }
        s
    }

    /// `s`, unless it is the dead or the quit state.
    fn alive(&self, s: StateID) -> Option<StateID> {
        (!self.dfa.is_dead_state(s) && !self.dfa.is_quit_state(s)).then_some(s)
    }

    /// True if every key that starts with a prefix leading to `s`
    /// matches: `s` matches at the end and every byte leads back to it.
    fn is_universal(&self, s: StateID) -> bool {
        self.is_match_at_end(s) && (0..=255u8).all(|b| self.dfa.next_state(s, b) == s)
    }

    /// True if the pattern matches all of `key`.
    pub fn is_match(&self, key: &[u8]) -> bool {
        self.feed(self.start, key)
            .is_some_and(|s| self.is_match_at_end(s))
    }
}

/// An [`Error::Regex`] with `e`'s message and those of its causes (a
/// build error's own message does not say what went wrong: a pattern too
/// large for the DFA size limit says so in its cause).
fn regex_error(e: &dyn std::error::Error) -> Error {
    let mut message = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        message.push_str(": ");
        message.push_str(&c.to_string());
        cause = c.source();
    }
    Error::Regex(message)
}

/// Work done by a regex search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegexStats {
    /// Edges (trie nodes other than the root) whose labels were fed to the
    /// DFA; on dense integer keys (format version 4), the bytes of the
    /// implicit tree of their bytes fed to it.
    pub visited_edges: u64,
    /// Keys that matched.
    pub matches: u64,
}

struct Frame<'a> {
    next: usize,
    end: usize,
    state: StateID,
    /// Length of the key above this frame's edges; valid only for the
    /// frames [`RegexWalk`] has spelled (`decoded`).
    key_len: usize,
    /// The label of the edge whose child node's edges these are: its
    /// first byte and its encoded rest (spelled when a match below it
    /// needs its key).
    label: (u8, Code<'a>),
    /// The last child node entered from this frame and the end of its
    /// edges: the next internal sibling's children start there, which
    /// spares a select when siblings are entered in turn.
    last_child: (usize, usize),
    /// The level of the frame's edges (root children: 1), which spares
    /// the id of a match a search of the level bounds.
    level: usize,
}

/// The DFA's step over each symbol-table code, per (state, code), filled
/// as a walk meets them: a label is then fed a code at a time (about two
/// bytes each on Debian keys) with one table read, where each byte cost
/// two. The states of a pattern's DFA are few for the patterns a trie is
/// searched with; past [`MEMO_STATES`] of them codes are fed byte by byte,
/// so a large DFA does not cost a large table.
#[derive(Default)]
struct CodeSteps {
    /// `steps[(state index << 8) | code]`: the state after the code's
    /// symbol, as a `StateID`'s `u32`, or [`UNKNOWN`].
    steps: Vec<u32>,
}

/// States whose code steps are remembered (1 MiB of steps).
const MEMO_STATES: usize = 1024;
const UNKNOWN: u32 = u32::MAX;

impl CodeSteps {
    /// The state after a label (its first byte and its encoded rest) from
    /// `s`, unless dead.
    #[inline]
    fn feed_label(
        &mut self,
        trie: &Trie<'_>,
        re: &KeyRegex,
        (first, code): (u8, Code<'_>),
        s: StateID,
    ) -> Option<StateID> {
        let s = re.dfa.next_state(s, first);
        let symbols = trie.labels.symbols();
        if symbols.mode() == Mode::Raw {
            // No copies without a table.
            return re.feed(s, code.own);
        }
        let mut s = self.feed_codes(re, &symbols, code.own, s);
        if !code.copied.is_empty() {
            let (partial, rest) = symbols.skip(code.copied, code.skip);
            s = feed_symbol(re, s, partial);
            s = self.feed_codes(re, &symbols, rest, s);
        }
        re.alive(s)
    }

    /// The state after the symbols of `code` from `s`.
    #[inline]
    fn feed_codes(
        &mut self,
        re: &KeyRegex,
        symbols: &Symbols<'_>,
        code: &[u8],
        mut s: StateID,
    ) -> StateID {
        let mut i = 0;
        while let Some(&c) = code.get(i) {
            if c == ESCAPE {
                if let Some(&b) = code.get(i + 1) {
                    s = re.dfa.next_state(s, b);
                }
                i += 2;
            } else {
                s = self.step(re, symbols, s, c);
                i += 1;
            }
        }
        s
    }

    /// The state after code `c`'s symbol from `s`.
    #[inline]
    fn step(&mut self, re: &KeyRegex, symbols: &Symbols<'_>, s: StateID, c: u8) -> StateID {
        let index = s.as_usize() >> re.dfa.stride2();
        if index >= MEMO_STATES {
            return feed_symbol(re, s, symbols.symbol(c));
        }
        let slot = index << 8 | usize::from(c);
        if slot >= self.steps.len() {
            let states = (2 * (index + 1)).min(MEMO_STATES);
            self.steps.resize(states << 8, UNKNOWN);
        }
        match self.steps[slot] {
            // A state id the DFA gave for this slot.
            UNKNOWN => {
                let next = feed_symbol(re, s, symbols.symbol(c));
                self.steps[slot] = next.as_u32();
                next
            }
            known => StateID::new_unchecked(known as usize),
        }
    }
}

/// Which states are universal (see [`KeyRegex::is_universal`]), per state
/// index, as the walk meets them; states past [`MEMO_STATES`] count as not
/// universal (the check reads 256 transitions).
#[derive(Default)]
struct Universal {
    known: Vec<Option<bool>>,
}

impl Universal {
    #[inline]
    fn check(&mut self, re: &KeyRegex, s: StateID) -> bool {
        let index = s.as_usize() >> re.dfa.stride2();
        if index >= MEMO_STATES {
            return false;
        }
        if index >= self.known.len() {
            self.known.resize((2 * (index + 1)).min(MEMO_STATES), None);
        }
        *self.known[index].get_or_insert_with(|| re.is_universal(s))
    }
}

/// The state after the `len` bytes of `sym` (little-endian) from `s`.
fn feed_symbol(re: &KeyRegex, s: StateID, (sym, len): (u64, usize)) -> StateID {
    re.advance(s, &sym.to_le_bytes()[..len])
}

/// The keys of a trie matching a [`KeyRegex`], found one at a time in key
/// order by the same pruned depth-first walk as [`Trie::regex_search`];
/// from [`Trie::regex_walk`]. `R` is how the walk holds its pattern (a
/// `&KeyRegex`, or an `Arc<KeyRegex>` shared by walks over several tries).
pub struct RegexWalk<'t, 'a, R> {
    trie: &'t Trie<'a>,
    re: R,
    /// The root's (empty) key is still to be offered.
    root_pending: bool,
    stack: Vec<Frame<'a>>,
    /// The frames `stack[..decoded]` have their `key_len`, and `key`
    /// starts with the key above the last of them.
    decoded: usize,
    key: Vec<u8>,
    steps: CodeSteps,
    universal: Universal,
    /// The id after the last match's, while no key after that match has
    /// been passed over (rejected, or in a pruned subtree): the next match
    /// then has this id, as the walk meets keys in key order.
    next_id: Option<u64>,
    stats: RegexStats,
    /// Dense integer keys (format version 4): the walk goes down the
    /// implicit tree of their bytes, one byte a level, skipping subtrees
    /// the DFA rejects and those holding no key.
    dense: Vec<DenseFrame>,
    /// The smallest integer the dense walk offers (the first key, or the
    /// first at or after the `from` of [`Trie::regex_walk_from`]).
    dense_lo: u64,
}

/// A node of the dense walk: the integers whose first `depth` bytes spell
/// `prefix`, their next byte still to try from `next` to `end` (exclusive),
/// with the DFA in `state` after the prefix.
struct DenseFrame {
    prefix: u64,
    depth: usize,
    next: u16,
    end: u16,
    state: StateID,
}

impl DenseFrame {
    /// The node `prefix` of `depth` bytes, its child bytes limited to
    /// those leading to integers in `lo..=hi` (which lie below it).
    fn new(prefix: u64, depth: usize, width: usize, lo: u64, hi: u64, state: StateID) -> Self {
        let shift = 8 * (width - depth - 1);
        let byte = |v: u64| ((v >> shift) & 0xFF) as u16;
        DenseFrame {
            prefix,
            depth,
            next: byte(lo),
            end: byte(hi) + 1,
            state,
        }
    }
}

impl<'a> Trie<'a> {
    /// A walk over the keys matching `re`, in key order: call
    /// [`RegexWalk::next_match`] for each.
    pub fn regex_walk<R: Borrow<KeyRegex>>(&self, re: R) -> RegexWalk<'_, 'a, R> {
        let mut stack = Vec::new();
        if self.edges.len() != 0 {
            let (s, t) = self.children(0);
            stack.push(Frame {
                next: s,
                end: t,
                state: re.borrow().start,
                key_len: 0,
                label: (0, Code::default()),
                last_child: (0, 0),
                level: 1,
            });
        }
        let mut walk = RegexWalk {
            trie: self,
            re,
            root_pending: self.root_terminal,
            decoded: stack.len(),
            stack,
            key: Vec::new(),
            steps: CodeSteps::default(),
            universal: Universal::default(),
            next_id: None,
            stats: RegexStats::default(),
            dense: Vec::new(),
            dense_lo: 0,
        };
        if let Some(d) = &self.dense {
            let (min, max) = d.bounds();
            walk.start_dense(min, max);
        }
        walk
    }

    /// [`Trie::regex_walk`] over the keys `>= from` only: the walk starts
    /// on `from`'s path (feeding the DFA `from`'s bytes down it) instead of
    /// at the root, so a caller resuming a search after a key (a paged
    /// scan) pays for the matches ahead, not again for those behind.
    pub fn regex_walk_from<R: Borrow<KeyRegex>>(&self, re: R, from: &[u8]) -> RegexWalk<'_, 'a, R> {
        let mut walk = self.regex_walk(re);
        if from.is_empty() {
            return walk;
        }
        if let Some(d) = &self.dense {
            // From the first key at or after `from`, if any.
            walk.dense.clear();
            if let Some(first) = d.value_at(d.lower_bound(from)) {
                walk.start_dense(first, d.bounds().1);
            }
            return walk;
        }
        walk.root_pending = false; // the empty key is below `from`
        walk.stack.clear();
        let re = walk.re.borrow();
        let (mut state, mut pos, mut level) = (re.start, 0, 1);
        let Some(mut range) = (self.edges.len() != 0).then(|| self.children(0)) else {
            return walk;
        };
        // Each level pushes the siblings after `from`'s edge, then (on top,
        // so they come first) what lies below that edge and is `>= from`.
        loop {
            let (s, t) = range;
            let e = self.edges.lower(s, t, from[pos]);
            if e == t {
                break; // every edge here sorts before `from`
            }
            let frame = |next, end| Frame {
                next,
                end,
                state,
                key_len: pos,
                label: (0, Code::default()),
                last_child: (0, 0),
                level,
            };
            if self.edges.label(e) > from[pos] {
                walk.stack.push(frame(e, t));
                break;
            }
            walk.stack.push(frame(e + 1, t));
            match self.cmp_tail(e, &from[pos + 1..]) {
                LabelCmp::Less => break,
                LabelCmp::Greater => {
                    walk.stack.push(frame(e, e + 1));
                    break;
                }
                LabelCmp::Prefix(n) => {
                    let end = pos + 1 + n;
                    if end == from.len() {
                        // Edge `e` spells `from` itself, which is included.
                        walk.stack.push(frame(e, e + 1));
                        break;
                    }
                    // Its own key is a proper prefix of `from`: only what
                    // lies below it can follow `from`.
                    let (Some(next), Some(below)) =
                        (re.feed(state, &from[pos..end]), self.child_edges(e))
                    else {
                        break;
                    };
                    (state, pos, range, level) = (next, end, below, level + 1);
                }
            }
        }
        walk.key.extend_from_slice(&from[..pos]);
        // Every frame lies on `from`'s path, within the key just set.
        walk.decoded = walk.stack.len();
        walk
    }

    /// Calls `f(id, key)` for every key matching `re`, in key order, until
    /// `f` returns false.
    pub fn regex_search(&self, re: &KeyRegex, mut f: impl FnMut(u64, &[u8]) -> bool) -> RegexStats {
        let mut walk = self.regex_walk(re);
        while let Some(id) = walk.next_match() {
            if !f(id, walk.key()) {
                break;
            }
        }
        walk.stats()
    }
    /// Ids of all keys matching `pattern`, in key order.
    pub fn regex_ids(&self, pattern: &str) -> Result<Vec<u64>> {
        let re = KeyRegex::new(pattern)?;
        let mut ids = Vec::new();
        self.regex_search(&re, |id, _| {
            ids.push(id);
            true
        });
        Ok(ids)
    }
}

impl<R: Borrow<KeyRegex>> RegexWalk<'_, '_, R> {
    /// The id of the next matching key (then [`RegexWalk::key`] is that
    /// key), or `None` when there are no more.
    pub fn next_match(&mut self) -> Option<u64> {
        let (trie, re) = (self.trie, self.re.borrow());
        if std::mem::take(&mut self.root_pending) {
            self.key.clear();
            if re.is_match_at_end(re.start) {
                self.stats.matches += 1;
                self.next_id = Some(1);
                return Some(0); // the empty key sorts first
            }
        }
        if trie.dense.is_some() {
            return self.next_dense_match();
        }
        while let Some(at) = self.stack.len().checked_sub(1) {
            let frame = &mut self.stack[at];
            if frame.next == frame.end {
                self.stack.pop();
                self.decoded = self.decoded.min(at);
                continue;
            }
            if self.stats.visited_edges >= trie.edges.len() as u64 {
                // A valid trie's walk enters each edge once at most; more
                // means child ranges that overlap (bytes not validated).
                self.stack.clear();
                return None;
            }
            let e = frame.next;
            frame.next += 1;
            self.stats.visited_edges += 1;
            let (parent, level) = (frame.state, frame.level);
            let label = (trie.edges.label(e), trie.tail_code(e).unwrap_or_default());
            let stays = self.universal.check(re, parent);
            let state = if stays {
                parent // every byte leads the state back to itself
            } else {
                match self.steps.feed_label(trie, re, label, parent) {
                    Some(state) => state,
                    None => {
                        // Pruned: the keys at and below `e` are passed over.
                        self.next_id = None;
                        continue;
                    }
                }
            };
            if let Some((k, s, t)) = trie.child_edges_after(e, frame.last_child) {
                frame.last_child = (k, t);
                self.stack.push(Frame {
                    next: s,
                    end: t,
                    state,
                    key_len: 0,
                    label,
                    last_child: (0, 0),
                    level: level + 1,
                });
            }
            if !trie.edges.bit(TERM, e) {
                continue;
            }
            if !stays && !re.is_match_at_end(state) {
                self.next_id = None;
                continue;
            }
            let id = match self.next_id {
                Some(id) => id,
                None => trie.edge_id_at(e, Some(level)),
            };
            self.next_id = id.checked_add(1);
            self.stats.matches += 1;
            self.spell(at, label);
            return Some(id);
        }
        None
    }

    /// Sets `key` to the key ending with `label` below frame `at`,
    /// decoding the labels of the frames above it not spelled yet.
    fn spell(&mut self, at: usize, label: (u8, Code<'_>)) {
        let symbols = self.trie.labels.symbols();
        while self.decoded <= at {
            let j = self.decoded;
            // `decoded` is at least 1 while frames remain: the first frame
            // (the root's edges, or those on `from`'s path) is spelled.
            let above = j.checked_sub(1).map_or(0, |i| self.stack[i].key_len);
            self.key.truncate(above);
            let (first, code) = self.stack[j].label;
            self.key.push(first);
            symbols.decode_label(&code, &mut self.key);
            self.stack[j].key_len = self.key.len();
            self.decoded += 1;
        }
        self.key.truncate(self.stack[at].key_len);
        self.key.push(label.0);
        symbols.decode_label(&label.1, &mut self.key);
    }

    /// Starts the dense walk over the integers `lo..=hi`.
    fn start_dense(&mut self, lo: u64, hi: u64) {
        let (Some(d), re) = (&self.trie.dense, self.re.borrow()) else {
            return;
        };
        self.dense_lo = lo;
        self.dense
            .push(DenseFrame::new(0, 0, d.width(), lo, hi, re.start));
    }

    /// [`RegexWalk::next_match`] on dense integer keys: depth first in
    /// byte order (so in key order), a child entered only if some key lies
    /// below it and the DFA accepts its byte. Each key is entered at most
    /// once and each node on a key's path, so a walk ends within the key
    /// count times the width.
    fn next_dense_match(&mut self) -> Option<u64> {
        let (trie, re) = (self.trie, self.re.borrow());
        let d = trie.dense.as_ref()?;
        let (width, (min, max)) = (d.width(), d.bounds());
        let lo = self.dense_lo;
        while let Some(f) = self.dense.last_mut() {
            if f.next >= f.end {
                self.dense.pop();
                continue;
            }
            let b = f.next as u8;
            f.next += 1;
            let (prefix, depth) = ((f.prefix << 8) | u64::from(b), f.depth + 1);
            // The integers below this child within `lo..=max`.
            let shift = 8 * (width - depth) as u32;
            let first = prefix.checked_shl(shift).unwrap_or(0);
            let last = first | u64::MAX.checked_shr(64 - shift).unwrap_or(0);
            let (c_lo, c_hi) = (first.max(lo), last.min(max));
            if c_lo > c_hi || d.count_between(c_lo - min, c_hi - min) == 0 {
                continue;
            }
            self.stats.visited_edges += 1;
            let Some(state) = re.feed(f.state, &[b]) else {
                continue;
            };
            if depth < width {
                self.dense
                    .push(DenseFrame::new(prefix, depth, width, c_lo, c_hi, state));
            } else if re.is_match_at_end(state) {
                self.key.clear();
                d.push_key(prefix, &mut self.key);
                self.stats.matches += 1;
                return Some(d.id_of(prefix));
            }
        }
        None
    }

    /// The key of the last match.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// Work done so far.
    pub fn stats(&self) -> RegexStats {
        self.stats
    }
}
