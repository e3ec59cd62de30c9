//! `pith-server`: PithDB behind the Redis protocol, so every Redis client
//! (redis-cli, redis-py, go-redis, Jedis, ...) reaches it unchanged.
//!
//! ```no_run
//! use pith_server::{Config, serve_blocking};
//!
//! let config = Config { port: 6380, ..Config::default() };
//! serve_blocking(std::path::Path::new("/tmp/pith-db"), config)?;
//! # Ok::<(), pith_server::ServerError>(())
//! ```
//!
//! Layers, each importing only those before it: `resp` (the protocol),
//! `config`, `glob`, `store` (the keyspace on the engine: one writer at a
//! time, WATCH), `server` (shared state), `cmd` (the command table),
//! `session` (AUTH, HELLO, MULTI/EXEC), `conn` (a tokio connection loop),
//! `tls` (the `tls-port` listener's rustls configuration), then this file
//! (listening, signals, shutdown).
//!
//! What runs: RESP2 and RESP3 (after `HELLO 3`), inline commands,
//! pipelining, TLS on a port of its own; the string, keyspace and expiry
//! commands, transactions, and the server commands clients need (see
//! `cmd`).

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod cmd;
pub mod config;
mod conn;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
pub mod glob;
mod memory;
pub mod resp;
mod server;
mod session;
mod store;
mod tls;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use config::{Appendfsync, Config};
pub use resp::REDIS_VERSION;

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The database failed to open or close.
    #[error("{0}")]
    Db(#[from] pith::Error),
    /// Listening failed.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Settings that are refused (a public bind without a password, ...).
    #[error("{0}")]
    Config(String),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

/// A running server: its address, and a way to stop it.
pub struct Running {
    server: std::sync::Weak<Server>,
    /// Addresses listened on (with the port the OS chose for port 0).
    pub addrs: Vec<SocketAddr>,
    /// Addresses listened on for TLS (empty without `tls-port`).
    pub tls_addrs: Vec<SocketAddr>,
    done: tokio::sync::oneshot::Receiver<Result<(), ServerError>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

use server::Server;

impl Running {
    /// Asks the server to stop (as SHUTDOWN does) and waits until the
    /// database is closed.
    pub fn stop(mut self) -> Result<(), ServerError> {
        if let Some(server) = self.server.upgrade() {
            server.begin_shutdown();
        }
        self.wait()
    }

    /// Waits until the server stops (SHUTDOWN, SIGTERM, or [`Running::stop`]).
    pub fn wait(&mut self) -> Result<(), ServerError> {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        match self.done.try_recv() {
            Ok(r) => r,
            Err(_) => Ok(()),
        }
    }
}

/// Checks settings that must hold before anything is opened; the TLS
/// acceptor when `tls-port` is set.
fn check(config: &Config) -> Result<Option<tokio_rustls::TlsAcceptor>, ServerError> {
    if !config.loopback_only() && config.requirepass.is_none() {
        return Err(ServerError::Config(format!(
            "refusing to listen on {} without a password (protected mode): set requirepass, or bind 127.0.0.1",
            config.bind.join(" ")
        )));
    }
    if config.tls_port == 0 {
        return Ok(None);
    }
    match (&config.tls_cert_file, &config.tls_key_file) {
        (Some(cert), Some(key)) => tls::acceptor(cert, key)
            .map(Some)
            .map_err(ServerError::Config),
        _ => Err(ServerError::Config(
            "tls-port needs tls-cert-file and tls-key-file".into(),
        )),
    }
}

/// A listening socket, and the TLS acceptor when it is the TLS port.
type Listener = (tokio::net::TcpListener, Option<tokio_rustls::TlsAcceptor>);

/// Opens the database in `dir` and serves it on a thread of its own;
/// returns once it listens.
pub fn start(dir: &Path, config: Config) -> Result<Running, ServerError> {
    let tls = check(&config)?;
    memory::fix_mmap_threshold();
    memory::limit_arenas(config.malloc_arenas);
    let db = pith::DB::open(dir, config.engine_options())?;
    let store = store::Store::new(db, config.appendfsync.write_options());
    let server = Arc::new(Server::new(store, config.clone()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.io_threads.max(1))
        .enable_all()
        .thread_name("pith-serve")
        .build()
        .map_err(ServerError::Runtime)?;
    let listeners = runtime.block_on(async {
        let mut out: Vec<Listener> = Vec::new();
        let ports =
            std::iter::once((config.port, None)).chain(tls.map(|t| (config.tls_port, Some(t))));
        for (port, tls) in ports {
            for host in &config.bind {
                let host = host.trim_start_matches('-');
                let addr = match host.contains(':') {
                    true => format!("[{host}]:{port}"),
                    false => format!("{host}:{port}"),
                };
                let l = tokio::net::TcpListener::bind(&addr)
                    .await
                    .map_err(|source| ServerError::Listen { addr, source })?;
                out.push((l, tls.clone()));
            }
        }
        Ok::<_, ServerError>(out)
    })?;
    let addrs = listeners
        .iter()
        .filter(|l| l.1.is_none())
        .filter_map(|l| l.0.local_addr().ok())
        .collect();
    let tls_addrs = listeners
        .iter()
        .filter(|l| l.1.is_some())
        .filter_map(|l| l.0.local_addr().ok())
        .collect();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let shared = server.clone();
    let thread = std::thread::Builder::new()
        .name("pith-serve-main".into())
        .spawn(move || {
            let result = runtime.block_on(run(shared.clone(), listeners));
            // Connections are gone (or were given `run`'s grace period);
            // a blocking task still running (a log sync on a stuck disk)
            // is left behind after a while rather than waited for.
            runtime.shutdown_timeout(Duration::from_secs(10));
            // The last handle closes the database; were one left (a task
            // left behind above), its drop closes the database later.
            let closed = match Arc::try_unwrap(shared) {
                Ok(server) => server
                    .into_store()
                    .into_db()
                    .close()
                    .map_err(ServerError::from),
                Err(_) => Ok(()),
            };
            let _ = tx.send(result.and(closed));
        })
        .map_err(ServerError::Runtime)?;
    Ok(Running {
        server: Arc::downgrade(&server),
        addrs,
        tls_addrs,
        done: rx,
        thread: Some(thread),
    })
}

/// Serves until SHUTDOWN or SIGTERM/SIGINT; the `pith serve` entry point.
pub fn serve_blocking(dir: &Path, config: Config) -> Result<(), ServerError> {
    let mut running = start(dir, config)?;
    for a in &running.addrs {
        eprintln!("pith serve: {} on {a}", PathBuf::from(dir).display());
    }
    for a in &running.tls_addrs {
        eprintln!("pith serve: {} on {a} (TLS)", PathBuf::from(dir).display());
    }
    running.wait()
}

async fn run(server: Arc<Server>, listeners: Vec<Listener>) -> Result<(), ServerError> {
    let mut tasks = tokio::task::JoinSet::new();
    for (listener, tls) in listeners {
        let server = server.clone();
        tasks.spawn(accept_loop(server, listener, tls));
    }
    let syncer = tokio::spawn(every_second(server.clone()));
    let signals = tokio::spawn(stop_on_signal(server.clone()));
    while tasks.join_next().await.is_some() {}
    syncer.abort();
    signals.abort();
    // Give connections a moment to finish their replies.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !store::lock(&server.clients).is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

async fn accept_loop(
    server: Arc<Server>,
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = server::raised(&server.stopping, &server.shutdown) => return,
        };
        let Ok((mut stream, addr)) = accepted else {
            // Out of file descriptors and the like: back off, go on.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        match server.connect(addr) {
            Some(entry) => match &tls {
                None => {
                    tokio::spawn(conn::serve(server.clone(), stream, entry));
                }
                Some(acceptor) => {
                    let (server, acceptor) = (server.clone(), acceptor.clone());
                    tokio::spawn(async move {
                        let limit = Duration::from_secs(tls::HANDSHAKE_SECONDS);
                        match tokio::time::timeout(limit, acceptor.accept(stream)).await {
                            Ok(Ok(session)) => conn::serve(server, session, entry).await,
                            // A failed or slow handshake: the client goes.
                            _ => server.disconnect(entry.id),
                        }
                    });
                }
            },
            // Shutdown began (`connect` looks under the clients' lock, so
            // no client registers after `begin_shutdown` went through
            // them): the new connection just goes.
            None if server.stopping.load(std::sync::atomic::Ordering::Acquire) => return,
            None if tls.is_some() => {
                // No error reply in clear text on a TLS port.
                drop(stream);
            }
            None => {
                use tokio::io::AsyncWriteExt;
                let _ = stream
                    .write_all(b"-ERR max number of clients reached\r\n")
                    .await;
            }
        }
    }
}

/// Once a second: syncs the log when `appendfsync everysec` is the policy
/// (checked each tick, so CONFIG SET takes effect), and returns freed heap
/// memory to the system once a flush or merge has finished (the segment
/// list changed since the last tick; see `memory`), on that tick and the
/// next.
async fn every_second(server: Arc<Server>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut segments: Vec<u64> = Vec::new();
    let mut trims_left = 0;
    loop {
        tick.tick().await;
        let policy = store::lock(&server.config).appendfsync;
        if policy == Appendfsync::Everysec {
            let s = server.clone();
            let _ = tokio::task::spawn_blocking(move || s.store.db().sync_wal()).await;
        }
        // A look at the current state: no file is read.
        let now = server.store.db().segment_numbers();
        if now != segments {
            segments = now;
            // This tick and the next: the build's thread may still be
            // letting go of the memtable when the list changes.
            trims_left = 2;
        }
        if trims_left > 0 {
            trims_left -= 1;
            let _ = tokio::task::spawn_blocking(memory::release_free_memory).await;
        }
    }
}

async fn stop_on_signal(server: Arc<Server>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    server.begin_shutdown();
}
