//! The server over real sockets: the protocol (pipelining, inline
//! commands, RESP3), commands and their errors, transactions and WATCH,
//! atomic read-modify-write under concurrency, AUTH and protected mode,
//! limits and garbage input, and a restart that keeps acknowledged writes.

mod common;

use std::io::Read;
use std::time::Duration;

use common::{Client, TestServer, R};
use pith_server::{Appendfsync, Config};

fn ok() -> R {
    R::Simple("OK".into())
}

#[test]
fn pipelined_inline_and_resp3() {
    let s = TestServer::start(Config::default());
    let mut c = s.client();
    // Three commands in one write, replies in order.
    let mut bytes = Client::encode(&[b"SET", b"k", b"v"]);
    bytes.extend(Client::encode(&[b"GET", b"k"]));
    bytes.extend(b"PING \"hello world\"\r\n");
    c.send_raw(&bytes);
    assert_eq!(c.read(), Some(ok()));
    assert_eq!(c.read(), Some(R::bulk("v")));
    assert_eq!(c.read(), Some(R::bulk("hello world")));
    // RESP3 after HELLO 3: a map reply, a null of its own.
    let hello = c.cmd(&["HELLO", "3"]);
    let R::Map(fields) = hello else {
        panic!("HELLO 3 answers a map: {hello:?}")
    };
    let names: Vec<R> = fields.iter().map(|(k, _)| k.clone()).collect();
    for want in [
        "server", "version", "proto", "id", "mode", "role", "modules",
    ] {
        assert!(names.contains(&R::bulk(want)), "{want} missing from HELLO");
    }
    assert_eq!(c.cmd(&["GET", "missing"]), R::Nil);
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "1.5"]), R::bulk("1.5"));
    assert!(matches!(c.cmd(&["CONFIG", "GET", "port"]), R::Map(_)));
    assert_eq!(
        c.cmd(&["HELLO", "4"]),
        R::Err("NOPROTO unsupported protocol version".into())
    );
    s.stop();
}

#[test]
fn string_and_keyspace_commands() {
    let s = TestServer::start(Config::default());
    let mut c = s.client();
    assert_eq!(c.cmd(&["SET", "a", "1", "NX"]), ok());
    assert_eq!(c.cmd(&["SET", "a", "2", "NX"]), R::Nil);
    assert_eq!(c.cmd(&["SET", "a", "3", "XX", "GET"]), R::bulk("1"));
    assert_eq!(c.cmd(&["INCRBY", "a", "10"]), R::Int(13));
    assert_eq!(
        c.cmd(&["INCR", "nonnum"]),
        R::Int(1),
        "an absent key counts from 0"
    );
    c.cmd(&["SET", "s", "hello"]);
    assert_eq!(
        c.cmd(&["INCR", "s"]),
        R::Err("ERR value is not an integer or out of range".into())
    );
    assert_eq!(c.cmd(&["SETRANGE", "s", "7", "xy"]), R::Int(9));
    assert_eq!(c.cmd(&["GET", "s"]), R::Bulk(b"hello\0\0xy".to_vec()));
    assert_eq!(c.cmd(&["GETRANGE", "s", "-2", "-1"]), R::bulk("xy"));
    assert_eq!(c.cmd(&["STRLEN", "s"]), R::Int(9));
    assert_eq!(c.cmd(&["MSETNX", "s", "x", "t", "y"]), R::Int(0));
    assert_eq!(c.cmd(&["EXISTS", "s", "s", "t"]), R::Int(2));
    assert_eq!(
        c.cmd(&["RENAME", "nope", "x"]),
        R::Err("ERR no such key".into())
    );
    assert_eq!(c.cmd(&["RENAME", "s", "s2"]), ok());
    assert_eq!(c.cmd(&["TYPE", "s2"]), R::Simple("string".into()));
    assert_eq!(c.cmd(&["TYPE", "s"]), R::Simple("none".into()));
    assert_eq!(c.cmd(&["DEL", "s2", "s2", "zz"]), R::Int(1));
    for i in 0..25 {
        c.cmd(&["SET", &format!("user:{i:02}"), "x"]);
    }
    let R::Array(keys) = c.cmd(&["KEYS", "user:1?"]) else {
        panic!("KEYS answers an array")
    };
    assert_eq!(keys.len(), 10);
    // SCAN walks every key once, in pages.
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    loop {
        let R::Array(reply) = c.cmd(&["SCAN", &cursor, "MATCH", "user:*", "COUNT", "7"]) else {
            panic!("SCAN answers an array")
        };
        let (R::Bulk(next), R::Array(page)) = (&reply[0], &reply[1]) else {
            panic!("SCAN's reply: {reply:?}")
        };
        seen.extend(page.iter().cloned());
        cursor = String::from_utf8(next.clone()).expect("cursor");
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 25);
    assert_eq!(c.cmd(&["DBSIZE"]), R::Int(25 + 2), "user:*, a and nonnum");
    assert_eq!(
        c.cmd(&["PITH.SEARCH", "user:0[0-4]", "LIMIT", "3"]),
        R::Array(vec![
            R::bulk("user:00"),
            R::bulk("user:01"),
            R::bulk("user:02")
        ])
    );
    assert_eq!(c.cmd(&["FLUSHDB"]), ok());
    assert_eq!(c.cmd(&["DBSIZE"]), R::Int(0));
    assert_eq!(
        c.cmd(&["NOSUCH", "a", "b"]),
        R::Err("ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' ".into())
    );
    assert_eq!(
        c.cmd(&["GET"]),
        R::Err("ERR wrong number of arguments for 'get' command".into())
    );
    assert_eq!(
        c.cmd(&["SELECT", "1"]),
        R::Err("ERR DB index is out of range".into())
    );
    s.stop();
}

