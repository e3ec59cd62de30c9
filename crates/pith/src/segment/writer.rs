//! Builds a segment file from key groups in key order.
//!
//! Input is a [`GroupSource`]: each key once, in strictly increasing order,
//! with the versions to keep (newest first), already filtered by the
//! caller (memtable flush or merge). The builder walks the source several
//! times (keys and tags once, then twice per value pass inside pith-zip's
//! two-pass builder) and never holds all values: its memory is the trie
//! builder's, 8 bytes of tag and 8 of hash per record, pith-zip's bounded
//! sample, and with more than one thread up to `HELD_BYTES` of encoded
//! values, held while the trie is built beside them (`TrieFirst`).
//!
//! A version's deadline, if it is a put with one, goes to the expiry
//! section; a build with none writes a version 1 file, without it.
//!
//! Record ids: `0..keys` are the newest versions in key (trie id) order;
//! `keys..records` the older versions, grouped by key in key order, newest
//! first within a group. The file is written as `NNNNNN.tmp`, synced, and
//! renamed to `NNNNNN.seg`, so a segment file either exists whole or not at
//! all; a build that fails removes its temporary file before returning, so
//! a full disk gets its space back at once. The caller syncs the directory.

use std::borrow::Cow;
use std::cell::RefCell;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use crate::dbformat::{tag, tag_kind, tag_seq, Kind, NO_DEADLINE};
use crate::env::{Fs, WritableFile};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::segment::format::{
    Header, Section, BLOOM, EXPIRY, HISTORY, STORE, TAGS, TRIE, VERSION, VERSION_WITHOUT_EXPIRY,
};
use crate::segment::{bloom, expiry, tags};

/// Where a version's value can be read from its source, and when it
/// expires.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ValueRef {
    /// Which input (segment index of a merge; 0 for a memtable).
    pub src: u32,
    /// Record id in that input (or index into the memtable's values).
    pub index: u64,
    /// The version's deadline (`NO_DEADLINE`: none; always for a
    /// tombstone).
    pub deadline: u64,
}

/// One key and the versions of it to write, newest first, lent by the
/// source where it holds them (a build walks the groups four times or
/// more, and most walks never look at the keys: copying each key out
/// cost a cache miss per key and walk).
#[derive(Debug)]
pub(crate) struct Group<'a> {
    pub key: Cow<'a, [u8]>,
    pub versions: Cow<'a, [(u64, ValueRef)]>,
}

/// The input of a segment build.
pub(crate) trait GroupSource {
    /// Groups in strictly increasing key order. Restartable: each call
    /// starts again from the first key and yields the same groups.
    fn groups(&self) -> Box<dyn Iterator<Item = Result<Group<'_>>> + '_>;
    /// Replaces `out` with the value behind `v`; the builder asks only for
    /// puts' values (a tombstone's record is empty).
    fn value(&self, v: &ValueRef, out: &mut Vec<u8>) -> Result<()>;
    /// The value behind `v` when the source holds it in memory as it is
    /// (a memtable, a bulk load), to be read in place; `None` otherwise,
    /// and then [`GroupSource::value`] copies it out.
    fn value_in_memory(&self, _v: &ValueRef) -> Option<&[u8]> {
        None
    }
    /// The value behind `v` as stored, when it is encoded with `model` and
    /// can be copied without decoding; `None` otherwise.
    fn encoded(
        &self,
        _v: &ValueRef,
        _model: pith_zip::ModelRef,
    ) -> Result<Option<pith_zip::Encoded<'_>>> {
        Ok(None)
    }
    /// Whether every version the source yields may be written at its
    /// lowest sequence number, given the highest (`max_seq`): see
    /// `merge::forgets_seqs`.
    fn forgets_seqs(&self, _max_seq: u64) -> bool {
        false
    }
}

/// The value behind `v`, lent when `source` holds it in memory, else
/// copied out.
pub(crate) fn lent_value<'a>(source: &'a dyn GroupSource, v: &ValueRef) -> Result<Cow<'a, [u8]>> {
    if let Some(bytes) = source.value_in_memory(v) {
        return Ok(Cow::Borrowed(bytes));
    }
    let mut out = Vec::new();
    source.value(v, &mut out)?;
    Ok(Cow::Owned(out))
}

