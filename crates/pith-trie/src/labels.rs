//! The label store: the second and later bytes of every multi-byte edge label.
//!
//! Three layouts; the trie's format version and flags say which (see
//! `docs/format.md`), all `symbols | ...`, the symbol table coding every
//! label (see [`crate::symbols`]):
//!
//! * **inline** (version 1): `symbols | bases | deltas | pool`, one label
//!   per multi-byte edge, in edge order. The `count + 1` offsets are
//!   `offset[i] = bases[i / 64] + deltas[i]` (`bases` of width
//!   `bits_for(pool length)`, `deltas` of `bits_for(largest delta)`), and
//!   label `i` is `pool[offset[i] .. offset[i + 1]]` (the builder writes
//!   deltas of at most 32 bits; readers take any width). Sampled bases with
//!   packed deltas rather than Elias-Fano: a label's extent is two plain
//!   reads instead of a select, which a lookup pays at every level with a
//!   multi-byte label, for a few more bits per label.
//! * **shared** (version 2): `symbols | pool | refs`, the pool holding each
//!   distinct label once (in order of first use) as an entry, a varint
//!   length then the codes, and `refs[i]` the byte offset of label `i`'s
//!   entry. Real key sets repeat whole labels: on the 581,455 file paths of
//!   this machine 740,894 labels are 138,617 distinct strings
//!   (`__init__.py`, `.cpython-311.pyc`, `LICENSE`, ...): the part of a
//!   minimal automaton's suffix sharing (fst merges whole equal subtrees)
//!   that a trie with key-rank ids can have. Refs hold byte offsets rather
//!   than entry numbers: a label is then one read of the refs and one of
//!   the pool, where entry numbers needed the offsets too (measured on the
//!   paths: 4-9% faster lookups for 3% more bytes).
//! * **blocks** (version 5): `symbols | blocks | pool | long pool`, one
//!   label per multi-byte edge as inline, found by blocks of lengths
//!   ([`crate::label_blocks`]): 6.4 bits a label where the offsets took 10
//!   to 12, and one read where they took two. The builder writes it
//!   wherever it used to write inline labels, except where a block's base
//!   would not fit (pools of 2^34 bytes), which stay inline (version 3).
//! * **copies** (version 6): blocks, where a label's codes may start with
//!   the copy code and say which recent label's end follows its own start
//!   ([`crate::copies`]). The builder writes it where copies would copy
//!   at least [`COPIED_SHARE`] of the label bytes, with a table trained
//!   on what they leave to code; else blocks.
//!
//! [`Labels::read`] checks the parts' lengths in O(1); [`Labels::validate`]
//! checks that inline offsets start at 0, never decrease and end at the
//! pool length, that the shared pool is whole entries and every ref an
//! entry's start, or the blocks as [`crate::label_blocks`] says, and the
//! copies as [`crate::copies`] says. Queries take each slice with a
//! checked `get`, so unvalidated offsets, refs or blocks give a wrong
//! label, never an out-of-bounds read; a copy of a label that is missing
//! or a copy itself copies nothing.
//!
//! The builder writes both the shared layout and one entry per label, and
//! keeps the smaller: a label costs one read of the index (refs or blocks)
//! and one of the pool either way. Against version 3's offsets the shared
//! layout must be at least [`SHARED_GAIN`] smaller, so that a key set that
//! gains little keeps the version-1 bytes it had.

use std::collections::HashMap;

use pith_enc::packed::{bits_for, Packed};

use crate::copies::{self, Chooser, COPY};
use crate::error::{Error, Result};
use crate::label_blocks::{Blocks, BlocksWriter};
use crate::symbols::{Code, LabelCmp, Mode, SymbolTable, Symbols};
use crate::words::{
    corrupt, packed_bytes, packed_words, push_bytes, push_entry, push_packed, push_packed_iter,
    split_entry, ByteWords, WordReader,
};

/// Offsets per sampled base.
const SAMPLE: usize = 64;

/// Against sampled offsets ([`Layout::Inline`]), the shared layout is
/// kept when it is at most this fraction of the inline one's bytes
/// (numerator, denominator); against blocks, when it is smaller.
pub(crate) const SHARED_GAIN: (usize, usize) = (7, 8);

