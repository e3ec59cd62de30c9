//! The keyspace the commands see: the engine, one writer at a time, and
//! WATCH.
//!
//! Every command that writes runs in a [`Txn`] holding the store's write
//! lock, so read-modify-write commands (INCR, APPEND, SETRANGE, GETSET,
//! ...) are atomic, and MULTI/EXEC runs its whole queue in one [`Txn`]:
//! no other write interleaves, reads inside see the queue's earlier
//! writes, and everything commits as one engine batch (readers see all of
//! it or none). Commands that only read run in a reader `Txn` without the
//! lock, straight on the engine.
//!
//! WATCH: a client registers a flag per watched key; every commit sets
//! the flags of the keys it wrote (FLUSHDB all of them), and EXEC fails
//! when its client's flag is set.
//!
//! Expiry is the engine's: a key's deadline is stored with its value
//! (`WriteBatch::put_expiring`), and a key past it reads as absent
//! everywhere. A transaction reads the database's clock once, when it
//! starts, and judges every deadline (its own writes' included) at that
//! instant, as Redis does within one command.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use pith::{WriteBatch, WriteOptions, DB};

/// The engine and what serializes writers.
pub struct Store {
    db: DB,
    write_options: Mutex<WriteOptions>,
    writer: Mutex<()>,
    watches: Mutex<HashMap<Vec<u8>, Vec<Weak<AtomicBool>>>>,
}

/// Locks `m`, recovering from a panic of an earlier holder: no mutex of
/// the server guards a change that a panic could leave half-done (the
/// engine batch is the unit of change).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Store {
    /// Serves `db`; writes are acknowledged per `write_options`.
    pub fn new(db: DB, write_options: WriteOptions) -> Store {
        Store {
            db,
            write_options: Mutex::new(write_options),
            writer: Mutex::new(()),
            watches: Mutex::new(HashMap::new()),
        }
    }

    /// The engine.
    pub fn db(&self) -> &DB {
        &self.db
    }

    /// The engine, to close it.
    pub fn into_db(self) -> DB {
        self.db
    }

    /// Changes how writes are acknowledged (CONFIG SET appendfsync).
    pub fn set_write_options(&self, options: WriteOptions) {
        *lock(&self.write_options) = options;
    }

    /// A transaction that may write: holds the write lock until dropped.
    pub fn writer(&self) -> Txn<'_> {
        let guard = lock(&self.writer);
        Txn {
            store: self,
            _guard: Some(guard),
            pending: BTreeMap::new(),
            cleared: false,
            now: self.db.now_ms(),
        }
    }

    /// A transaction that only reads, without the lock.
    pub fn reader(&self) -> Txn<'_> {
        Txn {
            store: self,
            _guard: None,
            pending: BTreeMap::new(),
            cleared: false,
            now: self.db.now_ms(),
        }
    }

    /// Registers `flag` to be set when `key` is next written.
    pub fn watch(&self, key: &[u8], flag: &Arc<AtomicBool>) {
        let mut w = lock(&self.watches);
        let list = w.entry(key.to_vec()).or_default();
        list.retain(|f| f.strong_count() > 0);
        list.push(Arc::downgrade(flag));
    }

    fn touched<'k>(&self, keys: impl Iterator<Item = &'k Vec<u8>>, all: bool) {
        let mut w = lock(&self.watches);
        if w.is_empty() {
            return;
        }
        let fire = |list: Vec<Weak<AtomicBool>>| {
            for f in list.iter().filter_map(Weak::upgrade) {
                f.store(true, Ordering::Release);
            }
        };
        if all {
            for (_, list) in w.drain() {
                fire(list);
            }
            return;
        }
        for k in keys {
            if let Some(list) = w.remove(k) {
                fire(list);
            }
        }
    }
}

/// A live key's value and deadline (milliseconds since the Unix epoch;
/// `None`: it never expires).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The value.
    pub value: Vec<u8>,
    /// When the key expires, if it does.
    pub deadline: Option<u64>,
}

/// A unit of reads and writes; see the module documentation. Writes are
/// kept here until [`Txn::commit`].
pub struct Txn<'s> {
    store: &'s Store,
    _guard: Option<MutexGuard<'s, ()>>,
    /// Keys written: `None` deleted. A written deadline is never at or
    /// before `now` (such a write is a delete).
    pending: BTreeMap<Vec<u8>, Option<Entry>>,
    /// FLUSHDB ran: nothing stored before it is visible.
    cleared: bool,
    /// The database's clock when the transaction started.
    now: u64,
}

