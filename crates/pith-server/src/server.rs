//! What all connections share: the store, the settings, the clients, SCAN
//! cursors and counters; and each connection's own [`SessionInfo`].
//!
//! Thread safety: everything here is behind a mutex or atomic; no lock is
//! held across an await point or across another of these locks, except the
//! store's write lock, which nests outside all of them.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::config::Config;
use crate::store::{lock, Store};

/// The server's shared state.
pub struct Server {
    /// The keyspace.
    pub store: Store,
    /// Settings (CONFIG GET/SET).
    pub config: Mutex<Config>,
    /// Connected clients, by id.
    pub clients: Mutex<BTreeMap<u64, Arc<ClientEntry>>>,
    /// SCAN cursors.
    pub cursors: Cursors,
    /// Set by SHUTDOWN and SIGTERM.
    pub shutdown: tokio::sync::Notify,
    /// True once shutdown began.
    pub stopping: AtomicBool,
    /// Counters for INFO.
    pub stats: Counters,
    /// A connection yields to the others before writing the log, so one
    /// log write serves every connection that ran meanwhile (`conn.rs`):
    /// true with one thread serving connections, where that paid;
    /// measured with two, the extra pass through the scheduler cost more
    /// than the log writes it saved.
    pub gather_log_writes: bool,
    started: Instant,
    next_client: AtomicU64,
    rng: AtomicU64,
}

/// INFO's counters.
#[derive(Default)]
pub struct Counters {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections refused (maxclients).
    pub rejected: AtomicU64,
    /// Commands run.
    pub commands: AtomicU64,
    /// Bytes read from clients.
    pub net_in: AtomicU64,
    /// Bytes written to clients.
    pub net_out: AtomicU64,
}

/// One connected client as CLIENT LIST shows it and CLIENT KILL reaches it.
pub struct ClientEntry {
    /// CLIENT ID.
    pub id: u64,
    /// Peer address.
    pub addr: SocketAddr,
    /// When it connected.
    pub since: Instant,
    /// CLIENT SETNAME, SETINFO and the last command, for CLIENT LIST.
    pub info: Mutex<ClientShown>,
    /// Set by CLIENT KILL: the connection closes before its next command.
    pub killed: AtomicBool,
    /// Wakes the connection when killed.
    pub kill: tokio::sync::Notify,
}

/// The parts of a client CLIENT LIST prints that change.
#[derive(Default)]
pub struct ClientShown {
    /// CLIENT SETNAME.
    pub name: Option<Vec<u8>>,
    /// CLIENT SETINFO LIB-NAME.
    pub lib_name: Option<Vec<u8>>,
    /// CLIENT SETINFO LIB-VER.
    pub lib_ver: Option<Vec<u8>>,
    /// The last command's name.
    pub last: &'static str,
    /// Protocol version.
    pub proto: u8,
}

/// A connection's state that commands change.
pub struct SessionInfo {
    /// CLIENT ID.
    pub id: u64,
    /// Protocol version: 2, or 3 after HELLO 3.
    pub proto: u8,
    /// AUTH succeeded (or no password is set).
    pub authed: bool,
    /// The registry entry.
    pub entry: Arc<ClientEntry>,
}