/// Copies are written only where the labels' ends they would copy (by
/// [`Chooser::kept_before_training`]) are at least this share of the
/// label bytes (numerator, denominator): 23% on the Debian keys and
/// package files (8% and 9% smaller tries, lookups within 3% of before),
/// 47% on this machine's file paths (which keep their shared labels), but
/// 12% on the bundled sample, whose trie copies made 3.7% smaller and its
/// lookups 5-10% slower, and 6% on the Debian URLs, 0.7% smaller and 2-7%
/// slower (a copy is a second label to read).
const COPIED_SHARE: (usize, usize) = (1, 8);

/// Which layout the labels were written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// One store entry per label, found by sampled offsets (format
    /// versions 1 and 3).
    Inline,
    /// Distinct labels once, and a ref per label (format version 2, and
    /// versions 3 and 5 with the shared-labels flag).
    Shared,
    /// One store entry per label, found by blocks of lengths (format
    /// version 5, see [`crate::label_blocks`]).
    Blocks,
    /// Blocks, where a label may copy the end of a recent one (format
    /// version 6, see [`crate::copies`]).
    Copies,
}

/// Whether labels may be written as copies ([`Layout::Copies`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Copies {
    /// Never (files of format version 5 and before).
    Never,
    /// Where they would copy enough ([`COPIED_SHARE`]) and a symbol table
    /// codes the labels.
    WherePaying,
    /// Wherever a copy is shorter, with a table of no symbols (every byte
    /// escaped): small tries with copies, for golden bytes and tests.
    #[cfg(any(test, feature = "fuzzing"))]
    Always,
}

/// Encodes labels in the smaller layout (see [`SHARED_GAIN`]) and says
/// which. The one-entry-per-label layout is [`Layout::Blocks`] where
/// `blocks` allows and the pools fit it ([`Layout::Copies`] where some
/// label is a copy, as `copies` allows), [`Layout::Inline`] otherwise.
pub(crate) fn write_labels<'k>(
    out: &mut Vec<u64>,
    labels: impl ExactSizeIterator<Item = &'k [u8]> + Clone,
    blocks: bool,
    copies: Copies,
) -> Result<Layout> {
    if !repeats_may_pay(labels.clone()) {
        return write_one_per_label(out, labels, blocks, copies);
    }
    let (distinct, refs) = dedup(labels.clone());
    let mut shared = Vec::new();
    write_entries(&mut shared, &distinct, &refs);
    drop((distinct, refs));
    let mut inline = Vec::new();
    let layout = write_one_per_label(&mut inline, labels, blocks, copies)?;
    let keep_shared = match layout {
        Layout::Inline => shared.len() * SHARED_GAIN.1 <= inline.len() * SHARED_GAIN.0,
        _ => shared.len() < inline.len(),
    };
    if keep_shared {
        out.extend_from_slice(&shared);
        Ok(Layout::Shared)
    } else {
        out.extend_from_slice(&inline);
        Ok(layout)
    }
}

/// Writes one entry per label: in blocks (with copies as `copies`
/// allows) if `blocks` and the pools fit them, else with sampled offsets.
fn write_one_per_label<'k>(
    out: &mut Vec<u64>,
    labels: impl ExactSizeIterator<Item = &'k [u8]> + Clone,
    blocks: bool,
    copies: Copies,
) -> Result<Layout> {
    if blocks {
        let start = out.len();
        match write_blocks(out, labels.clone(), copies) {
            Ok(layout) => return Ok(layout),
            Err(Error::TooLarge { .. }) => out.truncate(start),
            Err(e) => return Err(e),
        }
    }
    write_store(out, labels)?;
    Ok(Layout::Inline)
}

/// Encodes labels in the blocks layout: the table, the blocks, the pool
/// and the long pool (see [`encode_pool`]), with copies as `copies`
/// allows; [`Layout::Copies`] if a label is one.
fn write_blocks<'k>(
    out: &mut Vec<u64>,
    labels: impl ExactSizeIterator<Item = &'k [u8]> + Clone,
    copies: Copies,
) -> Result<Layout> {
    let mut blocks = BlocksWriter::default();
    let mut pointer = [0; 4];
    let (pool_at, _, copied) = encode_pool(out, labels, copies, |pool, code| {
        pool.put(blocks.push(pool.len(), code, &mut pointer)?);
        Ok(())
    })?;
    let (words, long) = blocks.finish();
    push_bytes(out, &long);
    insert_words(out, pool_at, &words);
    Ok(if copied > 0 {
        Layout::Copies
    } else {
        Layout::Blocks
    })
}