#[test]
fn transactions_are_atomic_and_watch_aborts() {
    let s = TestServer::start(Config::default());
    let (mut a, mut b) = (s.client(), s.client());
    assert_eq!(a.cmd(&["MULTI"]), ok());
    assert_eq!(a.cmd(&["SET", "x", "1"]), R::Simple("QUEUED".into()));
    assert_eq!(a.cmd(&["INCR", "x"]), R::Simple("QUEUED".into()));
    assert_eq!(
        b.cmd(&["GET", "x"]),
        R::Nil,
        "nothing is visible before EXEC"
    );
    assert_eq!(a.cmd(&["EXEC"]), R::Array(vec![ok(), R::Int(2)]));
    assert_eq!(b.cmd(&["GET", "x"]), R::bulk("2"));
    // A queued command with the wrong arity dooms the transaction.
    a.cmd(&["MULTI"]);
    assert!(matches!(a.cmd(&["GET"]), R::Err(_)));
    assert_eq!(
        a.cmd(&["EXEC"]),
        R::Err("EXECABORT Transaction discarded because of previous errors.".into())
    );
    // WATCH: another client's write aborts EXEC.
    assert_eq!(a.cmd(&["WATCH", "x"]), ok());
    b.cmd(&["SET", "x", "changed"]);
    a.cmd(&["MULTI"]);
    a.cmd(&["SET", "x", "mine"]);
    assert_eq!(a.cmd(&["EXEC"]), R::Nil);
    assert_eq!(b.cmd(&["GET", "x"]), R::bulk("changed"));
    // Untouched, WATCH lets EXEC through.
    a.cmd(&["WATCH", "x"]);
    a.cmd(&["MULTI"]);
    a.cmd(&["SET", "x", "mine"]);
    assert_eq!(a.cmd(&["EXEC"]), R::Array(vec![ok()]));
    assert_eq!(a.cmd(&["EXEC"]), R::Err("ERR EXEC without MULTI".into()));
    s.stop();
}

