//! TLS on `tls-port`: redis-cli with `--tls` against a self-signed
//! certificate, a client speaking clear text to the TLS port dropped
//! without harm to others, and start-up errors that name the file.
//!
//! Needs `redis-cli` built with TLS (Debian's is); without it the redis-cli
//! part says so and passes, unless `PITH_REQUIRE_REDIS=1` (CI).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{TestServer, R};
use pith_server::Config;

/// A self-signed certificate for localhost and 127.0.0.1, and its key,
/// as PEM files in `dir`.
fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let key = rcgen::generate_simple_self_signed(names).expect("self-signed certificate");
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, key.cert.pem()).expect("write cert");
    std::fs::write(&key_path, key.key_pair.serialize_pem()).expect("write key");
    (cert_path, key_path)
}

fn tls_config(cert: &Path, key: &Path) -> Config {
    Config {
        tls_cert_file: Some(cert.to_path_buf()),
        tls_key_file: Some(key.to_path_buf()),
        // 0: a free port; `Running::tls_addrs` says which.
        tls_port: 0,
        ..Config::default()
    }
}

fn has_redis_cli() -> bool {
    let found = Command::new("redis-cli").arg("--version").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("PITH_REQUIRE_REDIS").is_none(),
            "redis-cli is not installed and PITH_REQUIRE_REDIS is set"
        );
        eprintln!("redis-cli not found: the TLS client part is skipped");
    }
    found
}

#[test]
fn redis_cli_speaks_tls_and_clear_text_on_the_tls_port_is_dropped() {
    let certs = tempfile::tempdir().expect("tempdir");
    let (cert, key) = certificate(certs.path());
    let mut config = tls_config(&cert, &key);
    // The TLS port must differ from the plain one, which TestServer sets
    // to 0 (a free port) as well; pick the TLS port here.
    config.tls_port = common::free_port();
    let s = TestServer::start(config.clone());
    let tls_port = config.tls_port.to_string();
    if has_redis_cli() {
        let cli = |args: &[&str]| {
            let out = Command::new("redis-cli")
                .args(["--tls", "--cacert"])
                .arg(&cert)
                .args(["-h", "127.0.0.1", "-p", &tls_port])
                .args(args)
                .output()
                .expect("run redis-cli");
            assert!(
                out.status.success(),
                "redis-cli {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        assert_eq!(cli(&["PING"]), "PONG");
        assert_eq!(cli(&["SET", "secret", "over tls", "EX", "100"]), "OK");
        assert_eq!(cli(&["GET", "secret"]), "over tls");
        // Without the CA the certificate is refused: TLS is really on.
        let refused = Command::new("redis-cli")
            .args(["--tls", "-h", "127.0.0.1", "-p", &tls_port, "PING"])
            .output()
            .expect("run redis-cli");
        let said = String::from_utf8_lossy(&refused.stdout).to_string()
            + &String::from_utf8_lossy(&refused.stderr);
        assert!(!said.contains("PONG"), "{said}");
    }
    // Clear text on the TLS port: the handshake fails and the connection
    // closes; the plain port keeps serving.
    let mut raw = TcpStream::connect(("127.0.0.1", config.tls_port)).expect("connect");
    raw.set_read_timeout(Some(Duration::from_secs(15)))
        .expect("timeout");
    raw.write_all(b"*1\r\n$4\r\nPING\r\n").expect("write");
    let mut buf = Vec::new();
    let _ = raw.read_to_end(&mut buf);
    assert!(!String::from_utf8_lossy(&buf).contains("PONG"));
    let mut plain = s.client();
    assert_eq!(plain.cmd(&["PING"]), R::Simple("PONG".into()));
    if has_redis_cli() {
        assert_eq!(plain.cmd(&["GET", "secret"]), R::bulk("over tls"));
    }
    s.stop();
}

#[test]
fn a_tls_port_without_a_usable_certificate_does_not_start() {
    let certs = tempfile::tempdir().expect("tempdir");
    let (cert, key) = certificate(certs.path());
    let start = |config: Config| {
        let db = tempfile::tempdir().expect("tempdir");
        match pith_server::start(db.path(), Config { port: 0, ..config }) {
            Ok(running) => {
                let _ = running.stop();
                panic!("started")
            }
            Err(e) => e.to_string(),
        }
    };
    let mut no_key = tls_config(&cert, &key);
    no_key.tls_key_file = None;
    no_key.tls_port = common::free_port();
    assert!(start(no_key).contains("tls-cert-file and tls-key-file"));
    let missing = certs.path().join("missing.pem");
    let mut config = tls_config(&missing, &key);
    config.tls_port = common::free_port();
    let e = start(config);
    assert!(e.contains("missing.pem"), "{e}");
    // A key that is not the certificate's.
    let other = tempfile::tempdir().expect("tempdir");
    let (_, other_key) = certificate(other.path());
    let mut config = tls_config(&cert, &other_key);
    config.tls_port = common::free_port();
    let e = start(config);
    assert!(e.contains("do not make a TLS identity"), "{e}");
    // The key file given as the certificate: no certificate in it.
    let mut config = tls_config(&key, &key);
    config.tls_port = common::free_port();
    let e = start(config);
    assert!(e.contains("key.pem"), "{e}");
}
