//! When the database trains a shared compression model, and training it.
//!
//! Each column family has its own models (an index's keys and a column
//! group's values are different kinds of data); everything below is per
//! family. Segments are encoded with the family's current model (see
//! `model_file`; or stored plain while it does not pay, see
//! `model_file::PAYING_RATIO`), so flushes and merges never train on the
//! write path's critical data; a model is trained only when one of these
//! holds, checked
//! on each flush and once per bulk load, on an evenly strided sample of
//! the newest values being written (at most `merge_zip.sample_bytes`):
//!
//! * **None yet**: there is no current model and the sample holds at least
//!   [`MIN_TRAINING_BYTES`]. (Below that, the segment's store gets a codec
//!   of its own, as `flush_zip` says, and a later flush trains.)
//! * **Drift**: the current model encodes at most 256 KiB of the sample to
//!   a ratio below [`DRIFT`] (0.5) times the ratio it reached on held-out
//!   records when it was trained: the data no longer looks like what the
//!   model was trained on. For a current model that does not pay (its
//!   values stored plain), the other way: the sample now passes the
//!   compressibility probe (`pith_zip::compressible`), so a model may pay.
//!   Why 0.5: the trained ratio is measured on records whose neighbours
//!   in key order gave the dictionary its bytes, so new data of the same
//!   kind in new keys scores below it. Measured shares, a model trained
//!   on the first half of each set's values (`../shared` Debian, 60 MB of
//!   rustdoc pages in 1 KB pieces, this machine's file paths and Debian's
//!   URLs, 8 to a value) on the second half of its own set: Debian 0.90
//!   (a fill of debian-packages at each flush: 1.01), rustdoc 0.59, paths
//!   0.55, URLs 1.07, `tests/models.rs`'s numbered packages 0.65-0.69; on
//!   the other sets: 0.07-0.49 except Debian's model on URLs 0.84 and on
//!   paths 1.58, rustdoc's on paths 0.58 and URLs' on paths 1.71 (Debian's
//!   on rustdoc: 0.49). At 0.8 every flush of same-kind rustdoc, paths or
//!   the tests' packages would retrain (the tests did); at 0.5 none does,
//!   and the four other-kind cases above 0.5 are missed: this rule
//!   compares the model with itself. Comparing it with a fresh model
//!   would catch them, but one trained on the older part of a flush's
//!   sample and judged on the newer part was 19-32% better than the
//!   current one on the tests' packages (whose numbers follow their
//!   keys), and 20% on random text: no threshold told them apart.
//! * **Outgrown**: the sample is at least [`OUTGROWN`] (4) times the bytes
//!   the current model was trained on (it came from a small first flush;
//!   each retrain at least quadruples its material, so there are few).
//!
//! **Early**: while there is no model yet and memtables are at least twice
//! the training sample (`merge_zip.sample_bytes`, 16 MiB by default), the
//! flush thread trains one from the live memtable once it holds a sample's
//! worth, while writes go on, so the first flush finds a model and only
//! encodes (see [`train_early`]). The rules above still apply at that
//! flush: a model that does not fit the rest of the memtable is retrained
//! as drifted; it cannot be outgrown, its sample being the largest.
//!
//! Every rule needs a sample of at least [`MIN_TRAINING_BYTES`]: a smaller
//! one says nothing about the data. (Without this, a bulk load of three
//! short records once replaced a model trained on megabytes with one
//! trained on 2 bytes, and the next full merge re-encoded every record
//! with it: 3.8 MB on disk became 12.6 MB.)
//!
//! Merges never train: they encode with the current model (or store plain
//! while it does not pay) and copy the records already encoded with it. With `Options::shared_models` off,
//! nothing here runs and every store carries its own codec, as before.
//!
//! The dictionary is at most a sixteenth of the values the model is
//! trained for (`merge_zip.global_dict_divisor`), so a small first flush
//! gets a small model, replaced (outgrown) as the data grows.
//!
//! Cost: the sample is one pass over the values; the drift check encodes
//! up to 256 KiB (tens of milliseconds); training itself (dictionary
//! index, three parses of up to 2, 8 and 2 MiB, the dictionary's zstd
//! frame) takes about 0.4-0.6 s on two cores for Debian's 50 MB and is
//! rare.

