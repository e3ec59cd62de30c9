//! A minimal RESP client for the server tests (blocking std sockets), and
//! a server started in-process on a free port.

#![allow(dead_code)] // Each test binary uses a different part.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use pith_server::{Config, Running};

/// A reply, as the client reads it (RESP2 and RESP3).
#[derive(Clone, Debug, PartialEq)]
pub enum R {
    Simple(String),
    Err(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<R>),
    Map(Vec<(R, R)>),
    Double(String),
    Bool(bool),
}

impl R {
    pub fn bulk(s: &str) -> R {
        R::Bulk(s.as_bytes().to_vec())
    }
}

/// A connection.
pub struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        Client {
            reader: BufReader::new(s.try_clone().expect("clone")),
            writer: s,
        }
    }

    /// Encodes `args` as a RESP array.
    pub fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("send");
    }

    /// Sends one command and reads its reply.
    pub fn cmd(&mut self, args: &[&str]) -> R {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.cmd_bytes(&args)
    }

    pub fn cmd_bytes(&mut self, args: &[&[u8]]) -> R {
        self.send_raw(&Self::encode(args));
        self.read().expect("a reply")
    }

    /// Reads one reply; `None` when the server closed the connection.
    pub fn read(&mut self) -> Option<R> {
        let mut line = Vec::new();
        if self.reader.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&line[1..line.len().saturating_sub(2)]).into_owned();
        let n = || text.parse::<i64>().expect("a number");
        Some(match line[0] {
            b'+' => R::Simple(text),
            b'-' => R::Err(text),
            b':' => R::Int(n()),
            b'$' if n() < 0 => R::Nil,
            b'$' => {
                let mut buf = vec![0; n() as usize + 2];
                self.reader.read_exact(&mut buf).ok()?;
                buf.truncate(n() as usize);
                R::Bulk(buf)
            }
            b'*' if n() < 0 => R::Nil,
            b'*' | b'~' => R::Array((0..n()).map(|_| self.read()).collect::<Option<_>>()?),
            b'%' => R::Map(
                (0..n())
                    .map(|_| Some((self.read()?, self.read()?)))
                    .collect::<Option<_>>()?,
            ),
            b'_' => R::Nil,
            b',' => R::Double(text),
            b'#' => R::Bool(text == "t"),
            b'=' => {
                let mut buf = vec![0; n() as usize + 2];
                self.reader.read_exact(&mut buf).ok()?;
                R::Bulk(buf[4..n() as usize].to_vec())
            }
            other => panic!("unknown reply type {:?}", char::from(other)),
        })
    }
}

/// A server on a temporary database and a free port.
pub struct TestServer {
    pub dir: tempfile::TempDir,
    pub running: Option<Running>,
    pub addr: SocketAddr,
}

impl TestServer {
    pub fn start(config: Config) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        Self::start_in(dir, config)
    }

    pub fn start_in(dir: tempfile::TempDir, config: Config) -> TestServer {
        // Several threads serve connections whatever the machine's cores
        // (the default follows them), so races between clients happen.
        let config = Config {
            port: 0,
            io_threads: config.io_threads.max(4),
            ..config
        };
        let running = pith_server::start(dir.path(), config).expect("start");
        let addr = running.addrs[0];
        TestServer {
            dir,
            running: Some(running),
            addr,
        }
    }

    pub fn client(&self) -> Client {
        Client::connect(self.addr)
    }

    /// Stops the server, keeping its directory. A stop that does not
    /// return within a minute fails the test by name instead of hanging
    /// the suite (a lost shutdown wake-up once hung CI for good).
    pub fn stop(self) -> tempfile::TempDir {
        self.stop_within(Duration::from_secs(60))
    }

    /// [`TestServer::stop`], failing the test when the stop takes longer
    /// than `limit`.
    pub fn stop_within(mut self, limit: Duration) -> tempfile::TempDir {
        if let Some(r) = self.running.take() {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(r.stop());
            });
            match rx.recv_timeout(limit) {
                Ok(stopped) => stopped.expect("stop"),
                Err(_) => panic!("the server did not stop within {limit:?}"),
            }
        }
        self.dir
    }
}

/// A free TCP port on loopback (free when asked; another process may take
/// it before it is used, which tests accept).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Waits up to 20 s until something listens on `port` (a tool started by
/// a test), panicking with `what` otherwise.
pub fn wait_for_port(port: u16, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !listening(port) {
        assert!(std::time::Instant::now() < deadline, "{what} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a connect to `port` reaches a listener: while nothing listens
/// there, Linux may give the connecting socket that same port and connect
/// it to itself, which is not a listener.
fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port))
        .and_then(|s| s.local_addr())
        .is_ok_and(|local| local.port() != port)
}
