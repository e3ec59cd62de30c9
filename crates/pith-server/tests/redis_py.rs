//! redis-py, the Python client, against the server
//! (`tests/python/check_redis_py.py`): pipelines, transactions with WATCH,
//! `scan_iter`, RESP3.
//!
//! Needs a Python with redis-py: `PITH_PYTHON` (CI points it at a venv
//! with `pip install redis`) or `python3`. Without it the test says so and
//! passes, unless `PITH_REQUIRE_REDIS=1`.

mod common;

use std::process::Command;

use common::TestServer;
use pith_server::Config;

#[test]
fn redis_py_pipelines_transactions_and_scan_iter() {
    let python = std::env::var("PITH_PYTHON").unwrap_or_else(|_| "python3".into());
    let has_client = Command::new(&python)
        .args(["-c", "import redis"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_client {
        assert!(
            std::env::var_os("PITH_REQUIRE_REDIS").is_none(),
            "{python} cannot import redis (pip install redis) and PITH_REQUIRE_REDIS is set"
        );
        eprintln!("redis-py not importable by {python}: skipped");
        return;
    }
    let s = TestServer::start(Config::default());
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/check_redis_py.py"
    );
    let out = Command::new(&python)
        .arg(script)
        .arg(s.addr.port().to_string())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    s.stop();
}
