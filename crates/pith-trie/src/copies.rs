//! Labels that end with a copy of the end of a recent label (format
//! version 6): suffix sharing at the cost of two bytes.
//!
//! Real keys repeat their ends between neighbours in the trie's
//! breadth-first order: sibling packages of one source share a version
//! (`-common/1.6.0-1`, `-doc/1.6.0-1`), sibling directories their files
//! (`/copyright`, `/changelog.Debian.gz`). The symbol table codes each of
//! them alone, so each pays for its repeated end again. Here a label may
//! instead be stored as
//!
//! ```text
//! COPY (254) | (distance - 1) << 4 | skip | codes of the label's start
//! ```
//!
//! meaning: the label's start, then label `i - distance`'s bytes from
//! byte `skip` on, where `i` is the label's number, `distance` is 1 to
//! [`WINDOW`] and `skip` 0 to [`MAX_SKIP`]. The label copied from is not
//! itself a copy, so a copy resolves in one step, and it is at most 16
//! labels back, so usually in the same 30-label block of lengths and the
//! same cache lines of the pool. Code 254 is no symbol in such a table
//! (the table has 254 symbols at most), and it is a copy only as a
//! label's first code, where it cannot be an escaped literal byte.
//!
//! The window and the two-byte cost were chosen by measuring every
//! combination on the Debian keys, the Debian package files, the Debian
//! URLs and this machine's file paths (a script over their labels): 16
//! labels back with skips up to 15 saved 73 KB of 549 KB on the Debian
//! keys' pool, 133 of 1,025 KB on the package files', 228 of 1,930 KB on
//! the paths' and 2 of 221 KB on the URLs'. A window of 8 saved 5% less,
//! 32 or 64 (with a third byte) no more, and chains of copies (a copy
//! copied from) 1% more for a second step on lookups.
//!
//! Why not nest the labels into a second trie (marisa-trie, Terark's
//! NLT)? That shares suffixes trie-wide but charges every label a link
//! and every lookup a walk of the second trie; a copy charges only the
//! labels that gain by it, and a lookup one more block read when it meets
//! one.
//!
//! The builder takes, of the last [`WINDOW`] labels that are not copies,
//! the one whose end it shares most of (the nearest of equals, at least
//! [`MIN_COPY`] bytes, leaving out at most [`MAX_SKIP`]), and stores the
//! label as a copy of it when that is at least [`MIN_GAIN`] bytes shorter
//! than coding it whole.
//!
//! Validation (`Labels::validate`) checks that every copy has its second
//! byte, copies a label that exists and is not a copy, and leaves out
//! fewer bytes than that label has. Readers of bytes not validated read a
//! copy that breaks these rules as copying nothing.

use pith_enc::le;

use crate::symbols::SymbolTable;

/// A label's first code when it is a copy.
pub(crate) const COPY: u8 = 254;
/// How far back a copy may reach, in labels.
pub(crate) const WINDOW: usize = 16;
/// The most bytes of the label copied from that a copy may leave out.
pub(crate) const MAX_SKIP: usize = 15;
/// The fewest bytes a copy is made for.
const MIN_COPY: usize = 2;
/// The fewest bytes a copy must save: a copy is a second label to read,
/// so one saving a byte costs lookups more than it saves (with 2 rather
/// than 1, Debian keys' trie grew 0.4% and their lookups took 0.7% fewer
/// instructions; with 3 it grew 1.1%).
const MIN_GAIN: usize = 2;
/// The fewest bytes a copy is assumed for when training the table.
const MIN_TRAINING_COPY: usize = 4;

/// A stored label's codes, split: `Some((distance, skip, start))` for a
/// copy (`start` the codes of the label's own start), `None` for a label
/// coded whole.
#[inline(always)]
pub(crate) fn split(code: &[u8]) -> Option<(usize, usize, &[u8])> {
    match code {
        [COPY, b, start @ ..] => Some((usize::from(b >> 4) + 1, usize::from(b & 0xF), start)),
        _ => None,
    }
}

/// Whether a stored label is a copy (or starts like one: a lone [`COPY`]
/// byte, which validation refuses).
#[inline(always)]
pub(crate) fn is_copy(code: &[u8]) -> bool {
    code.first() == Some(&COPY)
}

/// How many bytes `a` and `b` end with in common, compared a word at a
/// time (byte by byte, it was half of the choice's time).
#[inline]
fn common_end(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut common = 0;
    while common + 8 <= n {
        let x = u64::from_le_bytes(
            a[a.len() - common - 8..a.len() - common]
                .try_into()
                .unwrap_or_default(),
        );
        let y = u64::from_le_bytes(
            b[b.len() - common - 8..b.len() - common]
                .try_into()
                .unwrap_or_default(),
        );
        if x != y {
            return common + ((x ^ y).leading_zeros() / 8) as usize;
        }
        common += 8;
    }
    common
        + a[..a.len() - common]
            .iter()
            .rev()
            .zip(b[..b.len() - common].iter().rev())
            .take_while(|(x, y)| x == y)
            .count()
}

/// The last (up to) 8 bytes of `label` in a word, the last byte the
/// most significant (zero bytes below a shorter label's): the leading
/// zero bytes of two labels' words xored are the bytes they end with in
/// common, up to 8 and the shorter one's length.
#[inline]
fn end_word(label: &[u8]) -> u64 {
    let n = label.len().min(8);
    let tail = le::u64_padded(&label[label.len() - n..]);
    tail.checked_shl(8 * (8 - n) as u32).unwrap_or(0)
}