use std::borrow::Cow;
use std::sync::Arc;

use crate::core::{Bg, Edit, Inner, Tree};
use crate::error::{Error, Result};
use crate::memtable::Memtable;
use crate::merge::MemSource;
use crate::model_file::{ModelFile, PAYING_RATIO};
use crate::options::Options;
use crate::segment::writer::{lent_value, GroupSource};

/// A training sample: values lent by their source where it can, else
/// copies.
type Sample<'a> = pith_zip::Sample<Cow<'a, [u8]>>;

/// The least sample a first model is trained from.
pub(crate) const MIN_TRAINING_BYTES: usize = 4 << 10;
/// A current model encoding new data below this share of its training
/// ratio is replaced (see the module docs for why 0.5).
pub(crate) const DRIFT: f32 = 0.5;
/// A sample this many times the current model's training bytes replaces it.
pub(crate) const OUTGROWN: u64 = 4;
/// Bytes of the sample the drift check encodes.
const TRIAL_BYTES: usize = 256 << 10;

/// How the next segment's values are encoded.
pub(crate) struct Coding {
    /// The model to encode with, if any.
    pub model: Option<Arc<ModelFile>>,
    /// Set when `model` was trained just now: the edit installing the
    /// segment makes it current.
    pub trained: bool,
    /// The model's matcher index, built once for the drift check and the
    /// build that follows.
    pub _index: Option<pith_zip::IndexHold>,
}

/// Why a model is trained.
#[derive(Debug, PartialEq, Eq)]
enum Reason {
    NoneYet,
    Drift,
    Outgrown,
}

/// Decides how to encode the values of `source` (a flush or a bulk-load
/// chunk), training a new model when a rule above says so.
///
/// `builds` is how many builds run at once with this one (see
/// `Inner::build_segment`): training takes its share of the threads and
/// of the memory budget.
pub(crate) fn coding_for(
    inner: &Inner,
    family: u32,
    source: &dyn GroupSource,
    builds: usize,
) -> Result<Coding> {
    let current = inner.with_state(|st| st.tree(family).and_then(|t| t.model.clone()));
    if !inner.options.shared_models {
        return Ok(Coding {
            model: None,
            trained: false,
            _index: None,
        });
    }
    let zip = inner
        .options
        .within_share_of_budget(&inner.options.merge_zip, builds);
    let (sample, data_bytes) = sample_values(source, zip.sample_bytes)?;
    // The drift check builds the model's matcher index; it is kept for
    // the build that follows.
    let mut hold = None;
    let reason = match &current {
        // Too small a sample says nothing about the data.
        _ if sample.bytes() < MIN_TRAINING_BYTES => None,
        None => Some(Reason::NoneYet),
        Some(m)
            if sample.bytes() as u64 >= OUTGROWN.saturating_mul(m.model.trained_from().max(1)) =>
        {
            Some(Reason::Outgrown)
        }
        Some(m) => {
            let model = &m.model;
            hold = Some(model.hold_index(&zip));
            let drifted = match m.pays() {
                true => {
                    let ratio = model.ratio_on(sample.records(), TRIAL_BYTES, &zip);
                    ratio < DRIFT * model.ratio()
                }
                // Stored plain: the data may have become compressible
                // (the probe a dictionary is decided on).
                false => pith_zip::compressible(sample.records()),
            };
            drifted.then_some(Reason::Drift)
        }
    };
    if reason.is_none() {
        return Ok(Coding {
            model: current,
            trained: false,
            _index: hold,
        });
    }
    drop(hold);
    let file = train_model(inner, sample, data_bytes, &zip)?;
    Ok(Coding {
        _index: Some(file.model.hold_index(&zip)),
        model: Some(file),
        trained: true,
    })
}

/// Bytes of the live memtable at which [`train_early`] runs while there
/// is no model yet: the most a training sample holds, so the flush's own
/// sample cannot outgrow the model. `None` when the memtable is less than
/// twice that (too little of the fill would be left to overlap).
pub(crate) fn early_training_bytes(o: &Options) -> Option<usize> {
    // At least twice the least sample: the memtable's bytes count keys
    // and per-entry overhead besides the values a sample is made of.
    let sample = o
        .within_build_budget(&o.merge_zip)
        .sample_bytes
        .max(2 * MIN_TRAINING_BYTES);
    (o.memtable_bytes >= 2 * sample).then_some(sample)
}