/// Writes bytes, counting them and keeping a crc32c of the current section.
struct SectionWriter<W: Write> {
    inner: W,
    pos: u64,
    crc: u32,
}

impl<W: Write> Write for SectionWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> SectionWriter<W> {
    fn begin(&mut self) -> u64 {
        self.crc = 0;
        self.pos
    }

    /// Ends a section started at `offset`, then pads to 8 bytes.
    fn end(&mut self, offset: u64) -> std::io::Result<Section> {
        let s = Section {
            offset,
            len: self.pos - offset,
            crc: self.crc,
        };
        let pad = (self.pos.next_multiple_of(8) - self.pos) as usize;
        self.write_all(&[0u8; 8][..pad])?;
        Ok(s)
    }
}

/// Dirty bytes a build leaves in the page cache before it syncs them.
///
/// Without a bound, a build writes its whole file into the page cache and
/// syncs once at the end; a memory cgroup counts those dirty pages and,
/// under cgroup v1 which does not throttle writers per group, kills the
/// process before writeback catches up (seen in `pith bench db` with
/// mixed workloads under a limit). Syncing as it goes (RocksDB's
/// `bytes_per_sync`) keeps them few; the final sync has little left to do.
const SYNC_EVERY: u64 = 4 << 20;

/// A file that syncs its data every [`SYNC_EVERY`] bytes written.
struct SyncingFile {
    file: Box<dyn WritableFile>,
    unsynced: u64,
}

impl Write for SyncingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.append(buf)?;
        self.unsynced += buf.len() as u64;
        if self.unsynced >= SYNC_EVERY {
            self.file.sync()?;
            self.unsynced = 0;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Yields values: the newest version of every key, then (second phase)
/// every older version, in record-id order. Source errors end the
/// iteration and are kept in `error`.
struct Values<'s> {
    source: &'s dyn GroupSource,
    groups: Box<dyn Iterator<Item = Result<Group<'s>>> + 's>,
    history: bool,
    pending: std::collections::VecDeque<(u64, ValueRef)>,
    error: &'s RefCell<Option<Error>>,
}

impl<'s> Iterator for Values<'s> {
    type Item = Cow<'s, [u8]>;

    fn next(&mut self) -> Option<Cow<'s, [u8]>> {
        loop {
            if self.error.borrow().is_some() {
                return None;
            }
            if let Some((tag, v)) = self.pending.pop_front() {
                if tag_kind(tag) == Kind::Delete {
                    return Some(Cow::Borrowed(&[]));
                }
                match lent_value(self.source, &v) {
                    Ok(value) => return Some(value),
                    Err(e) => {
                        *self.error.borrow_mut() = Some(e);
                        return None;
                    }
                }
            }
            match self.groups.next()? {
                Ok(g) => {
                    let mut vs = g.versions.iter().copied();
                    if self.history {
                        self.pending.extend(vs.skip(1));
                    } else if let Some(v) = vs.next() {
                        self.pending.push_back(v);
                    }
                }
                Err(e) => {
                    *self.error.borrow_mut() = Some(e);
                    return None;
                }
            }
        }
    }
}

/// How a segment's values are encoded.
#[derive(Clone, Copy)]
pub(crate) struct ValueCoding<'a> {
    /// Store options: the codec and its settings when there is no model;
    /// checksums and parse depth always.
    pub zip: &'a pith_zip::Options,
    /// The shared model to encode with (one pass, no training, records
    /// already encoded with it copied as they are).
    pub model: Option<&'a Arc<pith_zip::Model>>,
    /// Threads encoding with the model (the building thread included).
    pub threads: usize,
}