impl Txn<'_> {
    /// The value of `key` as this transaction sees it.
    pub fn get(&self, key: &[u8]) -> pith::Result<Option<Vec<u8>>> {
        Ok(self.entry(key)?.map(|e| e.value))
    }

    /// The value and deadline of `key` as this transaction sees it.
    pub fn entry(&self, key: &[u8]) -> pith::Result<Option<Entry>> {
        if let Some(e) = self.pending.get(key) {
            return Ok(e.clone());
        }
        if self.cleared {
            return Ok(None);
        }
        // The engine judges expiry by its clock now, which may be a few
        // milliseconds past `self.now`: a key it hides was due anyway.
        let found = self.store.db.get_with_deadline(key)?;
        Ok(found.and_then(|(value, deadline)| {
            (deadline.is_none_or(|d| d > self.now)).then_some(Entry { value, deadline })
        }))
    }

    /// True when `key` exists as this transaction sees it (no value is
    /// decoded).
    pub fn exists(&self, key: &[u8]) -> pith::Result<bool> {
        Ok(self.deadline(key)?.is_some())
    }

    /// The deadline of `key` as this transaction sees it, without its
    /// value: `None` when the key is absent, `Some(None)` when it never
    /// expires.
    pub fn deadline(&self, key: &[u8]) -> pith::Result<Option<Option<u64>>> {
        if let Some(e) = self.pending.get(key) {
            return Ok(e.as_ref().map(|e| e.deadline));
        }
        if self.cleared {
            return Ok(None);
        }
        let found = self.store.db.deadline_of(key)?;
        Ok(found.filter(|d| d.is_none_or(|d| d > self.now)))
    }

    /// The time deadlines are judged against, in milliseconds since the
    /// Unix epoch.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// True when this transaction may write (it holds the lock).
    pub fn can_write(&self) -> bool {
        self._guard.is_some()
    }

    /// Sets `key`, without a deadline (SET, MSET, GETSET: a new value
    /// forgets the old one's).
    pub fn put(&mut self, key: &[u8], value: Vec<u8>) {
        self.put_expiring(key, value, None);
    }

    /// Sets `key` expiring at `deadline` (`None`: never); a deadline at or
    /// before the transaction's time deletes the key instead, as Redis
    /// does for an expiry in the past.
    pub fn put_expiring(&mut self, key: &[u8], value: Vec<u8>, deadline: Option<u64>) {
        debug_assert!(self.can_write(), "a reader wrote");
        if deadline.is_some_and(|d| d <= self.now) {
            self.pending.insert(key.to_vec(), None);
            return;
        }
        self.pending
            .insert(key.to_vec(), Some(Entry { value, deadline }));
    }

    /// Deletes `key`.
    pub fn delete(&mut self, key: &[u8]) {
        debug_assert!(self.can_write(), "a reader wrote");
        self.pending.insert(key.to_vec(), None);
    }

    /// Deletes every key (FLUSHDB).
    pub fn clear(&mut self) {
        debug_assert!(self.can_write(), "a reader wrote");
        self.pending.clear();
        self.cleared = true;
    }

    /// Keys in order, from `after` (exclusive) on, at most `limit`: the
    /// engine's keys with this transaction's writes applied. `matching` is
    /// a whole-key regex walked through the tries (`None`: every key).
    pub fn keys(
        &self,
        matching: Option<&str>,
        after: Option<&[u8]>,
        limit: usize,
    ) -> pith::Result<Vec<Vec<u8>>> {
        let past = |k: &[u8]| after.is_none_or(|a| k > a);
        // Enough stored keys that `limit` remain after this transaction's
        // deletes.
        let want = limit.saturating_add(self.pending.len());
        let mut stored = Vec::new();
        if !self.cleared {
            // The first key after `after`: a walk or range starts there, so
            // a SCAN page costs what it returns, not the keys before it.
            let from = after.map(|a| [a, &[0u8][..]].concat());
            let source: Box<dyn Iterator<Item = pith::Result<Vec<u8>>>> = match matching {
                Some(re) => Box::new(
                    self.store
                        .db
                        .search_from(re, from.as_deref().unwrap_or_default())?
                        .keys(),
                ),
                None => Box::new(self.store.db.range(from.as_deref(), None).keys()),
            };
            for k in source {
                let k = k?;
                if past(&k) {
                    stored.push(k);
                    if stored.len() >= want {
                        break;
                    }
                }
            }
        }
        if self.pending.is_empty() {
            stored.truncate(limit);
            return Ok(stored);
        }
        let re = match matching {
            Some(p) => Some(pith_regex(p)?),
            None => None,
        };
        let mut merged: BTreeMap<Vec<u8>, bool> = stored.into_iter().map(|k| (k, true)).collect();
        for (k, v) in &self.pending {
            if !past(k) || re.as_ref().is_some_and(|re| !re.is_match(k)) {
                continue;
            }
            merged.insert(k.clone(), v.is_some());
        }
        Ok(merged
            .into_iter()
            .filter(|(_, live)| *live)
            .map(|(k, _)| k)
            .take(limit)
            .collect())
    }

    /// Live keys as this transaction sees them, counted exactly (a walk
    /// of the keys; no value is read).
    pub fn count_keys(&self) -> pith::Result<u64> {
        if self.pending.is_empty() && !self.cleared {
            return self.store.db.count_keys();
        }
        Ok(self.keys(None, None, usize::MAX)?.len() as u64)
    }

    /// Writes everything pending as one engine batch and fires watches.
    /// True when the batch's log record was deferred
    /// (`WriteOptions::defer_log`): the caller must see it written
    /// ([`DB::write_log`]) before it tells a client the write happened.
    pub fn commit(self) -> pith::Result<bool> {
        if self.pending.is_empty() && !self.cleared {
            return Ok(false);
        }
        let mut batch = WriteBatch::new();
        if self.cleared {
            for k in self.store.db.range(None, None).keys() {
                let k = k?;
                if !self.pending.contains_key(&k) {
                    batch.delete(&k);
                }
            }
        }
        for (k, v) in &self.pending {
            match v {
                Some(Entry {
                    value,
                    deadline: Some(d),
                }) => batch.put_expiring(k, value, *d),
                Some(Entry {
                    value,
                    deadline: None,
                }) => batch.put(k, value),
                None => batch.delete(k),
            };
        }
        let options = *lock(&self.store.write_options);
        self.store.db.write(options, batch)?;
        self.store.touched(self.pending.keys(), self.cleared);
        Ok(options.defer_log)
    }
}

/// A whole-key regex over bytes, the dialect of the engine's search, for
/// the keys a transaction wrote itself.
fn pith_regex(pattern: &str) -> pith::Result<pith_trie::KeyRegex> {
    pith_trie::KeyRegex::new(pattern).map_err(|e| pith::Error::Regex(e.to_string()))
}