#[test]
fn concurrent_increments_lose_nothing() {
    let s = TestServer::start(Config::default());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let mut c = s.client();
            std::thread::spawn(move || {
                for _ in 0..500 {
                    assert!(matches!(c.cmd(&["INCR", "n"]), R::Int(_)));
                    assert!(matches!(c.cmd(&["APPEND", "log", "x"]), R::Int(_)));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
    let mut c = s.client();
    assert_eq!(c.cmd(&["GET", "n"]), R::bulk("2000"));
    assert_eq!(c.cmd(&["STRLEN", "log"]), R::Int(2000));
    s.stop();
}

#[test]
fn auth_is_required_and_public_binds_need_a_password() {
    let s = TestServer::start(Config {
        requirepass: Some("s3cret".into()),
        ..Config::default()
    });
    let mut c = s.client();
    assert_eq!(
        c.cmd(&["GET", "k"]),
        R::Err("NOAUTH Authentication required.".into())
    );
    assert!(matches!(c.cmd(&["AUTH", "wrong"]), R::Err(e) if e.starts_with("WRONGPASS")));
    assert_eq!(c.cmd(&["AUTH", "s3cret"]), ok());
    assert_eq!(c.cmd(&["GET", "k"]), R::Nil);
    let mut d = s.client();
    assert!(matches!(
        d.cmd(&["HELLO", "3", "AUTH", "default", "s3cret"]),
        R::Map(_)
    ));
    s.stop();
    let dir = tempfile::tempdir().expect("tempdir");
    let refused = pith_server::start(
        dir.path(),
        Config {
            bind: vec!["0.0.0.0".into()],
            port: 0,
            ..Config::default()
        },
    );
    let Err(e) = refused else {
        panic!("a public bind without a password must be refused")
    };
    assert!(e.to_string().contains("protected mode"), "{e}");
}

#[test]
fn garbage_and_oversized_frames_close_one_connection_only() {
    let s = TestServer::start(Config {
        proto_max_bulk_len: 1 << 20,
        ..Config::default()
    });
    let mut bystander = s.client();
    bystander.cmd(&["SET", "k", "v"]);
    let garbage: [&[u8]; 6] = [
        b"*x\r\n",
        b"*1\r\n+GET\r\n",
        b"*1\r\n$99999999\r\n",
        b"*2\r\n$3\r\nGET\r\n$1\r\nkXX",
        b"SET \"unclosed\r\n",
        b"*99999999999999999999\r\n",
    ];
    for g in garbage {
        let mut c = s.client();
        c.send_raw(g);
        let reply = c.read();
        assert!(
            matches!(&reply, Some(R::Err(e)) if e.starts_with("ERR Protocol error")),
            "{g:?}: {reply:?}"
        );
        assert_eq!(c.read(), None, "{g:?}: the connection closes");
    }
    // Random bytes: the server answers or closes, never hangs or dies.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..200 {
        let mut c = s.client();
        let bytes: Vec<u8> = (0..(x % 300) as usize)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        c.send_raw(&bytes);
        c.send_raw(b"\r\n");
        drop(c);
    }
    // A query buffer that grows without a whole request is cut off.
    assert_eq!(bystander.cmd(&["GET", "k"]), R::bulk("v"));
    s.stop();
}

#[test]
fn a_restart_keeps_every_acknowledged_write() {
    let s = TestServer::start(Config {
        appendfsync: Appendfsync::Always,
        ..Config::default()
    });
    let mut c = s.client();
    for i in 0..300 {
        assert_eq!(c.cmd(&["SET", &format!("k{i}"), &format!("v{i}")]), ok());
    }
    c.cmd(&["INCRBY", "n", "41"]);
    drop(c);
    let dir = s.stop();
    let s = TestServer::start_in(dir, Config::default());
    let mut c = s.client();
    assert_eq!(c.cmd(&["GET", "k299"]), R::bulk("v299"));
    assert_eq!(c.cmd(&["INCR", "n"]), R::Int(42));
    assert_eq!(c.cmd(&["DBSIZE"]), R::Int(301));
    s.stop();
}

#[test]
fn shutdown_stops_the_server() {
    let s = TestServer::start(Config::default());
    let mut c = s.client();
    c.cmd(&["SET", "k", "v"]);
    c.send_raw(&Client::encode(&[b"SHUTDOWN"]));
    let mut rest = Vec::new();
    let _ = std::net::TcpStream::connect(s.addr).map(|mut t| {
        t.set_read_timeout(Some(Duration::from_secs(5))).ok();
        t.read_to_end(&mut rest)
    });
    let mut running = s.running;
    if let Some(r) = running.as_mut() {
        r.wait().expect("the server stopped cleanly");
    }
}

/// A pipeline's writes share one engine batch: later commands in it read
/// what earlier ones wrote, a MULTI or EXEC in the middle commits what
/// came before, and every reply says what happened.
#[test]
fn pipelined_writes_read_their_own_and_commit_before_exec() {
    let s = TestServer::start(Config::default());
    let mut c = s.client();
    let mut bytes = Vec::new();
    for args in [
        &[&b"SET"[..], b"a", b"1"][..],
        &[b"INCR", b"a"],
        &[b"GET", b"a"],
        &[b"MULTI"],
        &[b"INCR", b"a"],
        &[b"EXEC"],
        &[b"APPEND", b"a", b"x"],
        &[b"INCR", b"a"],
        &[b"GET", b"a"],
    ] {
        bytes.extend(Client::encode(args));
    }
    c.send_raw(&bytes);
    let replies: Vec<R> = (0..9).map(|_| c.read().expect("reply")).collect();
    assert_eq!(
        replies,
        vec![
            ok(),
            R::Int(2),
            R::bulk("2"),
            ok(),
            R::Simple("QUEUED".into()),
            R::Array(vec![R::Int(3)]),
            R::Int(2),
            R::Err("ERR value is not an integer or out of range".into()),
            R::bulk("3x"),
        ]
    );
    assert_eq!(s.client().cmd(&["GET", "a"]), R::bulk("3x"));
    s.stop();
}

/// CLIENT KILL closes another client's connection; `timeout` closes an
/// idle one; `maxclients` refuses one more.
#[test]
fn clients_are_killed_timed_out_and_limited() {
    let s = TestServer::start(Config {
        timeout: 1,
        maxclients: 3,
        ..Config::default()
    });
    let (mut a, mut b) = (s.client(), s.client());
    let R::Int(id) = a.cmd(&["CLIENT", "ID"]) else {
        panic!("CLIENT ID answers an integer")
    };
    assert_eq!(b.cmd(&["CLIENT", "KILL", "ID", &id.to_string()]), R::Int(1));
    a.send_raw(&Client::encode(&[b"PING"]));
    assert_eq!(a.read(), None, "a killed client is disconnected");
    // With b connected, at most two more fit under maxclients 3.
    let mut extra: Vec<Client> = (0..4).map(|_| s.client()).collect();
    let replies: Vec<R> = extra.iter_mut().map(|c| c.cmd(&["PING"])).collect();
    let refused = replies
        .iter()
        .filter(|r| matches!(r, R::Err(m) if m.contains("max number of clients reached")))
        .count();
    assert!(refused >= 2, "{replies:?}");
    drop(extra);
    // Idle past `timeout`: closed.
    std::thread::sleep(Duration::from_millis(2500));
    b.send_raw(&Client::encode(&[b"PING"]));
    assert_eq!(b.read(), None, "an idle client is closed after timeout");
    s.stop();
}

/// Stops the server while a thread keeps connecting, many times; each stop
/// must return within seconds. A stop that came while the accept loop was
/// busy with a connection was once lost and `stop` waited forever (seen
/// once in CI, in the garbage-frames test); that window is microseconds
/// wide and this test did not hit it in 200 rounds, so the deterministic
/// check is `server::tests::a_raise_before_the_wait_is_not_lost`. This one
/// covers connections that arrive while shutdown runs.
#[test]
fn stop_returns_while_clients_keep_connecting() {
    for round in 0..30 {
        let s = TestServer::start(Config::default());
        let addr = s.addr;
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let connector = {
            let done = done.clone();
            std::thread::spawn(move || {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::net::TcpStream::connect(addr);
                }
            })
        };
        std::thread::sleep(Duration::from_millis(5 + round % 7));
        // No connection may come after the stop to wake the loop.
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        eprintln!("round {round}");
        let _dir = s.stop_within(Duration::from_secs(20));
        let _ = connector.join();
    }
}
