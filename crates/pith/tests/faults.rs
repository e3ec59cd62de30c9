//! Fault tests through the file-system seam: power cuts, an I/O error at
//! every call of a workload, a full disk, and random API sequences with
//! both (`pith::fuzz::api`, which checks every recovery against a model).
//!
//! Soak counts: `PITH_POWER_ROUNDS` (default 40), `PITH_API_SEQUENCES`
//! (default 60).

use std::collections::BTreeSet;

use pith::env::{Call, CallKind, Injected};
use pith::fuzz::api::{deterministic_options, early_training_options, Driver, Op};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn random_write(rng: &mut StdRng) -> Op {
    let n = rng.gen_range(1..=4);
    let ops = (0..n)
        .map(|_| {
            let k: u8 = rng.gen_range(0..48);
            (k, rng.gen_bool(0.8).then(|| rng.gen_range(0..600)))
        })
        .collect();
    let sync = rng.gen_bool(0.3);
    Op::Write {
        ops,
        sync,
        defer: !sync && rng.gen_bool(0.3),
    }
}

fn random_op(rng: &mut StdRng) -> Op {
    match rng.gen_range(0..100) {
        0..=77 => random_write(rng),
        78..=79 => Op::BulkLoad {
            puts: (0..rng.gen_range(1..=12))
                .map(|_| (rng.gen_range(0..48), rng.gen_range(0..600)))
                .collect(),
        },
        80..=82 => Op::Get(rng.gen()),
        83..=84 => Op::WriteLog,
        85..=87 => Op::Scan,
        88..=93 => Op::Flush,
        94..=96 => Op::Compact,
        _ => Op::Reopen,
    }
}

/// Random batches (some synced), flushes, merges, compactions and
/// reopens; the power is cut at a random call each round, sometimes
/// tearing unsynced writes. After every cut: all synced acknowledged
/// writes present, the state one the writes passed through, verify clean.
/// Rounds continue on the same file system (recovery of recovery).
#[test]
fn power_loss_keeps_every_synced_write_and_no_half_batch() {
    let rounds = env_count("PITH_POWER_ROUNDS", 40);
    let seed = env_count("PITH_SEED", 0x5eed);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut d = Driver::new();
    for _ in 0..rounds {
        for _ in 0..rng.gen_range(5..40) {
            d.run(&random_op(&mut rng));
        }
        let cuts_before = d.summary().power_cuts;
        let tear = rng.gen_bool(0.5).then(|| rng.gen());
        d.run(&Op::PowerCut {
            after: rng.gen_range(1..400),
            tear,
        });
        for _ in 0..60 {
            if d.summary().power_cuts > cuts_before {
                break;
            }
            d.run(&random_op(&mut rng));
        }
        if d.summary().power_cuts == cuts_before {
            d.cut_power_now(tear);
        }
    }
    let s = d.summary();
    eprintln!("power loss (seed {seed}): {rounds} rounds, {s:?}");
    assert!(s.power_cuts >= rounds);
}

/// The first model trained from the live memtable while writes go on,
/// with the power cut at a random call meanwhile (in the writes, the model
/// file's creation, its manifest edit, or the flush after): after each
/// cut, every synced acknowledged write is there and verify is clean.
#[test]
fn power_loss_during_early_training_loses_nothing() {
    let rounds = env_count("PITH_POWER_ROUNDS", 40) / 4 + 2;
    let seed = env_count("PITH_SEED", 0x5eed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0xea71);
    let mut cuts = 0;
    for _ in 0..rounds {
        let mut d = Driver::with_options(early_training_options);
        d.run(&Op::PowerCut {
            after: rng.gen_range(20..400),
            tear: rng.gen_bool(0.5).then(|| rng.gen()),
        });
        for _ in 0..rng.gen_range(60..160) {
            d.run(&random_write(&mut rng));
        }
        d.run(&Op::Flush);
        cuts += d.summary().power_cuts;
        d.finish();
    }
    eprintln!("early training (seed {seed}): {rounds} databases, {cuts} power cuts");
    assert!(cuts > 0);
}

