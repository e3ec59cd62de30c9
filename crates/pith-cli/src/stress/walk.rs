//! Walking a key range with a two-way [`DbIterator`], checked by a
//! [`ScanCheck`], and turning around mid-walk.
//!
//! A walk seeks to one end of `lo..hi` (by `seek`, `seek_to_first`,
//! `seek_for_prev` or `seek_to_last`) and steps to the other, feeding every
//! key in the range to the check. At random keys it steps once the other
//! way and back (a direction change, which re-seeks every source of the
//! engine's merging iterator): the first step must land on the key the
//! walk saw just before (or, at the walk's first key, outside the range),
//! the second back on the same key and value. Both follow from the
//! iterator reading one fixed snapshot, so these checks are exact whatever
//! other threads write.
//!
//! A walk runs on one thread, on an iterator that thread owns.

use pith::DbIterator;
use rand::Rng;

use super::model::Model;
use super::report::{Fail, Mismatch};
use super::scan::{Dir, ScanCheck};
use crate::CliError;

/// One in this many keys of a walk is followed by a direction change.
const SWITCH_ONE_IN: u32 = 16;

/// What a walk did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Walked {
    /// Keys the iterator returned in the range.
    pub keys: u64,
    /// Direction changes checked.
    pub switches: u64,
    /// Keys (present or absent) checked.
    pub checked: u64,
}

fn status(it: &DbIterator) -> Result<(), Fail> {
    it.status().map_err(|e| Fail::Error(CliError::Db(e)))
}

fn text(k: Option<&[u8]>) -> String {
    k.map_or("none".into(), |k| String::from_utf8_lossy(k).into_owned())
}

/// Walks `lo..hi` in `chk`'s direction; see the module doc.
pub fn walk(
    it: &mut DbIterator,
    model: &Model,
    (lo, hi): (u32, u32),
    mut chk: ScanCheck,
    rng: &mut impl Rng,
) -> Result<Walked, Fail> {
    let dir = chk.dir();
    match dir {
        Dir::Forward if lo == 0 && rng.gen() => it.seek_to_first(),
        Dir::Forward => it.seek(&Model::bound(lo)),
        Dir::Backward if hi == model.keys && rng.gen() => it.seek_to_last(),
        Dir::Backward => it.seek_for_prev(&Model::bound(hi)),
    }
    let mut done = Walked::default();
    let mut last: Option<Vec<u8>> = None;
    while let Some(key) = it.key() {
        let key = key.to_vec();
        match (dir, model.index_of(&key)) {
            (Dir::Forward, Some(i)) if i >= hi => break,
            (Dir::Backward, Some(i)) if i < lo => break,
            // seek_for_prev(bound(hi)) lands on key `hi` itself when that
            // key equals its bound (an empty suffix).
            (Dir::Backward, Some(i)) if i == hi && key == Model::bound(hi) && last.is_none() => {
                it.prev();
                continue;
            }
            _ => {}
        }
        let value = it.value().unwrap_or_default().to_vec();
        chk.see(&key, &value)?;
        done.keys += 1;
        if rng.gen_ratio(1, SWITCH_ONE_IN) {
            switch(it, model, (&key, &value), last.as_deref(), dir, (lo, hi))?;
            done.switches += 1;
        }
        last = Some(key);
        match dir {
            Dir::Forward => it.next(),
            Dir::Backward => it.prev(),
        }
    }
    status(it)?;
    chk.finish()?;
    done.checked = chk.checked;
    Ok(done)
}

/// At `key` of a walk going `dir`, steps once the other way and back.
fn switch(
    it: &mut DbIterator,
    model: &Model,
    (key, value): (&[u8], &[u8]),
    last: Option<&[u8]>,
    dir: Dir,
    (lo, hi): (u32, u32),
) -> Result<(), Fail> {
    match dir {
        Dir::Forward => it.prev(),
        Dir::Backward => it.next(),
    }
    status(it)?;
    let got = it.key().map(<[u8]>::to_vec);
    let outside = |g: &[u8]| match dir {
        Dir::Forward => g < key && model.index_of(g).is_none_or(|i| i < lo),
        Dir::Backward => g > key && model.index_of(g).is_none_or(|i| i >= hi),
    };
    let ok = match (&got, last) {
        (Some(g), Some(l)) => g.as_slice() == l,
        (Some(g), None) => outside(g),
        (None, l) => l.is_none(),
    };
    let step = if dir == Dir::Forward {
        "prev()"
    } else {
        "next()"
    };
    if !ok {
        return Err(Fail::Mismatch(Mismatch {
            key: text(Some(key)),
            check: format!("iterator {step} during a {dir:?} walk"),
            expected: last.map_or("a key outside the range, or none".into(), |l| {
                format!("{} (the walk's previous key)", text(Some(l)))
            }),
            found: text(got.as_deref()),
        }));
    }
    match (dir, it.valid()) {
        (_, false) => it.seek(key),
        (Dir::Forward, true) => it.next(),
        (Dir::Backward, true) => it.prev(),
    }
    status(it)?;
    if it.key() != Some(key) || it.value() != Some(value) {
        return Err(Fail::Mismatch(Mismatch {
            key: text(Some(key)),
            check: format!("iterator step back after {step}"),
            expected: "the same key and value as before".into(),
            found: format!(
                "{} ({})",
                text(it.key()),
                it.value()
                    .map_or("no value".into(), |v| format!("{} bytes", v.len()))
            ),
        }));
    }
    Ok(())
}
