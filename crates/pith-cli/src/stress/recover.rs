//! The whole-database check: run on a quiescent database (at the start
//! and end of a run, and after every kill), it reads every key, scans the
//! whole key space, runs `DB::verify`, and settles the expected state.
//!
//! Per key, the database must hold the acknowledged version or, when a
//! write was in flight (a kill, or an interrupted run), the pending one;
//! nothing else. A writer thread has at most one write (a single
//! operation or a batch) in flight, so all in-flight keys of one owner
//! belong to one batch, and the batch is atomic: those whose outcome is
//! visible must all have landed or all not. The full scan must return
//! exactly the keys the gets found, in order, with the same values.
//!
//! When nothing is wrong, every key's pending and acked versions are set to
//! the version found, so the next run starts exact. When something is
//! wrong the file is left as it was, as evidence.
//!
//! Nothing else may use the database or the expected state meanwhile.

use pith::DB;

use super::expected::Expected;
use super::model::{Found, Model};
use super::report::{Counts, Mismatch, Op, Recoveries, Reporter};
use crate::CliError;

fn mismatch(model: &Model, i: u32, check: &str, expected: String, found: String) -> Mismatch {
    Mismatch {
        key: String::from_utf8_lossy(&model.key(i)).into_owned(),
        check: check.to_string(),
        expected,
        found,
    }
}

/// Checks the database against the expected state (see the module doc);
/// mismatches go to `report`. Returns what became of writes in flight.
pub fn reconcile(
    db: &DB,
    model: &Model,
    expected: &Expected,
    counts: &Counts,
    report: &Reporter,
) -> Result<Recoveries, CliError> {
    let threads = expected.header().threads.max(1);
    let mut out = Recoveries::default();
    let mut settled = Vec::with_capacity(model.keys as usize);
    // Per owner thread: (key, landed) of in-flight keys whose outcome shows.
    let mut outcomes: Vec<Vec<(u32, bool)>> = vec![Vec::new(); threads as usize];
    let before = report.count();
    for i in 0..model.keys {
        let (acked, pending) = (expected.acked(i), expected.pending(i));
        let read = db.get(model.key(i))?;
        counts.add(Op::Checked, 1);
        let found = model.classify(i, read.as_deref());
        let resolved = match found {
            Ok(Found::Version(v)) if v == pending && model.is_put(i, v) => Some(pending),
            Ok(Found::Version(v)) if v == acked && model.is_put(i, v) => Some(acked),
            Ok(Found::Absent) if !model.is_put(i, pending) => Some(pending),
            Ok(Found::Absent) if !model.is_put(i, acked) => Some(acked),
            _ => None,
        };
        let Some(v) = resolved else {
            report.mismatch(mismatch(
                model,
                i,
                "recovery get",
                model.describe_expected(i, acked, acked)
                    + &if pending != acked {
                        format!(
                            " or, in flight, {}",
                            model.describe_expected(i, pending, pending)
                        )
                    } else {
                        String::new()
                    },
                model.describe_found(i, read.as_deref()),
            ));
            settled.push(acked);
            continue;
        };
        if pending != acked {
            let visible = model.is_put(i, acked) || model.is_put(i, pending);
            if !visible {
                out.unknown += 1;
            } else if v == pending {
                out.landed += 1;
            } else {
                out.lost += 1;
            }
            if let (true, Some(o)) = (visible, outcomes.get_mut((i % threads) as usize)) {
                o.push((i, v == pending));
            }
        }
        settled.push(v);
    }
    for o in &outcomes {
        let Some(&(first, landed)) = o.first() else {
            continue;
        };
        if let Some(&(other, _)) = o.iter().find(|&&(_, l)| l != landed) {
            let word = |l: bool| if l { "landed" } else { "lost" };
            report.mismatch(mismatch(
                model,
                other,
                "recovery batch atomicity",
                format!(
                    "the write in flight {}, as it did for key {} of the same batch",
                    word(landed),
                    String::from_utf8_lossy(&model.key(first))
                ),
                format!("it {}", word(!landed)),
            ));
        }
    }
    if report.count() == before {
        scan_all(db, model, &settled, counts, report)?;
    }
    db.verify()?;
    if report.count() == before {
        expected.settle(&settled)?;
    }
    Ok(out)
}

/// The full scan must show exactly the keys with a put as their settled
/// version.
fn scan_all(
    db: &DB,
    model: &Model,
    settled: &[u32],
    counts: &Counts,
    report: &Reporter,
) -> Result<(), CliError> {
    let put = |i: u32| model.is_put(i, settled.get(i as usize).copied().unwrap_or(0));
    let missing = |i: u32| {
        let v = settled.get(i as usize).copied().unwrap_or(0);
        mismatch(
            model,
            i,
            "recovery scan",
            model.describe_expected(i, v, v),
            "absent from the scan (a get found it)".into(),
        )
    };
    let mut it = db.iter();
    it.seek_to_first();
    let mut next = 0u32;
    while let Some(key) = it.key() {
        counts.add(Op::Checked, 1);
        let Some(i) = model.index_of(key).filter(|&i| i >= next) else {
            report.mismatch(Mismatch {
                key: String::from_utf8_lossy(key).into_owned(),
                check: "recovery scan".into(),
                expected: "keys the stress test writes, ascending".into(),
                found: "an unknown or out-of-order key".into(),
            });
            return Ok(());
        };
        if let Some(j) = (next..i).find(|&j| put(j)) {
            report.mismatch(missing(j));
            return Ok(());
        }
        let v = settled.get(i as usize).copied().unwrap_or(0);
        if !put(i) || it.value() != Some(model.value(i, v).as_slice()) {
            report.mismatch(mismatch(
                model,
                i,
                "recovery scan",
                model.describe_expected(i, v, v),
                model.describe_found(i, it.value()),
            ));
            return Ok(());
        }
        next = i + 1;
        it.next();
    }
    if let Err(e) = it.status() {
        return Err(CliError::Db(e));
    }
    if let Some(j) = (next..model.keys).find(|&j| put(j)) {
        report.mismatch(missing(j));
    }
    Ok(())
}
