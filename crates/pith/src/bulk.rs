//! Bulk loads: records straight into segments, without the log.
//!
//! The input is cut into chunks of `Options::bulk_chunk_bytes`; each is
//! sorted (the last of repeated keys wins), built into one segment with
//! one sequence number for all its records, and installed through
//! [`Inner::apply`], which makes the segment durable in the manifest and
//! publishes it with its sequence number at once. A chunk whose install
//! fails stops writes (nothing later can reuse its sequence number), and a
//! chunk whose build fails leaves no file. The load holds the writer role
//! throughout, after flushing the memtable, so no other write interleaves.
//!
//! A load into several families at once ([`load_families`]) takes each
//! family's records whole, builds one segment per family, up to
//! `Options::background_threads` families at a time (sharing those
//! threads and `Options::build_memory_bytes` between them), and installs them all
//! in one edit with one sequence number: readers and recovery see every
//! family's records or none (a table's rows and its indexes, say). A
//! failed build removes what the others built.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::core::{Edit, Inner};
use crate::dbformat::{tag, Kind, NO_DEADLINE};
use crate::error::{Error, Result};
use crate::model_file::ModelFile;
use crate::records::Records;
use crate::segment::writer::{Group, GroupSource, ValueRef};
use crate::segment::Segment;
use crate::training::{self, Coding};

/// A chunk of a bulk load as a build input: its records, and the one
/// kept for each key in key order.
struct BulkSource {
    records: Records,
    /// The version of each kept record, in key order, its `index` the
    /// record's number in `records` (lent out by `groups`, one allocation
    /// for all).
    versions: Vec<(u64, ValueRef)>,
}

impl BulkSource {
    /// The last of each key of `records`, all written with `tag`.
    fn new(records: Records, tag: u64) -> Self {
        let versions = records
            .last_of_each_key()
            .into_iter()
            .map(|index| {
                let v = ValueRef {
                    src: 0,
                    index: u64::from(index),
                    deadline: NO_DEADLINE,
                };
                (tag, v)
            })
            .collect();
        BulkSource { records, versions }
    }

    /// Distinct keys.
    fn keys(&self) -> u64 {
        self.versions.len() as u64
    }
}

impl GroupSource for BulkSource {
    fn groups(&self) -> Box<dyn Iterator<Item = Result<Group<'_>>> + '_> {
        Box::new(self.versions.chunks(1).map(|v| {
            Ok(Group {
                key: Cow::Borrowed(self.records.key(v[0].1.index as usize)),
                versions: Cow::Borrowed(v),
            })
        }))
    }

    fn value(&self, v: &ValueRef, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        out.extend_from_slice(self.value_in_memory(v).unwrap_or_default());
        Ok(())
    }

    fn value_in_memory(&self, v: &ValueRef) -> Option<&[u8]> {
        usize::try_from(v.index)
            .ok()
            .filter(|&i| i < self.records.len())
            .map(|i| self.records.value(i))
    }
}

/// Memory a record of a chunk takes beside its key and value bytes: two
/// offsets in [`Records`], and while it is built its number in key order
/// and its version.
const RECORD_OVERHEAD: usize = 2 * 8 + 4 + 32;

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

/// Loads `records` into family `family`; see the module documentation and
/// `DB::try_bulk_load`.
pub(crate) fn load<I, K, V, E>(inner: &Inner, family: u32, records: I) -> Result<BulkStats, E>
where
    I: IntoIterator<Item = Result<(K, V), E>>,
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
    E: From<Error>,
{
    let _role = inner.writer_role();
    inner.check_writable()?;
    if inner.with_state(|st| st.tree(family).is_none()) {
        return Err(Error::NoSuchFamily {
            name: format!("id {family}"),
        }
        .into());
    }
    if inner.with_state(|st| st.trees.iter().any(|t| !t.mem.is_empty())) {
        inner.switch_memtable()?;
    }
    inner.wait_for(|st, _| st.frozen_generations() == 0)?;
    let mut stats = BulkStats::default();
    // Decided on the first chunk: a load trains at most one model.
    let mut coding: Option<Coding> = None;
    let mut chunk = Records::new();
    let mut input = records.into_iter();
    loop {
        let next = input.next().transpose()?;
        if let Some((k, v)) = &next {
            chunk.push(k.as_ref(), v.as_ref());
            stats.records += 1;
            if chunk.bytes() + chunk.len() * RECORD_OVERHEAD < inner.options.bulk_chunk_bytes {
                continue;
            }
        }
        if !chunk.is_empty() {
            stats.keys += load_chunk(inner, family, std::mem::take(&mut chunk), &mut coding)?;
            stats.segments += 1;
        }
        if next.is_none() {
            return Ok(stats);
        }
    }
}

/// Sorts, builds and installs one chunk; returns its distinct keys. The
/// first chunk of a load decides its `coding` (and may train a model).
fn load_chunk(
    inner: &Inner,
    family: u32,
    records: Records,
    coding: &mut Option<Coding>,
) -> Result<u64> {
    let seq = inner.last_seq.load(Ordering::Acquire) + 1;
    let built = build_chunk(inner, family, records, seq, coding, 1)?;
    let Some(segment) = built.segment else {
        return Ok(0);
    };
    inner.apply(Edit {
        added: vec![(family, segment)],
        last_seq: seq,
        publish_seq: Some(seq),
        models: built.model.map(|m| (family, m)).into_iter().collect(),
        ..Edit::default()
    })?;
    Ok(built.keys)
}

