//! Sharding behind an existing proxy: three servers behind Debian's
//! `nutcracker` (twemproxy), used through it by a client and by
//! redis-benchmark. Keys spread over all three, each read back through
//! the proxy from the server that holds it.
//!
//! Needs `nutcracker` and `redis-benchmark` (Debian packages `nutcracker`,
//! `redis-tools`); without them the test says so and passes, unless
//! `PITH_REQUIRE_REDIS=1` (CI).

mod common;

use std::process::{Command, Stdio};

use common::{free_port, wait_for_port, Client, TestServer, R};
use pith_server::Config;

#[test]
fn three_servers_behind_nutcracker() {
    let have = |tool: &str| Command::new(tool).arg("--version").output().is_ok();
    if !have("nutcracker") || !have("redis-benchmark") {
        assert!(
            std::env::var_os("PITH_REQUIRE_REDIS").is_none(),
            "nutcracker or redis-benchmark is missing and PITH_REQUIRE_REDIS is set"
        );
        eprintln!("nutcracker or redis-benchmark not found: skipped");
        return;
    }
    let servers: Vec<TestServer> = (0..3)
        .map(|_| TestServer::start(Config::default()))
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let proxy_port = free_port();
    let backends: String = servers
        .iter()
        .enumerate()
        .map(|(i, s)| format!("    - 127.0.0.1:{}:1 pith{i}\n", s.addr.port()))
        .collect();
    let conf = dir.path().join("nutcracker.yml");
    std::fs::write(
        &conf,
        format!(
            "pith:\n  listen: 127.0.0.1:{proxy_port}\n  hash: fnv1a_64\n  distribution: ketama\n  redis: true\n  auto_eject_hosts: false\n  servers:\n{backends}"
        ),
    )
    .expect("write the proxy config");
    let mut proxy = Command::new("nutcracker")
        .arg("-c")
        .arg(&conf)
        .args(["-s", &free_port().to_string(), "-o"])
        .arg(dir.path().join("nutcracker.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nutcracker");
    wait_for_port(proxy_port, "nutcracker");
    let mut c = Client::connect(([127, 0, 0, 1], proxy_port).into());
    for i in 0..1000 {
        assert_eq!(
            c.cmd(&["SET", &format!("key:{i}"), &format!("v{i}")]),
            R::Simple("OK".into())
        );
    }
    assert_eq!(c.cmd(&["GET", "key:777"]), R::bulk("v777"));
    assert_eq!(
        c.cmd(&["MGET", "key:1", "key:2", "key:3", "nope"]),
        R::Array(vec![R::bulk("v1"), R::bulk("v2"), R::bulk("v3"), R::Nil])
    );
    assert_eq!(c.cmd(&["INCR", "key:counter"]), R::Int(1));
    let sizes: Vec<i64> = servers
        .iter()
        .map(|s| match s.client().cmd(&["DBSIZE"]) {
            R::Int(n) => n,
            other => panic!("DBSIZE: {other:?}"),
        })
        .collect();
    assert_eq!(sizes.iter().sum::<i64>(), 1001, "{sizes:?}");
    assert!(
        sizes.iter().all(|&n| n > 100),
        "keys spread over all three: {sizes:?}"
    );
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &proxy_port.to_string()])
        .args([
            "-t", "set,get", "-n", "20000", "-c", "20", "-r", "10000", "-q",
        ])
        .output()
        .expect("run redis-benchmark");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && report.contains("GET:"), "{report}");
    let _ = proxy.kill();
    let _ = proxy.wait();
    for s in servers {
        s.stop();
    }
}