/// Builds segment `number` in `dir`; returns what its record store build
/// did, or `None` (and leaves no file) when the source yields no versions.
/// On error no file is left either.
pub(crate) fn write_segment(
    fs: &dyn Fs,
    dir: &Path,
    number: u64,
    source: &dyn GroupSource,
    coding: ValueCoding<'_>,
    bloom_bits_per_key: u32,
) -> Result<Option<pith_zip::BuildStats>> {
    let tmp = filename::path(dir, number, FileKind::Temp);
    let result = build(fs, &tmp, source, coding, bloom_bits_per_key);
    match result {
        Ok(Some(stats)) => {
            let path = filename::path(dir, number, FileKind::Segment);
            fs.rename(&tmp, &path).map_err(|e| {
                // Best effort, as below: the next open removes a leftover.
                let _ = fs.remove(&tmp);
                Error::io(&path, e)
            })?;
            Ok(Some(stats))
        }
        Ok(None) => Ok(None),
        Err(e) => {
            // The partial file: NotFound when the failure came before it.
            let _ = fs.remove(&tmp);
            Err(e)
        }
    }
}

/// Writes and syncs the segment as `tmp`; `None` when there is nothing to
/// write (and no file).
fn build(
    fs: &dyn Fs,
    tmp: &Path,
    source: &dyn GroupSource,
    coding: ValueCoding<'_>,
    bloom_bits_per_key: u32,
) -> Result<Option<pith_zip::BuildStats>> {
    // Pass 1: keys, tags, history groups, hashes.
    let mut trie = pith_trie::TrieBuilder::new();
    let mut tags: Vec<u64> = Vec::new();
    let mut hist_tags: Vec<u64> = Vec::new();
    let mut hist_keys: Vec<u64> = Vec::new();
    let mut hist_starts: Vec<u64> = Vec::new();
    let mut hashes: Vec<u64> = Vec::new();
    // (record id, deadline) of the newest versions, and (index among
    // the older versions, deadline) of the older ones.
    let mut deadlines: Vec<(u64, u64)> = Vec::new();
    let mut hist_deadlines: Vec<(u64, u64)> = Vec::new();
    let mut raw_key_bytes = 0u64;
    let (mut min_seq, mut max_seq) = (u64::MAX, 0u64);
    for g in source.groups() {
        let g = g?;
        let Some(&(newest, _)) = g.versions.first() else {
            continue;
        };
        trie.push(&g.key).map_err(trie_error)?;
        raw_key_bytes += g.key.len() as u64;
        hashes.push(crate::dbformat::key_hash(&g.key));
        let expires = |&(t, v): &(u64, ValueRef)| {
            (tag_kind(t) == Kind::Put && v.deadline != NO_DEADLINE).then_some(v.deadline)
        };
        if let Some(d) = expires(&g.versions[0]) {
            deadlines.push((tags.len() as u64, d));
        }
        if g.versions.len() > 1 {
            hist_keys.push(tags.len() as u64);
            hist_starts.push(hist_tags.len() as u64);
            for v in &g.versions[1..] {
                if let Some(d) = expires(v) {
                    hist_deadlines.push((hist_tags.len() as u64, d));
                }
                hist_tags.push(v.0);
            }
        }
        tags.push(newest);
        for &(t, _) in g.versions.iter() {
            min_seq = min_seq.min(tag_seq(t));
            max_seq = max_seq.max(tag_seq(t));
        }
    }
    if tags.is_empty() {
        return Ok(None);
    }
    let keys = tags.len() as u64;
    // Every reader sees every version: one sequence number serves them
    // all, and the tags take no bits (see `tags.rs`).
    if hist_tags.is_empty()
        && tags.iter().all(|&t| tag_kind(t) == Kind::Put)
        && source.forgets_seqs(max_seq)
    {
        tags.fill(tag(min_seq, Kind::Put));
    }
    tags.extend_from_slice(&hist_tags);
    let records = tags.len() as u64;
    let mut history = Vec::with_capacity(2 + 2 * hist_keys.len());
    history.push(hist_keys.len() as u64);
    history.extend_from_slice(&hist_keys);
    history.extend(hist_starts.iter().map(|s| keys + s));
    history.push(records);
    let tags = tags::pack(&tags, min_seq);
    deadlines.extend(hist_deadlines.iter().map(|&(i, d)| (keys + i, d)));
    let expiry_words = expiry::pack(&deadlines);
    drop(deadlines);
    // Dense integer keys answer a lookup with a subtraction and a rank,
    // sooner than the filter would: such a segment gets none.
    let bloom_bits = if trie.is_dense() {
        0
    } else {
        bloom_bits_per_key
    };
    let bloom_words = bloom::build(&hashes, bloom_bits);
    drop(hashes);

    let io = |e| Error::io(tmp, e);
    let file = fs.create(tmp).map_err(io)?;
    let mut w = SectionWriter {
        inner: BufWriter::with_capacity(1 << 20, SyncingFile { file, unsynced: 0 }),
        pos: 0,
        crc: 0,
    };
    let mut header = Header {
        version: if expiry_words.is_empty() {
            VERSION_WITHOUT_EXPIRY
        } else {
            VERSION
        },
        keys,
        records,
        min_seq,
        max_seq,
        raw_key_bytes,
        sections: Default::default(),
    };
    w.write_all(&vec![0u8; header.len()]).map_err(io)?;
    let zip_error = |e| match e {
        pith_zip::Error::Io(source) => Error::io(tmp, source),
        other => Error::Internal(format!("segment build: record store: {other}")),
    };
    let store = |out: &mut dyn Write| -> Result<pith_zip::BuildStats> {
        if let Some(model) = coding.model {
            return shared_store(source, model, &coding, out, zip_error);
        }
        let error = RefCell::new(None);
        let values = |history: bool| {
            let error = &error;
            move || Values {
                source,
                groups: source.groups(),
                history,
                pending: Default::default(),
                error,
            }
        };
        let built = pith_zip::build(|| values(false)().chain(values(true)()), coding.zip, out);
        if let Some(e) = error.into_inner() {
            return Err(e);
        }
        built.map_err(zip_error)
    };
    let (built, trie_section, store_at) = if coding.threads <= 1 {
        let trie_bytes = trie.finish().map_err(trie_error)?;
        let (trie_section, store_at) = write_trie(&mut w, &trie_bytes).map_err(io)?;
        drop(trie_bytes);
        (store(&mut w)?, trie_section, store_at)
    } else {
        // The trie is built on a thread of its own while the values are
        // encoded (see `TrieFirst`).
        std::thread::scope(|scope| -> Result<_> {
            let mut out = TrieFirst {
                w: &mut w,
                trie: Some(scope.spawn(move || trie.finish())),
                held: Vec::new(),
                cap: HELD_BYTES.min(coding.zip.sample_bytes),
                placed: None,
                error: None,
            };
            let stored = store(&mut out);
            // On an error the scope still waits for the trie's thread.
            let placed = stored.is_ok().then(|| out.place());
            if let Some(e) = out.error.take() {
                return Err(e);
            }
            let built = stored?;
            placed.transpose().map_err(io)?;
            let (trie_section, store_at) = out
                .placed
                .ok_or_else(|| Error::Internal("segment build: the trie was not written".into()))?;
            Ok((built, trie_section, store_at))
        })?
    };
    header.sections[TRIE] = trie_section;
    header.sections[STORE] = w.end(store_at).map_err(io)?;
    if built.records != records {
        return Err(Error::Internal(format!(
            "segment build: the source yielded {} values for {records} versions",
            built.records
        )));
    }
    let mut small = vec![(TAGS, &tags), (HISTORY, &history), (BLOOM, &bloom_words)];
    if header.version == VERSION {
        small.push((EXPIRY, &expiry_words));
    }
    for (index, words) in small {
        let at = w.begin();
        for word in words.iter() {
            w.write_all(&word.to_le_bytes()).map_err(io)?;
        }
        header.sections[index] = w.end(at).map_err(io)?;
    }
    let mut file = w
        .inner
        .into_inner()
        .map_err(|e| Error::io(tmp, e.into_error()))?
        .file;
    file.write_at(0, &header.encode()).map_err(io)?;
    file.sync().map_err(io)?;
    Ok(Some(built))
}

