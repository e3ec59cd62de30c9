//! Redis's own tools against the server: `redis-cli` (commands, `--scan`,
//! `--pipe` mass insertion) and a few seconds of `redis-benchmark`.
//!
//! Needs Debian's `redis-tools` (`redis-cli`, `redis-benchmark`); without
//! them the tests say so and pass, unless `PITH_REQUIRE_REDIS=1` (CI).

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use common::{Client, TestServer, R};
use pith_server::Config;

fn have(tool: &str) -> bool {
    let found = Command::new(tool).arg("--version").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("PITH_REQUIRE_REDIS").is_none(),
            "{tool} is not installed and PITH_REQUIRE_REDIS is set"
        );
        eprintln!("{tool} not found: skipped (install redis-tools)");
    }
    found
}

fn cli(s: &TestServer, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &s.addr.port().to_string()])
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run redis-cli");
    if let Some(bytes) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(bytes)
            .expect("write");
    }
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "redis-cli {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn redis_cli_commands_scan_and_mass_insertion() {
    if !have("redis-cli") {
        return;
    }
    let s = TestServer::start(Config::default());
    assert_eq!(
        text(&cli(&s, &["SET", "greeting", "hello world"], None)),
        "OK\n"
    );
    assert_eq!(text(&cli(&s, &["GET", "greeting"], None)), "hello world\n");
    assert_eq!(text(&cli(&s, &["INCRBY", "n", "5"], None)), "5\n");
    // Mass insertion: RESP on stdin (redis-cli --pipe).
    let mut bulk = Vec::new();
    for i in 0..5000 {
        bulk.extend(Client::encode(&[
            b"SET",
            format!("user:{i:05}").as_bytes(),
            b"x",
        ]));
    }
    let piped = text(&cli(&s, &["--pipe"], Some(&bulk)));
    assert!(piped.contains("errors: 0, replies: 5000"), "{piped}");
    // --scan walks SCAN with MATCH.
    let scanned = text(&cli(&s, &["--scan", "--pattern", "user:0001*"], None));
    let mut keys: Vec<&str> = scanned.lines().collect();
    keys.sort_unstable();
    assert_eq!(keys.len(), 10, "{scanned}");
    assert_eq!(keys[0], "user:00010");
    assert_eq!(text(&cli(&s, &["DBSIZE"], None)), "5002\n");
    let info = text(&cli(&s, &["INFO", "pith"], None));
    assert!(info.contains("pith_compression_ratio:"), "{info}");
    s.stop();
}

#[test]
fn redis_benchmark_runs_clean() {
    if !have("redis-benchmark") {
        return;
    }
    let s = TestServer::start(Config::default());
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &s.addr.port().to_string()])
        .args([
            "-t",
            "set,get,incr,mset",
            "-n",
            "20000",
            "-c",
            "20",
            "-P",
            "8",
            "-r",
            "10000",
            "-q",
        ])
        .output()
        .expect("run redis-benchmark");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // It reads `save` and `appendonly` with CONFIG GET first.
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        !warnings.contains("Could not fetch server CONFIG"),
        "{warnings}"
    );
    for test in ["SET:", "GET:", "INCR:", "MSET (10 keys):"] {
        assert!(report.contains(test), "{test} missing: {report}");
    }
    let mut c = s.client();
    assert!(matches!(c.cmd(&["DBSIZE"]), R::Int(n) if n > 1000));
    s.stop();
}
