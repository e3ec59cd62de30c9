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

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::nfa::thompson;
use regex_automata::util::{primitives::StateID, start, syntax};
use regex_automata::{Anchored, MatchKind};

use crate::edges::{HAS_CHILD, TERM};
use crate::error::{Error, Result};
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
    /// Compiles `pattern` to match whole keys.
    pub fn new(pattern: &str) -> Result<Self> {
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .match_kind(MatchKind::All)
                    .start_kind(StartKind::Anchored)
                    .dfa_size_limit(Some(DFA_SIZE_LIMIT))
                    .determinize_size_limit(Some(DFA_SIZE_LIMIT)),
            )
            .syntax(syntax::Config::new().utf8(false))
            .thompson(thompson::Config::new().utf8(false))
            .build(&format!(r"(?:{pattern})\z"))
            .map_err(|e| Error::Regex(e.to_string()))?;
        let start = dfa
            .start_state(&start::Config::new().anchored(Anchored::Yes))
            .map_err(|e| Error::Regex(e.to_string()))?;
        Ok(KeyRegex { dfa, start })
    }

    fn is_match_at_end(&self, s: StateID) -> bool {
        self.dfa.is_match_state(self.dfa.next_eoi_state(s))
    }

    fn feed(&self, mut s: StateID, bytes: &[u8]) -> Option<StateID> {
        for &b in bytes {
            s = self.dfa.next_state(s, b);
            if self.dfa.is_dead_state(s) || self.dfa.is_quit_state(s) {
                return None;
            }
        }
        Some(s)
    }

    /// True if the pattern matches all of `key`.
    pub fn is_match(&self, key: &[u8]) -> bool {
        self.feed(self.start, key)
            .is_some_and(|s| self.is_match_at_end(s))
    }
}

/// Work done by a regex search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegexStats {
    /// Edges (trie nodes other than the root) whose labels were fed to the DFA.
    pub visited_edges: u64,
    /// Keys that matched.
    pub matches: u64,
}

struct Frame {
    next: usize,
    end: usize,
    state: StateID,
    key_len: usize,
}

impl Trie<'_> {
    /// Calls `f(id, key)` for every key matching `re`, in key order, until
    /// `f` returns false.
    pub fn regex_search(&self, re: &KeyRegex, mut f: impl FnMut(u64, &[u8]) -> bool) -> RegexStats {
        let mut stats = RegexStats::default();
        let mut key = Vec::new();
        if self.root_terminal && re.is_match_at_end(re.start) {
            stats.matches += 1;
            if !f(self.perm.get(0) as u64, &key) {
                return stats;
            }
        }
        if self.edges.len() == 0 {
            return stats;
        }
        let (s, t) = self.children(0);
        let mut stack = vec![Frame {
            next: s,
            end: t,
            state: re.start,
            key_len: 0,
        }];
        while let Some(frame) = stack.last_mut() {
            if frame.next == frame.end {
                stack.pop();
                continue;
            }
            let e = frame.next;
            frame.next += 1;
            stats.visited_edges += 1;
            key.truncate(frame.key_len);
            self.push_label(e, &mut key);
            let Some(state) = re.feed(frame.state, &key[frame.key_len..]) else {
                continue;
            };
            if self.edges.bit(TERM, e) && re.is_match_at_end(state) {
                stats.matches += 1;
                if !f(self.edge_id(e), &key) {
                    return stats;
                }
            }
            if self.edges.bit(HAS_CHILD, e) {
                let (s, t) = self.children(self.child_node(e));
                stack.push(Frame {
                    next: s,
                    end: t,
                    state,
                    key_len: key.len(),
                });
            }
        }
        stats
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