/// True when the flush thread should train the first model from the live
/// memtable now (see [`train_early`]): shared models on, no model
/// yet, not tried on this memtable, and it holds enough.
pub(crate) fn early_training_due(t: &Tree, bg: &Bg, o: &Options) -> bool {
    o.shared_models
        && t.model.is_none()
        && bg.trained_early_from.get(&t.id) != Some(&t.mem.oldest_log())
        && early_training_bytes(o).is_some_and(|at| t.mem.approximate_bytes() >= at)
}

/// Trains the first model from `mem`, the live memtable (read while
/// writes go on), for the flush of a full memtable, and makes it current.
/// Does nothing when a model appeared meanwhile or the sample is too
/// small.
pub(crate) fn train_early(inner: &Inner, family: u32, mem: &Memtable) -> Result<()> {
    let has_model = inner.with_state(|st| st.tree(family).is_none_or(|t| t.model.is_some()));
    if !inner.options.shared_models || has_model {
        return Ok(());
    }
    let snapshots = inner.snapshot_list();
    let source = MemSource::new(mem, &snapshots, false, inner.now());
    let zip = inner.options.within_build_budget(&inner.options.merge_zip);
    let (sample, data_bytes) = sample_values(&source, zip.sample_bytes)?;
    if sample.bytes() < MIN_TRAINING_BYTES {
        return Ok(());
    }
    // The memtable is at least twice the sample, so the flush will hold at
    // least twice the data seen now: size the dictionary for that much (a
    // dictionary sized for the whole memtable is memory every reader
    // holds, spent before the data is known to come).
    let expected = data_bytes
        .saturating_mul(2)
        .min(inner.options.memtable_bytes as u64);
    let file = train_model(inner, sample, expected, &zip)?;
    inner.apply(Edit {
        models: vec![(family, file)],
        ..Edit::default()
    })
}

/// Trains a model on `sample` for `data_bytes` of data and writes its
/// file (durable, not yet listed in the manifest). The sample is freed
/// before the file is written.
fn train_model(
    inner: &Inner,
    sample: Sample<'_>,
    data_bytes: u64,
    zip: &pith_zip::Options,
) -> Result<Arc<ModelFile>> {
    let number = inner.new_file_number();
    let train = |zip: &pith_zip::Options| {
        pith_zip::Model::train(number, sample.records(), data_bytes, zip)
            .map_err(|e| Error::Internal(format!("training a shared model: {e}")))
    };
    let (mut model, mut bytes) = train(zip)?;
    if model.ratio() < PAYING_RATIO && model.dict_bytes() > 0 {
        // Values will be stored plain (see `PAYING_RATIO`): the model is
        // kept only so the rules above see one, and a dictionary (a
        // sixteenth of the data, on disk and in memory) would be kept for
        // nothing. Without one it is a kilobyte or two, and its entropy
        // coding alone may still pay.
        let bare = pith_zip::Options {
            global_dict_bytes: 0,
            ..zip.clone()
        };
        (model, bytes) = train(&bare)?;
    }
    drop(sample);
    ModelFile::create(&inner.fs, &inner.dir, number, model, &bytes)
}

/// An evenly strided sample of the newest values of `source`, tombstones
/// left out, and the bytes of all those values. Values the source holds
/// in memory (a memtable, a bulk load: every caller's today) are lent, not
/// copied ([`lent_value`]): a flush's drift check samples up to `budget`
/// bytes to measure a megabyte of them.
fn sample_values<'a>(source: &'a dyn GroupSource, budget: usize) -> Result<(Sample<'a>, u64)> {
    let mut sample = Sample::with_budget(budget);
    let (mut index, mut bytes) = (0u64, 0u64);
    for g in source.groups() {
        let g = g?;
        let Some((tag, v)) = g.versions.first() else {
            continue;
        };
        if crate::dbformat::tag_kind(*tag) != crate::dbformat::Kind::Put {
            continue;
        }
        let value = lent_value(source, v)?;
        let len = value.len();
        sample.offer_with(index, len, || value);
        bytes += len as u64;
        index += 1;
    }
    Ok((sample, bytes))
}