/// A fixed workload: writes synced and not, flushes, a compaction, a
/// clean reopen (after a flush, so open has no log to rebuild in the
/// background), more writes. Under `deterministic_options` it makes the
/// same calls in the same order on every run.
fn workload() -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(7);
    let mut ops = Vec::new();
    for i in 0..70 {
        ops.push(random_write(&mut rng));
        if i == 20 {
            ops.push(Op::Flush);
        }
        if i == 45 {
            ops.push(Op::Compact);
        }
        if i == 55 {
            ops.push(Op::Flush);
            ops.push(Op::Reopen);
        }
    }
    ops.push(Op::Flush);
    ops.push(Op::Scan);
    ops
}

/// A call site: the kind of call and the kind of file (`*.wal`, `MANIFEST`).
fn site(c: &Call) -> (CallKind, String) {
    let name = c
        .path
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let class = match name.rsplit_once('.') {
        Some((_, ext)) => format!("*.{ext}"),
        None => name,
    };
    (c.kind, class)
}

/// Fails each call of the workload in turn, with EIO and with ENOSPC: the
/// caller gets a typed error, nothing panics, and after the fault clears
/// and a reopen every acknowledged write is there (the driver checks).
#[test]
fn an_io_error_at_every_call_loses_no_acknowledged_write() {
    let ops = workload();
    // One clean run to count and classify the calls.
    let mut d = Driver::with_options(deterministic_options);
    let start = d.fault().calls();
    d.fault().record(true);
    for op in &ops {
        d.run(op);
    }
    let calls = d.fault().calls() - start;
    let clean_calls: Vec<Call> = d.fault().recorded();
    let sites: BTreeSet<(CallKind, String)> = d.fault().recorded().iter().map(site).collect();
    let mut failed_sites = BTreeSet::new();
    // Runs whose call i was not the clean run's call i: none, under
    // `deterministic_options` (the background threads work only while the
    // caller waits, and a job lets go of everything before it wakes the
    // caller), so "fail call i" means the same call in every run.
    let mut reordered = Vec::new();
    let mut errors = 0u64;
    for error in [Injected::Eio, Injected::NoSpace] {
        for i in 1..=calls {
            let mut d = Driver::with_options(deterministic_options);
            d.fault().record(true);
            let at = d.fault().calls() + i;
            d.run(&Op::FailCall {
                after: u16::try_from(i).expect("calls fit u16"),
                no_space: error == Injected::NoSpace,
            });
            let before = d.summary().failed_ops;
            for op in &ops {
                d.run(op);
            }
            d.finish();
            errors += d.summary().failed_ops - before;
            let failed = d.fault().recorded().into_iter().find(|c| c.index == at);
            let failed = failed.expect("the failing call was made");
            let clean = clean_calls.get((i - 1) as usize).map(site);
            if clean.as_ref() != Some(&site(&failed)) {
                reordered.push((error, i, clean, site(&failed)));
            }
            failed_sites.insert(site(&failed));
        }
    }
    eprintln!(
        "I/O errors: {calls} calls in the workload at {} call sites (kind, file); {} calls failed (EIO and ENOSPC each), {errors} surfaced as errors to the caller, sites failed: {}, runs whose failing call differed from the clean run's: {}",
        sites.len(),
        2 * calls,
        failed_sites.len(),
        reordered.len()
    );
    assert!(calls > 100, "the workload makes {calls} calls");
    assert!(
        reordered.is_empty(),
        "the workload's calls are deterministic; (error, call, clean run's site, failing run's site): {reordered:?}"
    );
    assert_eq!(failed_sites, sites, "every call site was failed");
}

/// Random operation sequences with injected errors and power cuts (the
/// in-tree run of the `api_sequence` fuzz target).
#[test]
fn random_api_sequences_with_faults_match_the_model() {
    let n = env_count("PITH_API_SEQUENCES", 60);
    let mut rng = StdRng::seed_from_u64(env_count("PITH_SEED", 11));
    for _ in 0..n {
        let len = rng.gen_range(10..300);
        let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        pith::fuzz::api::api_sequence(&data);
    }
}
