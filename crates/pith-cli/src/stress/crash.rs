//! `--kill-every`: the workload in a child process killed at random
//! times, and the check after each kill.
//!
//! The parent re-executes its own binary as `pith stress --child` with the
//! same workload arguments and the time left, reads the counters the child
//! prints on stdout (a `stats ...` line every 250 ms; counts made after the
//! last line before a kill are lost), and sends it SIGKILL after a random
//! time in `[S/2, 3S/2]`. It then reopens the database, which replays its
//! logs, and checks it whole against the expected state the child left
//! (`recover::reconcile`, where writes in flight may have landed or not),
//! settles that state and starts the next child. The child writes with
//! `WriteOptions::synced()`.
//!
//! Invariants: only one process opens the database at a time (the child
//! is dead or has exited before the parent reopens it; the engine's LOCK
//! file would refuse otherwise). A child that exits by itself must exit
//! successfully, and one still running well past its deadline is reported
//! as hung.
//!
//! Thread safety: the parent is single-threaded apart from one thread
//! reading the child's stdout, which shares only the latest counters
//! behind a mutex.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::model::mix;
use super::report::{self, Counts, Recoveries, Reporter, Values};
use super::worker::Run;
use super::{model_of, recover, workload, Config};
use crate::CliError;

/// How long past its deadline a child may run (its final check) before it
/// counts as hung.
const HANG_GRACE: Duration = Duration::from_secs(120);

/// How often a child reports its counters.
const REPORT_EVERY: Duration = Duration::from_millis(250);

fn io_error(what: &str) -> impl Fn(std::io::Error) -> CliError + '_ {
    move |source| CliError::Io {
        path: PathBuf::from(what),
        source,
    }
}

/// Opens the database, checks it against the expected state and closes it.
fn check(
    cfg: &Config,
    counts: &Counts,
    report: &Reporter,
    rec: &mut Recoveries,
) -> Result<(), CliError> {
    let expected = cfg.open_expected(true)?;
    let model = model_of(&expected);
    let db = cfg.open_db()?;
    let r = recover::reconcile(&db, &model, &expected, counts, report)?;
    rec.landed += r.landed;
    rec.lost += r.lost;
    rec.unknown += r.unknown;
    db.close()?;
    Ok(())
}

/// The parent of `--kill-every`: children until `cfg.seconds` pass.
pub fn parent(
    cfg: &Config,
    every: f64,
    counts: &Counts,
    report: &Reporter,
) -> Result<Recoveries, CliError> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(cfg.seconds);
    let mut rec = Recoveries::default();
    check(cfg, counts, report, &mut rec)?;
    let exe = std::env::current_exe().map_err(io_error("<current executable>"))?;
    let mut rng = StdRng::seed_from_u64(mix(cfg.seed ^ 0x6b69_6c6c));
    let mut last_tick = Instant::now();
    let mut round = 0u64;
    while report.count() == 0 {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining < Duration::from_millis(100) {
            break;
        }
        let kill_after = Duration::from_secs_f64(rng.gen_range(every / 2.0..=every * 1.5));
        let mut child = Command::new(&exe)
            .arg("stress")
            .arg("--child")
            .arg("--db")
            .arg(&cfg.db)
            .args([
                "--seconds",
                &format!("{:.3}", remaining.as_secs_f64()),
                "--threads",
                &cfg.threads.to_string(),
                "--keys",
                &cfg.keys.to_string(),
                "--seed",
                &mix(cfg.seed.wrapping_add(round)).to_string(),
                "--value-bytes",
                &cfg.value_bytes.to_string(),
                "--memtable-bytes",
                &cfg.memtable_bytes.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|source| CliError::Io {
                path: exe.clone(),
                source,
            })?;
        let latest: Arc<Mutex<Values>> = Arc::default();
        let reader = child.stdout.take().map(|out| {
            let latest = latest.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    match Counts::parse_line(&line) {
                        Some(v) => *latest.lock().unwrap_or_else(|p| p.into_inner()) = v,
                        None => eprintln!("{line}"),
                    }
                }
            })
        });
        let spawned = Instant::now();
        let mut hung = false;
        let status = loop {
            if let Some(status) = child.try_wait().map_err(io_error("<child>"))? {
                break status;
            }
            let t = spawned.elapsed();
            hung = t > remaining + HANG_GRACE;
            if t >= kill_after || hung {
                child.kill().map_err(io_error("<child>"))?;
                break child.wait().map_err(io_error("<child>"))?;
            }
            if last_tick.elapsed() >= Duration::from_secs(1) {
                let mut now = counts.get();
                let child_now = *latest.lock().unwrap_or_else(|p| p.into_inner());
                for (n, c) in now.iter_mut().zip(child_now) {
                    *n += c;
                }
                report::progress(
                    started.elapsed().as_secs_f64(),
                    cfg.seconds,
                    &now,
                    rec.restarts,
                );
                last_tick = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        if let Some(r) = reader {
            let _ = r.join();
        }
        counts.add_all(&latest.lock().unwrap_or_else(|p| p.into_inner()));
        match status.signal() {
            Some(libc::SIGKILL) if hung => {
                return Err(CliError::StressChild {
                    status: format!("ran {HANG_GRACE:?} past its deadline (hung?) and was killed"),
                })
            }
            Some(libc::SIGKILL) => rec.restarts += 1,
            _ if status.success() => {}
            _ => {
                return Err(CliError::StressChild {
                    status: status.to_string(),
                })
            }
        }
        check(cfg, counts, report, &mut rec)?;
        round += 1;
    }
    Ok(rec)
}

/// The child of `--kill-every`: the workload on the state the parent
/// checked, reporting counters on stdout.
pub fn child(cfg: &Config) -> Result<(), CliError> {
    let started = Instant::now();
    let mut expected = cfg.open_expected(false)?;
    let model = model_of(&expected);
    let db = cfg.open_db()?;
    expected.set_threads(cfg.threads)?;
    let counts = Counts::default();
    let report = Reporter::default();
    let send = || {
        let mut out = std::io::stdout().lock();
        // The parent may be gone; the run ends at its deadline regardless.
        let _ = writeln!(out, "{}", counts.line());
        let _ = out.flush();
    };
    let run = Run {
        db: &db,
        model: &model,
        expected: &expected,
        threads: cfg.threads,
        sync: true,
        deadline: started + Duration::from_secs_f64(cfg.seconds),
        counts: &counts,
        report: &report,
    };
    workload(&run, cfg.seed, REPORT_EVERY, send)?;
    if report.count() == 0 {
        recover::reconcile(&db, &model, &expected, &counts, &report)?;
    }
    send();
    db.close()?;
    report.error().map_or(Ok(()), Err)
}