/// Writes the symbol table trained on `labels`, then the pool: each
/// label's codes handed to `put` in order, with the pool as written so
/// far, to append what the layout keeps for it. With `copies`, the table
/// leaves code [`COPY`] free and a label's codes are those of a copy
/// where that is shorter ([`Chooser`]). Returns where the pool starts in
/// `out` (its length word), for the index words the layout moves in
/// front of it, the pool's length and how many labels are copies.
///
/// The labels are encoded once, straight into `out` after the table
/// (room reserved by the table's estimate); the index, which the format
/// puts before the pool but which is known only once it is written, is
/// then moved in. The pool is never held in a vector of its own beside
/// the output: it was the builder's third-largest allocation at its peak
/// on Debian keys, and the output's doubling to take it in another.
/// (Encoding twice, once to learn the offsets, took half again the
/// build's time.)
fn encode_pool<'k>(
    out: &mut Vec<u64>,
    labels: impl ExactSizeIterator<Item = &'k [u8]> + Clone,
    copies: Copies,
    mut put: impl FnMut(&mut ByteWords<'_>, &[u8]) -> Result<()>,
) -> Result<(usize, usize, usize)> {
    // With copies, the table is trained on what they will leave to code;
    // unless they would copy too little to pay for what a copy costs a
    // lookup (see [`COPIED_SHARE`]).
    let raw: usize = labels.clone().map(<[u8]>::len).sum();
    let mut table = None;
    #[cfg(any(test, feature = "fuzzing"))]
    if copies == Copies::Always {
        table = Some(SymbolTable::escapes_only());
    }
    if copies == Copies::WherePaying {
        let mut chooser = Chooser::new();
        // 4 bytes a label (a label of 4 GiB or more would train on its
        // first 4 GiB).
        let kept: Vec<u32> = labels
            .clone()
            .map(|l| u32::try_from(chooser.kept_before_training(l)).unwrap_or(u32::MAX))
            .collect();
        let copied = raw - kept.iter().map(|&k| k as usize).sum::<usize>();
        if copied * COPIED_SHARE.1 >= raw * COPIED_SHARE.0 {
            let residual = labels.clone().zip(&kept).map(|(l, &k)| &l[..k as usize]);
            table = Some(SymbolTable::train_codes(residual, usize::from(COPY)));
        }
    }
    // Only a table that leaves code 254 free can have copies, and a
    // table-less pool holds raw bytes, where 254 is a byte like any.
    let copying = table.is_some();
    let table = table.unwrap_or_else(|| SymbolTable::train(labels.clone()));
    let mut chooser = (copying && table.mode == Mode::Symbols).then(Chooser::new);
    table.write(out);
    let pool_at = out.len();
    out.reserve_exact(1 + table.encoded_estimate(raw).div_ceil(8));
    let mut pool = ByteWords::new(out);
    let mut code = Vec::new();
    for label in labels {
        match &mut chooser {
            Some(chooser) => chooser.encode(&table, label, &mut code),
            None => {
                code.clear();
                table.encode(label, &mut code);
            }
        }
        put(&mut pool, &code)?;
    }
    let copied = chooser.map_or(0, |c| c.copies);
    Ok((pool_at, pool.finish(), copied))
}

/// Whether the labels repeat enough for the shared layout to be worth
/// building: the bytes of repeated labels must be at least twice what the
/// refs cost, since a pool compresses labels about 2x (1.8-2x measured on
/// Debian keys and file paths). Counted on (crc32c, length) pairs, 8 bytes
/// a label, so that a key set of unique labels never pays for a hash map of
/// them (it was the builder's largest allocation on Debian keys); a crc
/// collision only nudges the estimate.
fn repeats_may_pay<'k>(labels: impl ExactSizeIterator<Item = &'k [u8]>) -> bool {
    let count = labels.len();
    let mut seen: Vec<u64> = labels
        .map(|l| u64::from(crc32c::crc32c(l)) << 32 | l.len().min(u32::MAX as usize) as u64)
        .collect();
    seen.sort_unstable();
    let mut distinct = 0u64;
    let mut repeated_bytes = 0u64;
    for (i, &k) in seen.iter().enumerate() {
        if i > 0 && seen[i - 1] == k {
            repeated_bytes += k & u64::from(u32::MAX);
        } else {
            distinct += 1;
        }
    }
    let refs_bytes = count as u64 * u64::from(bits_for(distinct.saturating_sub(1))) / 8;
    distinct < count as u64 && repeated_bytes >= 2 * refs_bytes
}