/// A chunk built into a segment, not yet installed.
struct Built {
    family: u32,
    /// `None` when the chunk held no record.
    segment: Option<Arc<Segment>>,
    /// The model trained for it, if one was.
    model: Option<Arc<ModelFile>>,
    keys: u64,
    records: u64,
}

impl Built {
    /// Its files go with their last reference: for a build that will
    /// never be installed.
    fn discard(&self) {
        if let Some(s) = &self.segment {
            s.mark_obsolete();
        }
        if let Some(m) = &self.model {
            m.set_obsolete(true);
        }
    }
}

/// Orders `records` (the last of repeated keys wins) and builds them into
/// one segment of `family` at sequence number `seq`; `coding` is decided
/// here when it is `None` (and may train a model, returned in `Built`).
/// `builds` builds run at once, this one included, sharing the threads
/// and the memory budget.
fn build_chunk(
    inner: &Inner,
    family: u32,
    records: Records,
    seq: u64,
    coding: &mut Option<Coding>,
    builds: usize,
) -> Result<Built> {
    let count = records.len() as u64;
    if records.len() > Records::MAX_ORDERED {
        return Err(Error::InvalidArgument(format!(
            "a bulk load of {count} records into one segment; at most {} fit",
            Records::MAX_ORDERED
        )));
    }
    let source = BulkSource::new(records, tag(seq, Kind::Put));
    let keys = source.keys();
    let c = match coding {
        Some(c) => c,
        None => coding.insert(training::coding_for(inner, family, &source, builds)?),
    };
    let model = c.model.clone().filter(|_| c.trained);
    let built = inner.build_segment(
        family,
        &source,
        &inner.options.merge_zip,
        c.model.as_ref(),
        builds,
    );
    let segment = match built {
        Ok(s) => s,
        Err(e) => {
            if let Some(m) = &model {
                m.set_obsolete(true);
            }
            return Err(e);
        }
    };
    // Trained once: a later chunk of the same load encodes with it.
    c.trained = false;
    Ok(Built {
        family,
        segment,
        model,
        keys,
        records: count,
    })
}

/// Loads each family's records into one new segment per family, the
/// families built in parallel, and installs them all in one edit; see the
/// module documentation and `DB::bulk_load_families`.
pub(crate) fn load_families(inner: &Inner, mut loads: Vec<(u32, Records)>) -> Result<BulkStats> {
    let _role = inner.writer_role();
    inner.check_writable()?;
    let mut ids: Vec<u32> = loads.iter().map(|(f, _)| *f).collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::InvalidArgument(format!(
            "a bulk load names column family id {} twice",
            w[0]
        )));
    }
    if let Some(&missing) = ids
        .iter()
        .find(|&&f| inner.with_state(|st| st.tree(f).is_none()))
    {
        return Err(Error::NoSuchFamily {
            name: format!("id {missing}"),
        });
    }
    if inner.with_state(|st| st.trees.iter().any(|t| !t.mem.is_empty())) {
        inner.switch_memtable()?;
    }
    inner.wait_for(|st, _| st.frozen_generations() == 0)?;
    let seq = inner.last_seq.load(Ordering::Acquire) + 1;
    // Popped largest first, so the last family to start is a small one.
    loads.sort_by_key(|(_, r)| r.bytes());
    let queue = Mutex::new(loads);
    let results: Mutex<Vec<Result<Built>>> = Mutex::new(Vec::new());
    // After a failure, no family is started: the load fails whole.
    let failed = AtomicBool::new(false);
    let workers = inner.options.background_threads.clamp(1, ids.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let next = crate::core::lock(&queue).pop();
                let Some((family, records)) = next.filter(|_| !failed.load(Ordering::Acquire))
                else {
                    return;
                };
                let mut coding = None;
                let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    build_chunk(inner, family, records, seq, &mut coding, workers)
                }))
                .unwrap_or_else(|_| {
                    // What the build left is removed at the next open.
                    Err(Error::Internal(format!(
                        "bulk load: the build of column family id {family} panicked"
                    )))
                });
                if built.is_err() {
                    failed.store(true, Ordering::Release);
                }
                crate::core::lock(&results).push(built);
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    let (built, failed): (Vec<_>, Vec<_>) = results.into_iter().partition(|r| r.is_ok());
    let built: Vec<Built> = built.into_iter().flatten().collect();
    if let Some(Err(e)) = failed.into_iter().next() {
        built.iter().for_each(Built::discard);
        return Err(e);
    }
    let mut stats = BulkStats::default();
    let mut edit = Edit {
        last_seq: seq,
        publish_seq: Some(seq),
        ..Edit::default()
    };
    for b in built {
        stats.records += b.records;
        stats.keys += b.keys;
        if let Some(segment) = b.segment {
            stats.segments += 1;
            edit.added.push((b.family, segment));
        }
        if let Some(m) = b.model {
            edit.models.push((b.family, m));
        }
    }
    if edit.added.is_empty() && edit.models.is_empty() {
        return Ok(stats);
    }
    inner.apply(edit)?;
    Ok(stats)
}