/// A recent label, as [`Chooser::best_copy`] looks at it.
#[derive(Clone, Copy, Default)]
struct Recent<'k> {
    label: &'k [u8],
    /// [`end_word`] of the label.
    end: u64,
    /// Whether it was stored as a copy (so cannot be copied from).
    copy: bool,
}

/// Encodes labels in order, each coded whole or as a copy of one of the
/// last [`WINDOW`], whichever is shorter.
pub(crate) struct Chooser<'k> {
    /// The last labels: `recent[(next + WINDOW - 1 - back) % WINDOW]` is
    /// the one `back + 1` labels back, for `back < count`.
    recent: [Recent<'k>; WINDOW],
    next: usize,
    count: usize,
    /// The codes of a candidate's start.
    start: Vec<u8>,
    /// Copies chosen so far.
    pub(crate) copies: usize,
}

impl<'k> Chooser<'k> {
    pub(crate) fn new() -> Self {
        Chooser {
            recent: [Recent::default(); WINDOW],
            next: 0,
            count: 0,
            start: Vec::new(),
            copies: 0,
        }
    }

    /// The earlier label that `label` shares the longest end with (the
    /// nearest of equals), as `(back, common, skip)`: it is `back + 1`
    /// labels back, the end is `common` bytes (0 for none), and `skip`
    /// bytes of it come before the end.
    ///
    /// Labels' last 8 bytes are compared in words kept with them (the
    /// whole ends only where those are equal): comparing the labels
    /// themselves took a quarter of a Debian keys' build.
    #[inline]
    fn best_copy(&self, label: &[u8]) -> (usize, usize, usize) {
        let end = end_word(label);
        let mut best = (0, 0, 0);
        for back in 0..self.count {
            let earlier = self.recent[(self.next + WINDOW - 1 - back) % WINDOW];
            if earlier.copy {
                continue;
            }
            let mut common = ((end ^ earlier.end).leading_zeros() / 8) as usize;
            common = common.min(label.len()).min(earlier.label.len());
            if common == 8 {
                common = common_end(label, earlier.label);
            }
            let skip = earlier.label.len() - common;
            if common > best.1 && skip <= MAX_SKIP {
                best = (back, common, skip);
            }
        }
        best
    }

    /// Returns how many of `label`'s first bytes are left to code if it
    /// copies the longest end it can of at least [`MIN_TRAINING_COPY`]
    /// bytes, and takes it as the next label (a copy if it does). Run
    /// over the labels before a table is trained, it tells the training
    /// what the table will code, which the table's symbols are then
    /// spent on (a fresh [`Chooser`] encodes with it).
    pub(crate) fn kept_before_training(&mut self, label: &'k [u8]) -> usize {
        let (_, common, _) = self.best_copy(label);
        let copied = common >= MIN_TRAINING_COPY;
        self.push(label, copied);
        if copied {
            label.len() - common
        } else {
            label.len()
        }
    }

    fn push(&mut self, label: &'k [u8], copied: bool) {
        self.copies += usize::from(copied);
        self.recent[self.next] = Recent {
            label,
            end: end_word(label),
            copy: copied,
        };
        self.next = (self.next + 1) % WINDOW;
        self.count = (self.count + 1).min(WINDOW);
    }

    /// Sets `out` to the stored codes of `label`, the next label. `table`
    /// must leave [`COPY`] unused.
    pub(crate) fn encode(&mut self, table: &SymbolTable, label: &'k [u8], out: &mut Vec<u8>) {
        out.clear();
        table.encode(label, out);
        let (back, common, skip) = self.best_copy(label);
        let mut copied = false;
        if common >= MIN_COPY {
            self.start.clear();
            table.encode(&label[..label.len() - common], &mut self.start);
            if 2 + self.start.len() + MIN_GAIN <= out.len() {
                out.clear();
                // `back` < WINDOW = 16 and `skip` <= 15: one byte.
                out.extend_from_slice(&[COPY, (back as u8) << 4 | skip as u8]);
                out.extend_from_slice(&self.start);
                copied = true;
            }
        }
        self.push(label, copied);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_reads_distance_skip_and_start() {
        assert_eq!(split(&[COPY, 0x3A, 7, 8]), Some((4, 10, &[7u8, 8][..])));
        assert_eq!(split(&[COPY, 0xF0]), Some((16, 0, &[][..])));
        assert_eq!(split(&[COPY]), None);
        assert_eq!(split(&[1, COPY, 0]), None);
        assert!(is_copy(&[COPY]) && !is_copy(&[]) && !is_copy(&[3]));
    }

    #[test]
    fn common_end_counts_equal_end_bytes() {
        let by_bytes = |a: &[u8], b: &[u8]| {
            a.iter()
                .rev()
                .zip(b.iter().rev())
                .take_while(|(x, y)| x == y)
                .count()
        };
        let words: [&[u8]; 7] = [
            b"",
            b"x",
            b"/1.6.0-1",
            b"-common/1.6.0-1",
            b"-doc/1.6.0-1",
            b"abcdefghijklmnopqrstuvwxyz",
            b"ABCdefghijklmnopqrstuvwxyz",
        ];
        for a in words {
            for b in words {
                assert_eq!(common_end(a, b), by_bytes(a, b), "{a:?} {b:?}");
                let short = ((end_word(a) ^ end_word(b)).leading_zeros() / 8) as usize;
                let short = short.min(a.len()).min(b.len());
                assert_eq!(short, by_bytes(a, b).min(8), "{a:?} {b:?}");
            }
        }
    }
}
