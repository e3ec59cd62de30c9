//! The write path: group commit, memtable switches, backpressure.
//!
//! Writers queue their batches; the writer at the head of the queue, when
//! no other holds the writer role, becomes the leader: it takes the head's
//! batch and those queued behind it (up to 1 MiB), assigns them
//! consecutive sequence numbers, appends them to the log in one write
//! (one sync if any asked for `sync`), inserts them into the memtable,
//! publishes the last sequence number, and hands every follower the
//! group's result (the same typed error on failure). So a batch is atomic
//! for readers (published at once) and for recovery (one log record,
//! checksummed).
//!
//! Deferred writes (`WriteOptions::defer_log`): when every batch of a group
//! asks for it, the group's records stay in the log's buffer after the
//! memtable has them; the next group that does not defer, `write_log`,
//! a sync, a memtable switch (the old log is synced first) or close writes
//! them, in order, before anything later. At most `MAX_DEFERRED_BYTES`
//! stay buffered.
//!
//! The writer role (`Queue::busy`) is also taken by memtable switches
//! from `flush()` and by bulk loads, so nothing else appends to the log or
//! assigns sequence numbers meanwhile. It is released by a guard, so a
//! panicking leader does not leave every later writer waiting.
//!
//! Failures: a failed append or sync of the log leaves its tail unknown,
//! and a failed sync may have dropped acknowledged writes (a retry can
//! report success falsely), so either stops writes until reopen, and so
//! does a leader's panic mid-commit (its followers get the poisoned error
//! instead of waiting forever; see `Handoff`). A switch
//! that cannot create the next log (a full disk) fails the write that
//! needed it and changes nothing: writing resumes once space is freed.
//!
//! Backpressure: a full memtable is frozen only while fewer than
//! `max_frozen_memtables` wait to be built and fewer than `stall_segments`
//! segments exist; otherwise the leader (and so every writer) waits for the
//! background thread.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use crate::batch::WriteBatch;
use crate::core::{lock, Inner, Queue, Slot, State, Tree};
use crate::error::{Error, Result};
use crate::filename::FileKind;
use crate::memtable::Memtable;
use crate::options::WriteOptions;
use crate::wal::{WalWriter, MAX_RECORD};

/// Largest group one leader commits.
const MAX_GROUP_BYTES: usize = 1 << 20;

/// Most bytes of deferred records left unwritten in the log's buffer.
const MAX_DEFERRED_BYTES: usize = 1 << 20;

/// Holds the writer role; released on drop.
pub(crate) struct WriterRole<'a> {
    inner: &'a Inner,
}

impl Drop for WriterRole<'_> {
    fn drop(&mut self) {
        let mut q = lock(&self.inner.queue);
        q.busy = false;
        if q.waiting > 0 {
            self.inner.queue_cv.notify_all();
        }
    }
}