/// Writes the trie's section and begins the store's, which follows it:
/// returns the trie's section and where the store starts.
fn write_trie<W: Write>(
    w: &mut SectionWriter<W>,
    trie: &pith_trie::AlignedBytes,
) -> std::io::Result<(Section, u64)> {
    let at = w.begin();
    w.write_all(trie.as_bytes())?;
    let section = w.end(at)?;
    Ok((section, w.begin()))
}

fn trie_error(e: pith_trie::Error) -> Error {
    Error::Internal(format!("segment build: {e}"))
}

/// The most encoded store bytes [`TrieFirst`] holds, and no more than a
/// build's training sample may take (a quarter of its share of
/// `Options::build_memory_bytes`): then it waits for the trie. A flush's
/// values encode at tens of MB/s, so the trie of a 64 MiB memtable (about
/// 50 ms to build on Debian's keys) is done first; a merge copies records
/// much faster and waits.
const HELD_BYTES: usize = 4 << 20;

/// The store's writer while the trie is built on another thread: the
/// file puts the trie first, so the store's bytes are held until the trie
/// is done, then the trie's section is written, then the held bytes, and
/// later bytes pass straight through. Building the trie took about 50 ms
/// of a 64 MiB flush of Debian records in which one of the two cores
/// waited.
struct TrieFirst<'w, 's, W: Write> {
    w: &'w mut SectionWriter<W>,
    /// The trie's build, until its bytes are written.
    trie: Option<std::thread::ScopedJoinHandle<'s, pith_trie::Result<pith_trie::AlignedBytes>>>,
    held: Vec<u8>,
    /// The most bytes `held` takes.
    cap: usize,
    /// Once the trie is written: its section, and where the store starts.
    placed: Option<(Section, u64)>,
    /// Why the trie was not built, when its build failed (the store's
    /// writes fail then, with an I/O error that says only that).
    error: Option<Error>,
}