/// The distinct labels in order of first use, and each label's index
/// among them.
fn dedup<'k>(labels: impl ExactSizeIterator<Item = &'k [u8]>) -> (Vec<&'k [u8]>, Vec<u32>) {
    let mut ids: HashMap<&[u8], u32> = HashMap::new();
    let mut distinct = Vec::new();
    let refs = labels
        .map(|label| {
            *ids.entry(label).or_insert_with(|| {
                distinct.push(label);
                // Fewer labels than edges, and edges are below 2^32 - 1.
                distinct.len() as u32 - 1
            })
        })
        .collect();
    (distinct, refs)
}

/// Writes the shared layout: `distinct` labels as length-prefixed entries,
/// and per label (`refs` into `distinct`) its entry's byte offset.
fn write_entries(out: &mut Vec<u64>, distinct: &[&[u8]], refs: &[u32]) {
    let table = SymbolTable::train(distinct.iter().copied());
    // Each entry's length prefix (a byte, mostly) is not compressed.
    let raw: usize = distinct.iter().map(|l| l.len()).sum();
    let mut pool = Vec::with_capacity(table.encoded_estimate(raw) + distinct.len());
    let mut starts = Vec::with_capacity(distinct.len());
    let mut code = Vec::new();
    for label in distinct {
        starts.push(pool.len() as u64);
        code.clear();
        table.encode(label, &mut code);
        push_entry(&mut pool, &code);
    }
    table.write(out);
    push_bytes(out, &pool);
    let width = bits_for(starts.last().copied().unwrap_or(0));
    push_packed_iter(out, refs.iter().map(|&r| starts[r as usize]), width);
}

/// Encodes labels in the inline layout: the table, the sampled offsets
/// and the pool (see [`encode_pool`]).
fn write_store<'k>(
    out: &mut Vec<u64>,
    labels: impl ExactSizeIterator<Item = &'k [u8]> + Clone,
) -> Result<()> {
    // The offsets as they are written: a base per SAMPLE labels and each
    // offset's distance from its base, in 32 bits (a u64 per offset was
    // the largest array at the builder's peak after the keys).
    let count = labels.len();
    let mut bases: Vec<u64> = Vec::with_capacity(count / SAMPLE + 1);
    let mut deltas: Vec<u32> = Vec::with_capacity(count + 1);
    let mut record = |i: usize, at: usize| -> Result<()> {
        if i % SAMPLE == 0 {
            bases.push(at as u64);
        }
        let base = bases.last().copied().unwrap_or(0);
        let delta = u32::try_from(at as u64 - base).map_err(|_| Error::TooLarge {
            what: "encoded bytes of the edge labels of one offset sample",
            limit: u64::from(u32::MAX),
        })?;
        deltas.push(delta);
        Ok(())
    };
    let mut i = 0;
    let (pool_at, pool_len, _) = encode_pool(out, labels, Copies::Never, |pool, code| {
        record(i, pool.len())?;
        i += 1;
        pool.put(code);
        Ok(())
    })?;
    record(count, pool_len)?;
    let base_width = bits_for(pool_len as u64);
    let delta_width = bits_for(u64::from(deltas.iter().copied().max().unwrap_or(0)));
    let mut index = Vec::with_capacity(
        packed_words(bases.len(), base_width) + packed_words(deltas.len(), delta_width),
    );
    push_packed(&mut index, &bases, base_width);
    push_packed_iter(
        &mut index,
        deltas.iter().map(|&d| u64::from(d)),
        delta_width,
    );
    drop((bases, deltas));
    insert_words(out, pool_at, &index);
    Ok(())
}

/// Inserts `words` into `out` at `at`, moving what follows (growing `out`
/// by exactly their length, not by doubling).
fn insert_words(out: &mut Vec<u64>, at: usize, words: &[u64]) {
    let tail = out.len() - at;
    out.reserve_exact(words.len());
    out.resize(out.len() + words.len(), 0);
    out.copy_within(at..at + tail, at + words.len());
    out[at..at + words.len()].copy_from_slice(words);
}

/// A read-only label store.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Labels<'a> {
    symbols: Symbols<'a>,
    index: Index<'a>,
    pool: &'a [u8],
    /// Byte offset of the section in the file, for error messages.
    at: usize,
}

