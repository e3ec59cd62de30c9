//! `pith stress` end to end, through the built binary: a short clean run
//! that resumes, the `--kill-every` crash loop, and a run that must fail
//! because a value was changed behind its back with `pith put`.

use std::path::Path;
use std::process::Output;

mod common;
use common::{pith, text};

/// The number after `label` in the summary.
fn figure(o: &Output, label: &str) -> u64 {
    let out = String::from_utf8_lossy(&o.stdout);
    out.lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in\n{}", text(o)))
}

fn stress(db: &Path, extra: &[&str]) -> Output {
    let db = db.to_str().expect("utf-8 temp path");
    let mut args = vec!["stress", "--db", db, "--threads", "2", "--keys", "2000"];
    args.extend_from_slice(extra);
    pith(&args)
}

#[test]
fn two_seconds_pass_and_a_rerun_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let o = stress(&db, &["--seconds", "2", "--seed", "7"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(figure(&o, "mismatches"), 0);
    assert!(figure(&o, "reads checked") > 1000, "{}", text(&o));
    assert!(
        figure(&o, "puts") > 0 && figure(&o, "backward scans") > 0,
        "{}",
        text(&o)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("seed 7"));
    assert!(dir.path().join("db.expected").exists());

    let again = stress(&db, &["--seconds", "1"]);
    assert!(again.status.success(), "{}", text(&again));
}

#[test]
fn kill_every_kills_recovers_and_checks() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let o = stress(
        &db,
        &["--seconds", "6", "--kill-every", "1", "--seed", "11"],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(figure(&o, "restarts") >= 1, "{}", text(&o));
    assert_eq!(figure(&o, "mismatches"), 0);
    assert!(figure(&o, "puts") > 0, "{}", text(&o));
}

#[test]
fn a_value_changed_behind_its_back_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let o = stress(&db, &["--seconds", "1", "--seed", "3"]);
    assert!(o.status.success(), "{}", text(&o));
    // A key the run left present, overwritten with foreign bytes.
    let db_arg = db.to_str().unwrap();
    let scan = pith(&["scan", "--db", db_arg, "--keys-only", "--limit", "1"]);
    assert!(scan.status.success(), "{}", text(&scan));
    let key = String::from_utf8(scan.stdout).unwrap().trim().to_string();
    assert!(key.starts_with('k'), "{key:?}");
    let put = pith(&["put", "--db", db_arg, &key, "junk"]);
    assert!(put.status.success(), "{}", text(&put));

    let o = stress(&db, &["--seconds", "1"]);
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("MISMATCH") && err.contains(&key) && err.contains("too short"),
        "{}",
        text(&o)
    );
    assert_eq!(figure(&o, "mismatches"), 1, "{}", text(&o));
}