impl Server {
    /// A server on `store` with `config`.
    pub fn new(store: Store, config: Config) -> Server {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9, |d| d.as_nanos() as u64);
        Server {
            store,
            gather_log_writes: config.io_threads == 1,
            config: Mutex::new(config),
            clients: Mutex::new(BTreeMap::new()),
            cursors: Cursors::default(),
            shutdown: tokio::sync::Notify::new(),
            stopping: AtomicBool::new(false),
            stats: Counters::default(),
            started: Instant::now(),
            next_client: AtomicU64::new(1),
            rng: AtomicU64::new(seed | 1),
        }
    }

    /// The store, once the server is done.
    pub fn into_store(self) -> Store {
        self.store
    }

    /// Seconds since start.
    pub fn uptime(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// Registers a new client; `None` when `maxclients` are connected or
    /// shutdown began. (A client registered before [`begin_shutdown`]
    /// looks at the list is killed by it; one after sees `stopping`.)
    ///
    /// [`begin_shutdown`]: Server::begin_shutdown
    pub fn connect(&self, addr: SocketAddr) -> Option<Arc<ClientEntry>> {
        let max = lock(&self.config).maxclients;
        let mut clients = lock(&self.clients);
        if self.stopping.load(Ordering::Acquire) {
            return None;
        }
        if clients.len() >= max {
            self.stats.rejected.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let entry = Arc::new(ClientEntry {
            id: self.next_client.fetch_add(1, Ordering::Relaxed),
            addr,
            since: Instant::now(),
            info: Mutex::new(ClientShown {
                proto: 2,
                ..ClientShown::default()
            }),
            killed: AtomicBool::new(false),
            kill: tokio::sync::Notify::new(),
        });
        clients.insert(entry.id, entry.clone());
        self.stats.connections.fetch_add(1, Ordering::Relaxed);
        Some(entry)
    }

    /// Removes a client that disconnected.
    pub fn disconnect(&self, id: u64) {
        lock(&self.clients).remove(&id);
    }

    /// A pseudo-random number (xorshift; for RANDOMKEY, not for secrets).
    pub fn random_u64(&self) -> u64 {
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.store(x, Ordering::Relaxed);
        x
    }

    /// Asks every connection and the listener to stop.
    pub fn begin_shutdown(&self) {
        self.stopping.store(true, Ordering::Release);
        self.shutdown.notify_waiters();
        for c in lock(&self.clients).values() {
            c.killed.store(true, Ordering::Release);
            c.kill.notify_waiters();
        }
    }
}

/// Resolves once `flag` is set. `Notify::notify_waiters` wakes only the
/// waiters registered when it is called, so the wait registers first and
/// looks at the flag second: a raise between a look and a wait is never
/// lost. (The accept loop once looked after waiting and missed a stop that
/// came while it was busy with a connection; `stop` then never returned.)
/// Whoever raises must set `flag` before notifying.
pub async fn raised(flag: &AtomicBool, notify: &tokio::sync::Notify) {
    let notified = notify.notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    if flag.load(Ordering::Acquire) {
        return;
    }
    notified.await;
}

/// SCAN cursors: a number stands for the last key a SCAN returned. The
/// newest [`Cursors::KEPT`] are kept; an older one is an invalid cursor
/// (the client restarts from 0).
#[derive(Default)]
pub struct Cursors {
    inner: Mutex<CursorTable>,
}

#[derive(Default)]
struct CursorTable {
    next: u64,
    keys: BTreeMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
}

impl Cursors {
    /// Cursors remembered at once.
    pub const KEPT: usize = 65_536;

    /// A cursor that resumes after `key`.
    pub fn park(&self, key: Vec<u8>) -> u64 {
        let mut t = lock(&self.inner);
        t.next += 1;
        let id = t.next;
        t.keys.insert(id, key);
        t.order.push_back(id);
        while t.order.len() > Self::KEPT {
            if let Some(old) = t.order.pop_front() {
                t.keys.remove(&old);
            }
        }
        id
    }

    /// The key cursor `id` resumes after.
    pub fn resume(&self, id: u64) -> Option<Vec<u8>> {
        lock(&self.inner).keys.get(&id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn a_raise_before_the_wait_is_not_lost() {
        let (flag, notify) = (AtomicBool::new(false), tokio::sync::Notify::new());
        flag.store(true, Ordering::Release);
        notify.notify_waiters();
        let waited = block_on(async {
            tokio::time::timeout(Duration::from_secs(5), raised(&flag, &notify)).await
        });
        assert!(waited.is_ok(), "a raise that came first must end the wait");
    }

    #[test]
    fn a_raise_during_the_wait_wakes_it() {
        let flag = Arc::new(AtomicBool::new(false));
        let notify = Arc::new(tokio::sync::Notify::new());
        let waited = block_on(async {
            let (f, n) = (flag.clone(), notify.clone());
            let raiser = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                f.store(true, Ordering::Release);
                n.notify_waiters();
            });
            let waited = tokio::time::timeout(Duration::from_secs(5), raised(&flag, &notify)).await;
            let _ = raiser.await;
            waited
        });
        assert!(waited.is_ok(), "the raise must wake the waiter");
    }

    #[test]
    fn no_raise_keeps_waiting() {
        let (flag, notify) = (AtomicBool::new(false), tokio::sync::Notify::new());
        let waited = block_on(async {
            tokio::time::timeout(Duration::from_millis(50), raised(&flag, &notify)).await
        });
        assert!(waited.is_err());
    }
}