impl Inner {
    /// Waits on the queue's condvar, counted in `Queue::waiting`.
    fn wait_in_queue<'q>(
        &self,
        mut q: std::sync::MutexGuard<'q, Queue>,
    ) -> std::sync::MutexGuard<'q, Queue> {
        q.waiting += 1;
        let mut q = self.queue_cv.wait(q).unwrap_or_else(|p| p.into_inner());
        q.waiting -= 1;
        q
    }

    /// Waits until no one holds the writer role and takes it.
    pub(crate) fn writer_role(&self) -> WriterRole<'_> {
        let mut q = lock(&self.queue);
        while q.busy {
            q = self.wait_in_queue(q);
        }
        q.busy = true;
        WriterRole { inner: self }
    }

    /// Freezes the live memtables (every family's: a generation) behind a
    /// new log. Caller holds the writer role.
    pub(crate) fn switch_memtable(&self) -> Result<()> {
        let number = self.new_file_number();
        let path = self.file(number, FileKind::Wal);
        let fs = &*self.fs;
        let created = WalWriter::create(fs, &path).and_then(|w| {
            fs.sync_dir(&self.dir)
                .map(|()| w)
                .map_err(|e| Error::io(&self.dir, e))
        });
        let wal = match created {
            Ok(w) => w,
            Err(e) => {
                // Nothing refers to the new log yet; the old one goes on.
                let _ = fs.remove(&path);
                return Err(e);
            }
        };
        let mut slot = lock(&self.wal);
        if let Some(old) = slot.as_mut() {
            if let Err(e) = old.sync() {
                // A failed sync may have dropped acknowledged writes; a
                // retry can report success falsely. Accept no more writes.
                self.poison(&e);
                return Err(e);
            }
        }
        *slot = Some(wal);
        drop(slot);
        self.set_state(|st| State {
            trees: st
                .trees
                .iter()
                .map(|t| Tree {
                    mem: Arc::new(Memtable::new(number)),
                    frozen: t.frozen.iter().cloned().chain([t.mem.clone()]).collect(),
                    ..t.clone()
                })
                .collect(),
        });
        self.notify_bg();
        Ok(())
    }

    /// Switches a full memtable, first waiting while building is behind.
    fn make_room(&self) -> Result<()> {
        let mut bg = lock(&self.bg);
        loop {
            if let Some(e) = &bg.error {
                return Err(Error::Poisoned(e.clone()));
            }
            if bg.shutdown {
                return Err(Error::Closing);
            }
            let st = self.current();
            let live: usize = st.trees.iter().map(|t| t.mem.approximate_bytes()).sum();
            if live < self.options.memtable_bytes {
                if st
                    .trees
                    .iter()
                    .any(|t| crate::training::early_training_due(t, &bg, &self.options))
                {
                    self.bg_cv.notify_all();
                }
                return Ok(());
            }
            if st.frozen_generations() < self.options.max_frozen_memtables
                && st
                    .trees
                    .iter()
                    .all(|t| t.segments.len() < self.options.stall_segments)
            {
                drop(bg);
                return self.switch_memtable();
            }
            bg = self.bg_cv.wait(bg).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Syncs the live log, making every acknowledged write durable (for
    /// callers that sync on a timer instead of per write). Deferred records
    /// are written first; the fsync itself runs outside every lock, so
    /// writers go on meanwhile (their bytes may or may not be covered:
    /// they were not acknowledged before the call), as Redis fsyncs its
    /// append-only file on a background thread. A failed fsync stops
    /// writes, as a failed synced commit does.
    pub(crate) fn sync_wal(&self) -> Result<()> {
        self.check_writable()?;
        let path = {
            let mut slot = lock(&self.wal);
            let wal = slot.as_mut().ok_or_else(|| Error::ReadOnly {
                path: self.dir.clone(),
            })?;
            if let Err(e) = wal.write_pending() {
                self.poison(&e);
                return Err(e);
            }
            wal.path().to_path_buf()
        };
        if let Err(e) = self.fs.sync_file(&path) {
            let switched = lock(&self.wal).as_ref().is_none_or(|w| w.path() != path);
            if switched {
                // A memtable switch synced this log before leaving it (it
                // may be gone by now); had that failed, writes stopped.
                return self.check_writable();
            }
            let e = Error::io(&path, e);
            self.poison(&e);
            return Err(e);
        }
        // A failed fsync through another descriptor (a switch's, a synced
        // commit's) may not be reported again to this one.
        self.check_writable()
    }

    /// Writes the log records of deferred writes still in the buffer
    /// (`WriteOptions::defer_log`), without syncing. An error when the
    /// database stopped accepting writes, even if the records of the
    /// caller's writes had been written before that: the caller cannot
    /// tell, so it must not report them written.
    pub(crate) fn write_log(&self) -> Result<()> {
        self.check_writable()?;
        let mut slot = lock(&self.wal);
        let Some(wal) = slot.as_mut() else {
            return Err(Error::ReadOnly {
                path: self.dir.clone(),
            });
        };
        if let Err(e) = wal.write_pending() {
            self.poison(&e);
            return Err(e);
        }
        Ok(())
    }

    /// Logs and applies one group. Caller is the leader.
    fn commit_group(&self, group: &[Arc<Slot>]) -> Result<()> {
        self.check_writable()?;
        self.make_room()?;
        // The live memtables only: holding a whole state could make this
        // thread the one that drops it and removes its obsolete files.
        let mems: Vec<(u32, Arc<Memtable>)> =
            self.with_state(|st| st.trees.iter().map(|t| (t.id, t.mem.clone())).collect());
        let mut slot = lock(&self.wal);
        let wal = slot.as_mut().ok_or_else(|| Error::ReadOnly {
            path: self.dir.clone(),
        })?;
        let first = self.last_seq.load(Ordering::Acquire) + 1;
        let mut seq = first;
        let mark = wal.pending();
        for s in group {
            let mut b = lock(&s.batch);
            if let Err(e) = wal.add(b.encode_with_seq(seq)) {
                wal.discard_after(mark);
                return Err(e);
            }
            seq += b.len() as u64;
        }
        let sync = group.iter().any(|s| s.sync);
        let defer = !sync && group.iter().all(|s| s.defer_log);
        if !defer || wal.pending() > MAX_DEFERRED_BYTES {
            if let Err(e) = wal.commit(sync) {
                // The log may now hold a partial record; accept no more
                // writes.
                self.poison(&e);
                return Err(e);
            }
        }
        drop(slot);
        let mut seq = first;
        for s in group {
            let b = lock(&s.batch);
            for op in b.ops() {
                // A family dropped since the batch was checked: its
                // operations are logged, and skipped here as at recovery.
                if let Some((_, mem)) = mems.iter().find(|(id, _)| *id == op.family) {
                    mem.insert(op.key, seq, op.kind, op.value, op.deadline);
                }
                seq += 1;
            }
        }
        self.last_seq.store(seq - 1, Ordering::Release);
        Ok(())
    }

    /// Applies `batch` through group commit.
    pub(crate) fn write(&self, options: WriteOptions, batch: WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.check_writable()?;
        if !batch.families().is_empty() {
            let gone = self.with_state(|st| {
                let gone = batch.families().iter().find(|f| st.tree(f.id).is_none());
                gone.map(|f| f.name().to_string())
            });
            if let Some(name) = gone {
                return Err(Error::NoSuchFamily { name });
            }
        }
        let len = batch.encoded_len();
        if len > MAX_RECORD {
            return Err(Error::InvalidArgument(format!(
                "write batch of {len} bytes exceeds the {MAX_RECORD} byte limit"
            )));
        }
        let slot = Arc::new(Slot {
            batch: Mutex::new(batch),
            sync: options.sync,
            defer_log: options.defer_log,
            done: Mutex::new(None),
        });
        let mut q = lock(&self.queue);
        q.pending.push_back(slot.clone());
        loop {
            if let Some(r) = lock(&slot.done).take() {
                return r;
            }
            let head = q.pending.front().is_some_and(|h| Arc::ptr_eq(h, &slot));
            if head && !q.busy {
                break;
            }
            q = self.wait_in_queue(q);
        }
        q.busy = true;
        let role = WriterRole { inner: self };
        let mut group = Vec::new();
        let mut bytes = 0;
        while let Some(s) = q.pending.front() {
            let n = lock(&s.batch).encoded_len();
            if !group.is_empty() && bytes + n > MAX_GROUP_BYTES.max(len) {
                break;
            }
            bytes += n;
            if let Some(s) = q.pending.pop_front() {
                group.push(s);
            }
        }
        drop(q);
        // Declared after `role`, so it drops first, unwinding too: the
        // followers have their result before the role's release wakes them.
        let mut handoff = Handoff {
            inner: self,
            group: &group,
            result: None,
        };
        let result = self.commit_group(&group);
        handoff.result = Some(result.clone());
        drop(handoff);
        drop(role);
        result
    }
}

/// Hands a group's followers its result when the leader is done with it,
/// or a poisoned-database error when the leader panicked mid-commit: they
/// are out of the queue by then and would otherwise wait forever. A panic
/// leaves the log and the memtable in an unknown state, so it also stops
/// writes until the database is reopened, as a failed append does.
struct Handoff<'a> {
    inner: &'a Inner,
    group: &'a [Arc<Slot>],
    result: Option<Result<()>>,
}

impl Drop for Handoff<'_> {
    fn drop(&mut self) {
        let result = self.result.take().unwrap_or_else(|| {
            let e = Error::Internal("a write's commit panicked".into());
            self.inner.poison(&e);
            Err(Error::Poisoned(Arc::new(e)))
        });
        for s in self.group.iter().skip(1) {
            *lock(&s.done) = Some(result.clone());
        }
    }
}
