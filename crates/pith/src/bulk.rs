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

use std::sync::atomic::Ordering;

use crate::core::{Edit, Inner};
use crate::dbformat::{tag, Kind, NO_DEADLINE};
use crate::error::{Error, Result};
use crate::segment::writer::{Group, GroupSource, ValueRef};
use crate::training::{self, Coding};

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
                        deadline: NO_DEADLINE,
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
            stats.keys += load_chunk(inner, family, std::mem::take(&mut chunk), &mut coding)?;
            stats.segments += 1;
            bytes = 0;
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
    mut records: Vec<(Vec<u8>, Vec<u8>)>,
    coding: &mut Option<Coding>,
) -> Result<u64> {
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
    let keys = deduped.len() as u64;
    let source = BulkSource {
        records: deduped,
        tag: tag(seq, Kind::Put),
    };
    let first = coding.is_none();
    let c = match coding {
        Some(c) => c,
        None => coding.insert(training::coding_for(inner, family, &source)?),
    };
    let Some(segment) = inner.build_segment(&source, &inner.options.merge_zip, c.model.as_ref())?
    else {
        return Ok(0);
    };
    drop(source);
    let models = c.model.clone().filter(|_| first && c.trained);
    inner.apply(Edit {
        added: vec![(family, segment)],
        last_seq: seq,
        publish_seq: Some(seq),
        models: models.map(|m| (family, m)).into_iter().collect(),
        ..Edit::default()
    })?;
    Ok(keys)
}