impl<W: Write> TrieFirst<'_, '_, W> {
    /// Waits for the trie if it is not written yet, then writes its
    /// section and the store bytes held.
    fn place(&mut self) -> std::io::Result<()> {
        let Some(build) = self.trie.take() else {
            return Ok(());
        };
        let bytes = match build.join() {
            Ok(Ok(bytes)) => bytes,
            Ok(Err(e)) => {
                self.error = Some(trie_error(e));
                return Err(std::io::Error::other("the segment's trie was not built"));
            }
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let placed = write_trie(self.w, &bytes)?;
        drop(bytes);
        self.w.write_all(&std::mem::take(&mut self.held))?;
        self.placed = Some(placed);
        Ok(())
    }
}

impl<W: Write> Write for TrieFirst<'_, '_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(build) = &self.trie {
            if !build.is_finished() && self.held.len() + buf.len() <= self.cap {
                self.held.extend_from_slice(buf);
                return Ok(buf.len());
            }
            self.place()?;
        }
        self.w.write(buf)
    }

    /// Does nothing: the build flushes and syncs the file when it ends,
    /// and a flush here would depend on whether the trie was written yet
    /// (the fault tests want the same file calls in every run).
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes the values of `source` as a store encoded with `model`, in one
/// pass per phase (newest versions, then older ones): values already
/// encoded with the model are copied as they are, the rest encoded in
/// batches split across `coding.threads` threads.
fn shared_store<W: Write>(
    source: &dyn GroupSource,
    model: &Arc<pith_zip::Model>,
    coding: &ValueCoding<'_>,
    out: W,
    zip_error: impl Fn(pith_zip::Error) -> Error,
) -> Result<pith_zip::BuildStats> {
    let threads = coding.threads.max(1);
    let mut b = pith_zip::SharedBuilder::new(model.clone(), coding.zip, out);
    let wanted = model.reference();
    let mut batch: Vec<Cow<'_, [u8]>> = Vec::new();
    let mut batch_bytes = 0usize;
    for history in [false, true] {
        for g in source.groups() {
            let g = g?;
            let (newest, older) = g.versions.split_at(g.versions.len().min(1));
            for (tag, v) in if history { older } else { newest } {
                if tag_kind(*tag) == Kind::Delete {
                    // A tombstone's record is empty.
                    batch.push(Cow::Borrowed(&[]));
                    continue;
                }
                if let Some(e) = source.encoded(v, wanted)? {
                    // In order: what was batched before goes first.
                    b.push_many(&batch, threads).map_err(&zip_error)?;
                    batch.clear();
                    batch_bytes = 0;
                    b.push_encoded(&e).map_err(&zip_error)?;
                    continue;
                }
                let value = lent_value(source, v)?;
                batch_bytes += value.len();
                batch.push(value);
                if batch_bytes >= pith_zip::BATCH_BYTES_PER_THREAD * threads {
                    b.push_many(&batch, threads).map_err(&zip_error)?;
                    batch.clear();
                    batch_bytes = 0;
                }
            }
        }
    }
    b.push_many(&batch, threads).map_err(&zip_error)?;
    b.finish().map_err(zip_error)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::mpsc;

    use super::{Section, SectionWriter, TrieFirst, HELD_BYTES};

    fn trie() -> pith_trie::AlignedBytes {
        pith_trie::build(["apple", "apricot", "banana"].iter()).unwrap()
    }

    fn writer() -> SectionWriter<Vec<u8>> {
        SectionWriter {
            inner: Vec::new(),
            pos: 0,
            crc: 0,
        }
    }

    /// Writes `store` through a `TrieFirst` whose trie is released after
    /// `release_after` of its writes (`None`: the trie is done first; past
    /// the writes: 50 ms after it started), and
    /// checks the file: the trie, padding, then the store, each section
    /// where `placed` says with its checksum.
    fn trie_goes_first(store: &[&[u8]], release_after: Option<usize>) {
        let trie = trie();
        let mut w = writer();
        let (go, wait) = mpsc::channel::<()>();
        let placed = std::thread::scope(|scope| {
            // Released by `go`, or after 50 ms: writes over the cap wait.
            let build = scope.spawn(move || {
                let _ = wait.recv_timeout(std::time::Duration::from_millis(50));
                Ok(self::trie())
            });
            if release_after.is_none() {
                go.send(()).unwrap();
                while !build.is_finished() {
                    std::thread::yield_now();
                }
            }
            let mut out = TrieFirst {
                w: &mut w,
                trie: Some(build),
                held: Vec::new(),
                cap: HELD_BYTES,
                placed: None,
                error: None,
            };
            for (i, bytes) in store.iter().enumerate() {
                if release_after == Some(i) {
                    // Gone when the trie stopped waiting (past the cap).
                    let _ = go.send(());
                }
                out.write_all(bytes).unwrap();
                assert!(out.held.len() <= HELD_BYTES, "held past the cap");
            }
            out.flush().unwrap();
            let _ = go.send(());
            out.place().unwrap();
            assert!(out.held.is_empty() && out.error.is_none());
            out.placed.unwrap()
        });
        let (trie_section, store_at) = placed;
        let store_section = w.end(store_at).unwrap();
        let file = w.inner;
        let store: Vec<u8> = store.concat();
        let t = trie.as_bytes();
        assert_eq!(
            trie_section,
            Section {
                offset: 0,
                len: t.len() as u64,
                crc: crc32c::crc32c(t),
            }
        );
        assert_eq!(store_at, (t.len() as u64).next_multiple_of(8));
        assert_eq!(store_section.len, store.len() as u64);
        assert_eq!(store_section.crc, crc32c::crc32c(&store));
        assert_eq!(&file[..t.len()], t);
        assert_eq!(&file[store_at as usize..][..store.len()], &store[..]);
    }

    #[test]
    fn the_trie_goes_before_the_store_whenever_it_is_done() {
        let big = vec![7u8; HELD_BYTES - 10];
        let parts: [&[u8]; 4] = [b"first", b"second", &big, b"after the cap"];
        for release_after in [None, Some(0), Some(1), Some(2), Some(3), Some(9)] {
            trie_goes_first(&parts, release_after);
        }
    }

    #[test]
    fn a_trie_that_fails_fails_the_store_with_its_error() {
        let mut w = writer();
        std::thread::scope(|scope| {
            let mut out = TrieFirst {
                w: &mut w,
                trie: Some(scope.spawn(|| Err(pith_trie::Error::BadMagic))),
                held: Vec::new(),
                cap: HELD_BYTES,
                placed: None,
                error: None,
            };
            let mut failed = None;
            for _ in 0..1000 {
                if let Err(e) = out.write_all(b"bytes") {
                    failed = Some(e);
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert!(failed.is_some(), "the writes went on after the trie failed");
            let e = out.error.take().expect("the trie's error is kept");
            assert!(e.to_string().contains("bad magic"), "{e}");
            assert!(out.placed.is_none());
        });
        assert!(w.inner.is_empty(), "nothing is written without the trie");
    }
}