/// Where label `i` lies in the pool.
#[derive(Clone, Copy, Debug)]
enum Index<'a> {
    /// Inline: `pool[offset[i] .. offset[i + 1]]`, `offset[i] = bases[i /
    /// 64] + deltas[i]`.
    Offsets {
        bases: Packed<'a>,
        deltas: Packed<'a>,
    },
    /// Shared: the entry at byte `refs[i]`, a varint length then the codes.
    Refs(Packed<'a>),
    /// Blocks of lengths, and the long labels' pool; `may_copy` when a
    /// label may be a copy ([`Layout::Copies`]).
    Blocks {
        blocks: Blocks<'a>,
        long: &'a [u8],
        may_copy: bool,
    },
}

/// Offset `i` of the inline layout.
#[inline(always)]
fn offset(bases: Packed<'_>, deltas: Packed<'_>, i: usize) -> u64 {
    bases.get(i / SAMPLE).wrapping_add(deltas.get(i))
}

impl<'a> Labels<'a> {
    /// Takes a labels section of `count` labels in `layout` in O(1).
    pub(crate) fn read(r: &mut WordReader<'a>, count: usize, layout: Layout) -> Result<Self> {
        let at = r.offset();
        let symbols = Symbols::read(r)?;
        let (index, pool) = match layout {
            Layout::Inline => {
                let bases = r.packed("label offset bases")?;
                let deltas = r.packed("label offset deltas")?;
                let pool = r.bytes("label pool")?;
                if deltas.len() != count + 1 || bases.len() != deltas.len().div_ceil(SAMPLE) {
                    let detail = format!(
                        "label offsets hold {} entries, expected {}",
                        deltas.len(),
                        count + 1
                    );
                    return Err(corrupt(at, detail));
                }
                (Index::Offsets { bases, deltas }, pool)
            }
            Layout::Shared => {
                let pool = r.bytes("label pool")?;
                let refs_at = r.offset();
                let refs = r.packed("label refs")?;
                if refs.len() != count {
                    let detail =
                        format!("label refs hold {} entries, expected {count}", refs.len());
                    return Err(corrupt(refs_at, detail));
                }
                (Index::Refs(refs), pool)
            }
            Layout::Blocks | Layout::Copies => {
                let blocks = Blocks::read(r, count)?;
                let pool = r.bytes("label pool")?;
                let long = r.bytes("long label pool")?;
                let may_copy = layout == Layout::Copies;
                if may_copy && symbols.mode() != Mode::Symbols {
                    // Copies need a table (254 is a byte like any in raw
                    // labels), and a builder writes version 5 without one.
                    return Err(corrupt(at, "labels with copies but no symbol table"));
                }
                if may_copy && symbols.symbol(COPY).1 != 0 {
                    return Err(corrupt(at, "the symbol table codes the copy code 254"));
                }
                (
                    Index::Blocks {
                        blocks,
                        long,
                        may_copy,
                    },
                    pool,
                )
            }
        };
        Ok(Labels {
            symbols,
            index,
            pool,
            at,
        })
    }

    /// Checks what [`Labels::read`] took on trust. Inline: the offsets
    /// start at 0, never decrease and end at the pool length. Shared: the
    /// pool is a sequence of whole entries, and every ref names the start
    /// of one. Blocks: as [`crate::label_blocks::Blocks::validate`] says.
    pub(crate) fn validate(&self) -> Result<()> {
        match self.index {
            Index::Offsets { bases, deltas } => {
                let mut prev = 0;
                for i in 0..deltas.len() {
                    let v = offset(bases, deltas, i);
                    if (i == 0 && v != 0) || v < prev {
                        return Err(corrupt(self.at, format!("label offset {i} out of order")));
                    }
                    prev = v;
                }
                if prev != self.pool.len() as u64 {
                    return Err(corrupt(
                        self.at,
                        "label offsets do not end at the pool length",
                    ));
                }
            }
            Index::Refs(refs) => {
                let mut starts = vec![false; self.pool.len()];
                let mut rest = self.pool;
                while !rest.is_empty() {
                    starts[self.pool.len() - rest.len()] = true;
                    rest = split_entry(rest).map(|(_, after)| after).ok_or_else(|| {
                        corrupt(
                            self.at,
                            format!(
                                "label entry at pool byte {} overruns the pool",
                                self.pool.len() - rest.len()
                            ),
                        )
                    })?;
                }
                for i in 0..refs.len() {
                    let at = refs.get(i);
                    if !usize::try_from(at).is_ok_and(|a| starts.get(a) == Some(&true)) {
                        return Err(corrupt(
                            self.at,
                            format!("label ref {i} (pool byte {at}) is not the start of an entry"),
                        ));
                    }
                }
            }
            Index::Blocks {
                blocks,
                long,
                may_copy,
            } => {
                blocks.validate(self.pool, long, self.at)?;
                if may_copy {
                    self.validate_copies(blocks.len())?;
                }
            }
        }
        Ok(())
    }

