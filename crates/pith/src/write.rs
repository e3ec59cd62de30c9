//! The write path: group commit, memtable switches, backpressure, bulk
//! loads.
//!
//! Writers queue their batches; the writer at the head of the queue, when
//! no other leader is active, becomes the leader: it takes the head's
//! batch and those queued behind it (up to 1 MiB), assigns them
//! consecutive sequence numbers, appends them to the log in one write
//! (one fsync if any asked for `sync`), inserts them into the memtable,
//! publishes the last sequence number, and wakes the followers. So a batch
//! is atomic for readers (published at once) and for recovery (one log
//! record, checksummed).
//!
//! The "writer role" (`Queue::busy`) is also taken by memtable switches
//! from `flush()` and by bulk loads, so nothing else appends to the log or
//! assigns sequence numbers meanwhile.
//!
//! Backpressure: a full memtable is frozen only while fewer than
//! `max_frozen_memtables` wait to be built and fewer than `stall_segments`
//! segments exist; otherwise the leader (and so every writer) waits for the
//! background thread.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use crate::batch::{Kind, WriteBatch};
use crate::db::{entry_of, lock, Bg, Inner, State, DB};
use crate::error::{Error, Result};
use crate::manifest;
use crate::memtable::{tag, Memtable};
use crate::options::WriteOptions;
use crate::segment::writer::{Group, GroupSource, ValueRef};
use crate::wal::WalWriter;

/// Largest group one leader commits.
const MAX_GROUP_BYTES: usize = 1 << 20;

/// One queued write.
pub(crate) struct Slot {
    batch: Mutex<WriteBatch>,
    sync: bool,
    /// Set by the leader that committed it: `Err` carries the message.
    done: Mutex<Option<Result<(), String>>>,
}

/// The writers' queue.
#[derive(Default)]
pub(crate) struct Queue {
    pending: VecDeque<Arc<Slot>>,
    busy: bool,
}

/// Holds the writer role; released on drop.
pub(crate) struct WriterRole<'a> {
    inner: &'a Inner,
}

impl Drop for WriterRole<'_> {
    fn drop(&mut self) {
        let mut q = lock(&self.inner.queue);
        q.busy = false;
        self.inner.queue_cv.notify_all();
    }
}

