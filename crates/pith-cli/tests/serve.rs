//! `pith serve` as a process: SIGKILL under write load, then a restart
//! holds every acknowledged write (with `--appendfsync always`, and with
//! `everysec`, where the log records of writes are deferred and written
//! before the replies: gathered across connections with one I/O thread,
//! not with two); SIGTERM stops it cleanly.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Starts `pith serve` on `port` and waits until it answers there as
/// itself (its `INFO server` names its process): a free port found by
/// binding port 0 can be taken by another test's server before this one
/// binds it, and then a bare connect reaches that server, which another
/// test may kill at any moment. If this one exits at start (its port
/// taken), it is started again on another free port. Returns it and its
/// port.
fn serve(db: &std::path::Path, port: u16, settings: &[&str]) -> (Child, u16) {
    let mut port = port;
    for _attempt in 0..5 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pith"))
            .arg("serve")
            .arg("--db")
            .arg(db)
            .args(["--port", &port.to_string()])
            .args(settings)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start pith serve");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if serves_as(port, child.id()) {
                return (child, port);
            }
            if child.try_wait().expect("try_wait").is_some() {
                break;
            }
            assert!(Instant::now() < deadline, "pith serve did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        port = free_port();
    }
    panic!("pith serve exited at start five times");
}

/// Whether the server listening on `port` is process `pid`.
fn serves_as(port: u16, pid: u32) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")
        .is_err()
    {
        return false;
    }
    let mut r = BufReader::new(s);
    let mut head = String::new();
    let Some(len) = r
        .read_line(&mut head)
        .ok()
        .and_then(|_| head.trim_end().strip_prefix('$')?.parse::<usize>().ok())
    else {
        return false;
    };
    let mut body = vec![0; len];
    std::io::Read::read_exact(&mut r, &mut body).is_ok()
        && String::from_utf8_lossy(&body).contains(&format!("process_id:{pid}\r\n"))
}

/// Sends `SET key value`; true when acknowledged with +OK.
fn set(conn: &mut (TcpStream, BufReader<TcpStream>), key: &str, value: &str) -> bool {
    let req = format!(
        "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{value}\r\n",
        key.len(),
        value.len()
    );
    if conn.0.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut line = String::new();
    matches!(conn.1.read_line(&mut line), Ok(n) if n > 0) && line == "+OK\r\n"
}

fn get(conn: &mut (TcpStream, BufReader<TcpStream>), key: &str) -> Option<String> {
    let req = format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len());
    conn.0.write_all(req.as_bytes()).expect("send");
    let mut line = String::new();
    conn.1.read_line(&mut line).expect("reply");
    let len: i64 = line[1..line.len() - 2].parse().expect("bulk length");
    if len < 0 {
        return None;
    }
    let mut value = String::new();
    conn.1.read_line(&mut value).expect("value");
    Some(value.trim_end().to_string())
}

fn connect(port: u16) -> (TcpStream, BufReader<TcpStream>) {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let r = BufReader::new(s.try_clone().expect("clone"));
    (s, r)
}

#[test]
fn sigkill_under_load_loses_no_acknowledged_write() {
    let (mut server, _dir) = kill_under_load(&["--appendfsync", "always"]);
    // SIGTERM: a clean stop, exit status 0.
    let status = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
    let exit = server.0.wait().expect("wait");
    assert!(exit.success(), "pith serve after SIGTERM: {exit}");
}

#[test]
fn sigkill_loses_no_write_whose_log_record_was_gathered() {
    kill_under_load(&["--appendfsync", "everysec", "--io-threads", "1"]);
}

#[test]
fn sigkill_loses_no_write_whose_log_record_was_deferred() {
    kill_under_load(&["--appendfsync", "no", "--io-threads", "2"]);
}

/// A server process, killed and reaped when dropped (a failing test
/// leaves none behind).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a server with `settings`, kills it while four clients write,
/// restarts it (the same settings) and checks every acknowledged write;
/// returns the restarted server and its directory.
fn kill_under_load(settings: &[&str]) -> (Killed, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let (mut server, port) = serve(&db, free_port(), settings);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut conn = connect(port);
                let mut acked = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if !set(
                        &mut conn,
                        &format!("w{w}:{acked}"),
                        &format!("value {acked}"),
                    ) {
                        break;
                    }
                    acked += 1;
                }
                acked
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    server.kill().expect("SIGKILL");
    server.wait().expect("reap");
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<u64> = writers
        .into_iter()
        .map(|t| t.join().expect("writer"))
        .collect();
    assert!(
        acked.iter().all(|&n| n > 10),
        "writers made progress: {acked:?}"
    );
    let (server, port) = serve(&db, port, settings);
    let server = Killed(server);
    let mut conn = connect(port);
    for (w, &n) in acked.iter().enumerate() {
        for i in 0..n {
            assert_eq!(
                get(&mut conn, &format!("w{w}:{i}")).as_deref(),
                Some(format!("value {i}").as_str()),
                "acknowledged write w{w}:{i} of {n} lost ({settings:?})"
            );
        }
    }
    (server, dir)
}

/// `pith serve` is parsed on its own (main.rs's `serve_only`): its help and
/// its usage errors still name `pith serve`, a bad flag is a usage error
/// (exit 2), and `pith --help` still lists it.
#[test]
fn serve_arguments_parse_on_their_own() {
    let pith = || Command::new(env!("CARGO_BIN_EXE_pith"));
    let help = pith().args(["serve", "--help"]).output().expect("run pith");
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("Usage: pith serve [OPTIONS] --db <DB>"),
        "{text}"
    );
    assert!(text.contains("--appendfsync"), "{text}");
    let bad = pith()
        .args(["serve", "--bogus"])
        .output()
        .expect("run pith");
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("'--bogus'") && err.contains("pith serve"),
        "{err}"
    );
    let no_db = pith().args(["serve"]).output().expect("run pith");
    assert_eq!(no_db.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_db.stderr).contains("--db <DB>"));
    let top = pith().arg("--help").output().expect("run pith");
    let text = String::from_utf8_lossy(&top.stdout);
    assert!(
        text.contains("serve") && text.contains("Redis protocol"),
        "{text}"
    );
}