    /// Checks every copy (see [`crate::copies`]): it has its distance
    /// byte, the label it copies from exists and is no copy, and the copy
    /// leaves out fewer bytes than that label has (so copies something).
    fn validate_copies(&self, count: usize) -> Result<()> {
        for i in 0..count {
            let code = self.code(i);
            if !copies::is_copy(code) {
                continue;
            }
            let bad = |what: &str| corrupt(self.at, format!("label {i} is a copy {what}"));
            let Some((distance, skip, _)) = copies::split(code) else {
                return Err(bad("without its distance byte"));
            };
            let Some(from) = i.checked_sub(distance) else {
                return Err(bad("of a label before the first"));
            };
            let from = self.code(from);
            if copies::is_copy(from) {
                return Err(bad("of a copy"));
            }
            if skip >= self.symbols.decoded_len(from) {
                return Err(bad("of nothing (it skips the whole label)"));
            }
        }
        Ok(())
    }

    pub(crate) fn size_bytes(&self) -> usize {
        let table = if self.symbols.mode() == crate::symbols::Mode::Symbols {
            255 * 8 + 264
        } else {
            0
        };
        let index = match &self.index {
            Index::Offsets { bases, deltas } => packed_bytes(bases) + packed_bytes(deltas),
            Index::Refs(refs) => packed_bytes(refs),
            Index::Blocks { blocks, long, .. } => {
                blocks.size_bytes() + 8 + long.len().div_ceil(8) * 8
            }
        };
        8 + table + index + 8 + self.pool.len().div_ceil(8) * 8
    }

    /// Bytes of the refs (0 in the inline layout).
    pub(crate) fn refs_bytes(&self) -> usize {
        match &self.index {
            Index::Offsets { .. } | Index::Blocks { .. } => 0,
            Index::Refs(refs) => packed_bytes(refs),
        }
    }

    /// How many labels are copies (0 unless the layout has them).
    pub(crate) fn copies(&self) -> usize {
        match self.index {
            Index::Blocks {
                blocks,
                may_copy: true,
                ..
            } => (0..blocks.len())
                .filter(|&i| copies::is_copy(self.code(i)))
                .count(),
            _ => 0,
        }
    }