impl Inner {
    /// Waits until no leader is active and takes the role.
    pub(crate) fn writer_role(&self) -> WriterRole<'_> {
        let mut q = lock(&self.queue);
        while q.busy {
            q = self.queue_cv.wait(q).unwrap_or_else(|p| p.into_inner());
        }
        q.busy = true;
        WriterRole { inner: self }
    }

    /// Waits until `done(state, bg)` holds, or a background failure.
    pub(crate) fn wait_for(&self, done: impl Fn(&State, &Bg) -> bool) -> Result<()> {
        let mut bg = lock(&self.bg);
        loop {
            if done(&self.current(), &bg) {
                return Ok(());
            }
            if let Some(e) = &bg.error {
                return Err(Error::Poisoned(e.clone()));
            }
            if bg.shutdown {
                return Err(Error::Poisoned("the database is closing".into()));
            }
            bg = self.bg_cv.wait(bg).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Freezes the live memtable behind a new log. Caller holds the writer
    /// role.
    pub(crate) fn switch_memtable(&self) -> Result<()> {
        let number = self.new_file_number();
        let wal = WalWriter::create(&self.file(number, "wal"))?;
        manifest::sync_dir(&self.dir)?;
        let mut old = std::mem::replace(&mut *lock(&self.wal), wal);
        if let Err(e) = old.sync() {
            // A failed fsync may have dropped acknowledged writes; a retry
            // can report success falsely. Accept no more writes.
            self.poison(&e);
            return Err(e);
        }
        self.set_state(|st| State {
            mem: Arc::new(Memtable::new(number)),
            frozen: st.frozen.iter().cloned().chain([st.mem.clone()]).collect(),
            segments: st.segments.clone(),
        });
        let _bg = lock(&self.bg);
        self.bg_cv.notify_all();
        Ok(())
    }

    /// Switches a full memtable, first waiting while building is behind.
    fn make_room(&self) -> Result<()> {
        let mut bg = lock(&self.bg);
        loop {
            if let Some(e) = &bg.error {
                return Err(Error::Poisoned(e.clone()));
            }
            let st = self.current();
            if st.mem.approximate_bytes() < self.options.memtable_bytes {
                return Ok(());
            }
            if st.frozen.len() < self.options.max_frozen_memtables
                && st.segments.len() < self.options.stall_segments
            {
                drop(bg);
                return self.switch_memtable();
            }
            bg = self.bg_cv.wait(bg).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Logs and applies one group. Caller is the leader.
    fn commit_group(&self, group: &[Arc<Slot>]) -> Result<()> {
        self.check_poisoned()?;
        self.make_room()?;
        let mem = self.current().mem.clone();
        let mut wal = lock(&self.wal);
        let first = self.last_seq.load(Ordering::Acquire) + 1;
        let mut seq = first;
        for s in group {
            let mut b = lock(&s.batch);
            wal.add(b.encode_with_seq(seq))?;
            seq += b.len() as u64;
        }
        let sync = group.iter().any(|s| s.sync);
        if let Err(e) = wal.commit(sync) {
            // The log may now hold a partial record; accept no more writes.
            self.poison(&e);
            return Err(e);
        }
        drop(wal);
        let mut seq = first;
        for s in group {
            let b = lock(&s.batch);
            for op in b.ops() {
                mem.insert(op.key, seq, op.kind, op.value);
                seq += 1;
            }
        }
        self.last_seq.store(seq - 1, Ordering::Release);
        Ok(())
    }

    pub(crate) fn write(&self, options: WriteOptions, batch: WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let len = batch.encoded_len();
        let slot = Arc::new(Slot {
            batch: Mutex::new(batch),
            sync: options.sync,
            done: Mutex::new(None),
        });
        let mut q = lock(&self.queue);
        q.pending.push_back(slot.clone());
        loop {
            if let Some(r) = lock(&slot.done).take() {
                return r.map_err(Error::Poisoned);
            }
            let head = q.pending.front().is_some_and(|h| Arc::ptr_eq(h, &slot));
            if head && !q.busy {
                break;
            }
            q = self.queue_cv.wait(q).unwrap_or_else(|p| p.into_inner());
        }
        q.busy = true;
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
        let result = self.commit_group(&group);
        let shared = result.as_ref().map(|_| ()).map_err(|e| e.to_string());
        for s in &group[1..] {
            *lock(&s.done) = Some(shared.clone());
        }
        let mut q = lock(&self.queue);
        q.busy = false;
        self.queue_cv.notify_all();
        drop(q);
        result
    }
}

/// A sorted chunk of a bulk load as a build input.
struct BulkSource {
    records: Vec<(Vec<u8>, Vec<u8>)>,
    tag: u64,
}

impl GroupSource for BulkSource {
    fn groups(&self) -> Box<dyn Iterator<Item = Result<Group>> + '_> {
        Box::new(self.records.iter().enumerate().map(|(i, (k, _))| {
            Ok(Group {
                key: k.clone(),
                versions: vec![(
                    self.tag,
                    ValueRef {
                        src: 0,
                        index: i as u64,
                    },
                )],
            })
        }))
    }

    fn value(&self, v: &ValueRef, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        if let Some((_, value)) = self.records.get(v.index as usize) {
            out.extend_from_slice(value);
        }
        Ok(())
    }
}

/// What a bulk load did.
#[derive(Clone, Debug, Default)]
pub struct BulkStats {
    /// Records read from the input.
    pub records: u64,
    /// Distinct keys written (the last value of a repeated key wins).
    pub keys: u64,
    /// Segments built.
    pub segments: u64,
}

impl DB {
    /// Puts `key -> value`.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(WriteOptions::default(), b)
    }

    /// Deletes `key` (a no-op if absent).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(WriteOptions::default(), b)
    }

    /// Applies `batch` atomically: readers and recovery see all of it or
    /// none of it.
    pub fn write(&self, options: WriteOptions, batch: WriteBatch) -> Result<()> {
        self.inner.write(options, batch)
    }

    /// Loads many records straight into segments, without the log: the
    /// input is cut into chunks of `Options::bulk_chunk_bytes`, each sorted
    /// (the last of repeated keys wins) and built into one segment, made
    /// durable and added to the manifest. Other writers wait while it runs;
    /// readers do not. Call [`DB::compact`] afterwards to merge the chunks.
    pub fn bulk_load<I, K, V>(&self, records: I) -> Result<BulkStats>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        self.try_bulk_load(records.into_iter().map(Ok::<_, Error>))
    }

    /// [`DB::bulk_load`] over a fallible input; the first input error stops
    /// the load (chunks already built stay loaded) and is returned.
    pub fn try_bulk_load<I, K, V, E>(&self, records: I) -> Result<BulkStats, E>
    where
        I: IntoIterator<Item = Result<(K, V), E>>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        E: From<Error>,
    {
        let inner = &self.inner;
        let _role = inner.writer_role();
        inner.check_poisoned()?;
        if !inner.current().mem.is_empty() {
            inner.switch_memtable()?;
        }
        inner.wait_for(|st, _| st.frozen.is_empty())?;
        let mut stats = BulkStats::default();
        let mut chunk: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut bytes = 0usize;
        let mut input = records.into_iter();
        loop {
            let next = input.next().transpose()?;
            if let Some((k, v)) = &next {
                let (k, v) = (k.as_ref(), v.as_ref());
                bytes += k.len() + v.len() + 48;
                chunk.push((k.to_vec(), v.to_vec()));
                stats.records += 1;
                if bytes < inner.options.bulk_chunk_bytes {
                    continue;
                }
            }
            if !chunk.is_empty() {
                stats.keys += self.load_chunk(std::mem::take(&mut chunk))?;
                stats.segments += 1;
                bytes = 0;
            }
            if next.is_none() {
                return Ok(stats);
            }
        }
    }

    /// Sorts, builds and installs one chunk; returns its distinct keys.
    fn load_chunk(&self, mut records: Vec<(Vec<u8>, Vec<u8>)>) -> Result<u64> {
        let inner = &self.inner;
        // Stable sort, then keep the last of each run of equal keys.
        records.sort_by(|a, b| a.0.cmp(&b.0));
        let mut deduped: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(records.len());
        for r in records {
            match deduped.last_mut() {
                Some(last) if last.0 == r.0 => *last = r,
                _ => deduped.push(r),
            }
        }
        let seq = inner.last_seq.load(Ordering::Acquire) + 1;
        let source = BulkSource {
            records: deduped,
            tag: tag(seq, Kind::Put),
        };
        let Some(segment) = inner.build_segment(&source, &inner.options.merge_zip)? else {
            return Ok(0);
        };
        {
            let mut m = lock(&inner.manifest);
            m.segments.push(entry_of(&segment));
            m.last_seq = seq;
            m.write(&inner.dir)?;
        }
        // Publish the segment and its sequence number together, under the
        // state lock, so no reader or snapshot sees one without the other.
        inner.set_state(|st| {
            inner.last_seq.store(seq, Ordering::Release);
            State {
                mem: st.mem.clone(),
                frozen: st.frozen.clone(),
                segments: st.segments.iter().cloned().chain([segment]).collect(),
            }
        });
        let _bg = lock(&inner.bg);
        inner.bg_cv.notify_all();
        Ok(source.records.len() as u64)
    }
}