    pub(crate) fn symbols(&self) -> Symbols<'a> {
        self.symbols
    }

    /// Bytes of the encoded labels: the pool, and the long labels' pool
    /// of the blocks layout.
    pub(crate) fn pool_bytes(&self) -> usize {
        match self.index {
            Index::Blocks { long, .. } => self.pool.len() + long.len(),
            _ => self.pool.len(),
        }
    }

    /// The stored codes of label `i`; empty for `i` past the last label,
    /// or offsets or refs that do not delimit a slice of the pool (bytes
    /// not yet validated).
    #[inline(always)]
    fn code(&self, i: usize) -> &'a [u8] {
        match self.index {
            Index::Offsets { bases, deltas } => {
                if i + 1 >= deltas.len() {
                    return &[];
                }
                let (a, b) = (offset(bases, deltas, i), offset(bases, deltas, i + 1));
                self.pool.get(a as usize..b as usize).unwrap_or(&[])
            }
            Index::Refs(refs) => {
                let entry = refs
                    .try_get(i)
                    .and_then(|at| self.pool.get(usize::try_from(at).ok()?..))
                    .and_then(split_entry);
                entry.map_or(&[], |(label, _)| label)
            }
            Index::Blocks { blocks, long, .. } => blocks.label(i, self.pool, long),
        }
    }

    /// Label `i`'s codes, with those of the label it copies from if it is
    /// a copy. A copy of a label that does not exist or is a copy itself
    /// (bytes not validated) copies nothing.
    #[inline(always)]
    pub(crate) fn label(&self, i: usize) -> Code<'a> {
        let code = self.code(i);
        let Index::Blocks { may_copy: true, .. } = self.index else {
            return Code::whole(code);
        };
        self.resolve(i, code)
    }

    /// Label `i`'s codes from its stored `code`, in a layout with copies.
    #[inline(always)]
    fn resolve(&self, i: usize, code: &'a [u8]) -> Code<'a> {
        match copies::split(code) {
            None => Code::whole(code),
            Some((distance, skip, own)) => {
                let from = i.checked_sub(distance).map_or(&[][..], |j| self.code(j));
                Code {
                    own,
                    copied: if copies::is_copy(from) { &[] } else { from },
                    skip,
                }
            }
        }
    }

    /// Appends label `i` to `out`.
    #[inline(always)]
    pub(crate) fn decode(&self, i: usize, out: &mut Vec<u8>) {
        self.symbols.decode_label(&self.label(i), out);
    }

    /// Compares label `i` with the start of `query`.
    #[inline(always)]
    pub(crate) fn compare(&self, i: usize, query: &[u8]) -> LabelCmp {
        let code = self.code(i);
        if let Index::Blocks { may_copy: true, .. } = self.index {
            if copies::is_copy(code) {
                return self.compare_copy(i, code, query);
            }
        }
        self.symbols.compare(code, query)
    }

    /// [`Labels::compare`] for a label stored as a copy, `code`: out of
    /// line, so the labels coded whole (most of them) keep the short path
    /// they had before copies.
    #[inline(never)]
    fn compare_copy(&self, i: usize, code: &'a [u8], query: &[u8]) -> LabelCmp {
        self.symbols.compare_label(&self.resolve(i, code), query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against blocks the smaller layout is kept, whatever the margin:
    /// label sets from all distinct to much repeated.
    #[test]
    fn the_smaller_of_shared_and_blocks_is_kept() {
        for distinct in [40usize, 300, 900, 2000, 4000] {
            let labels: Vec<Vec<u8>> = (0..4000usize)
                .map(|i| format!("label-{:05}.txt", (i * 7919) % distinct).into_bytes())
                .collect();
            let iter = || labels.iter().map(Vec::as_slice);
            let mut out = Vec::new();
            let layout = write_labels(&mut out, iter(), true, Copies::Never).unwrap();
            let mut blocks = Vec::new();
            assert_eq!(
                write_one_per_label(&mut blocks, iter(), true, Copies::Never).unwrap(),
                Layout::Blocks
            );
            let (d, refs) = dedup(iter());
            let mut shared = Vec::new();
            write_entries(&mut shared, &d, &refs);
            if repeats_may_pay(iter()) {
                assert_eq!(out.len(), shared.len().min(blocks.len()), "{distinct}");
            } else {
                assert_eq!(
                    (layout, out.len()),
                    (Layout::Blocks, blocks.len()),
                    "{distinct}"
                );
            }
            let want = if out == shared {
                Layout::Shared
            } else {
                Layout::Blocks
            };
            assert_eq!(layout, want, "{distinct}");
        }
    }

    /// Labels of Debian-like keys: package names whose ends repeat a
    /// version among neighbours.
    fn versioned_labels() -> Vec<Vec<u8>> {
        (0..4000u64)
            .map(|i| {
                let name = ["", "-doc", "-dev", "-common-data"][i as usize % 4];
                // A version per four labels, with digits no table codes
                // whole.
                let v = (i / 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
                let (a, b, c) = (v % 97, v / 97 % 1000, v / 97_000 % 89);
                format!("{name}/{a}.{b}.{c}-{}", i / 4 % 3).into_bytes()
            })
            .collect()
    }

    fn to_words(bytes: &[u8]) -> Vec<u64> {
        bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    fn read_copies(words: &[u64], count: usize) -> Labels<'_> {
        let mut r = WordReader::new(words, 0);
        Labels::read(&mut r, count, Layout::Copies).unwrap()
    }

    #[test]
    fn copies_decode_compare_and_are_smaller() {
        let labels = versioned_labels();
        let iter = || labels.iter().map(Vec::as_slice);
        let mut out = Vec::new();
        assert_eq!(
            write_one_per_label(&mut out, iter(), true, Copies::WherePaying).unwrap(),
            Layout::Copies
        );
        let mut plain = Vec::new();
        assert_eq!(
            write_one_per_label(&mut plain, iter(), true, Copies::Never).unwrap(),
            Layout::Blocks
        );
        assert!(
            out.len() * 20 < plain.len() * 19,
            "{} {}",
            out.len(),
            plain.len()
        );
        let read = read_copies(&out, labels.len());
        read.validate().unwrap();
        let copies = (0..labels.len())
            .filter(|&i| copies::is_copy(read.code(i)))
            .count();
        assert!(copies > labels.len() / 2, "{copies}");
        for (i, label) in labels.iter().enumerate() {
            let mut back = Vec::new();
            read.decode(i, &mut back);
            assert_eq!(&back, label, "{i}");
            assert_eq!(read.compare(i, label), LabelCmp::Prefix(label.len()));
            let longer = [label.as_slice(), b"/x"].concat();
            assert_eq!(read.compare(i, &longer), LabelCmp::Prefix(label.len()));
            let shorter = &label[..label.len() - 1];
            assert_eq!(read.compare(i, shorter), LabelCmp::Greater);
            // Differing in the last byte, inside the copied end.
            let mut less = label.clone();
            *less.last_mut().unwrap() -= 1;
            assert_eq!(read.compare(i, &less), LabelCmp::Greater);
            *less.last_mut().unwrap() += 2;
            assert_eq!(read.compare(i, &less), LabelCmp::Less);
        }
    }

    /// Each way a copy can be wrong is refused by validation, and reads
    /// of the wrong bytes stay in bounds.
    #[test]
    fn validation_refuses_bad_copies() {
        let labels = versioned_labels();
        let mut out = Vec::new();
        write_one_per_label(
            &mut out,
            labels.iter().map(Vec::as_slice),
            true,
            Copies::WherePaying,
        )
        .unwrap();
        let read = read_copies(&out, labels.len());
        let pool_at = read.pool.as_ptr() as usize - out.as_ptr() as usize;
        let copy_at = |i: usize| -> Option<usize> {
            let code = read.code(i);
            copies::is_copy(code)
                .then(|| pool_at + (code.as_ptr() as usize - read.pool.as_ptr() as usize) + 1)
        };
        let first = (0..labels.len())
            .find_map(|i| copy_at(i).map(|at| (i, at)))
            .unwrap();
        let (later, later_at) = (first.0 + 1..labels.len())
            .find_map(|j| copy_at(j).filter(|_| j - first.0 <= 16).map(|at| (j, at)))
            .unwrap();
        let short = labels.iter().map(Vec::len).min().unwrap();
        assert!(short <= 15);
        let cases: Vec<(usize, u8, &str)> = vec![
            // Sixteen back from a label before the 16th.
            (first.1, 0xF0, "before the first"),
            // Copying the earlier copy.
            (later_at, ((later - first.0 - 1) as u8) << 4, "of a copy"),
        ];
        let mut bytes: Vec<u8> = bytemuck::cast_slice(&out).to_vec();
        assert!(first.0 < 16, "{first:?}");
        for (at, byte, what) in cases {
            let saved = bytes[at];
            bytes[at] = byte;
            let words: Vec<u64> = to_words(&bytes);
            let bad = read_copies(&words, labels.len());
            let err = bad.validate().unwrap_err().to_string();
            assert!(err.contains(what), "{what}: {err}");
            for (i, label) in labels.iter().enumerate() {
                let mut back = Vec::new();
                bad.decode(i, &mut back);
                let _ = bad.compare(i, label);
            }
            bytes[at] = saved;
        }
        // Skipping every byte of the label copied from: the shortest
        // label, copied by a later one.
        let target = (0..labels.len())
            .find(|&i| labels[i].len() == short && !copies::is_copy(read.code(i)))
            .unwrap();
        let (j, at) = (target + 1..labels.len())
            .filter(|&j| j - target <= 16)
            .find_map(|j| copy_at(j).map(|at| (j, at)))
            .unwrap();
        bytes[at] = ((j - target - 1) as u8) << 4 | short as u8;
        let words: Vec<u64> = to_words(&bytes);
        let err = read_copies(&words, labels.len()).validate().unwrap_err();
        assert!(err.to_string().contains("of nothing"), "{err}");
    }

    #[test]
    fn insert_words_moves_the_tail() {
        let mut out = vec![1, 2, 3, 4];
        insert_words(&mut out, 1, &[8, 9]);
        assert_eq!(out, [1, 8, 9, 2, 3, 4]);
        insert_words(&mut out, 6, &[5]);
        assert_eq!(out, [1, 8, 9, 2, 3, 4, 5]);
        insert_words(&mut out, 0, &[]);
        assert_eq!(out, [1, 8, 9, 2, 3, 4, 5]);
    }
}
