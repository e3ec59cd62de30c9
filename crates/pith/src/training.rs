//! When the database trains a shared compression model, and training it.
//!
//! Segments are encoded with the database's current model (see
//! `model_file`), so flushes and merges never train on the write path's
//! critical data; a model is trained only when one of these holds, checked
//! on each flush and once per bulk load, on an evenly strided sample of
//! the newest values being written (at most `merge_zip.sample_bytes`):
//!
//! * **None yet**: there is no current model and the sample holds at least
//!   [`MIN_TRAINING_BYTES`]. (Below that, the segment's store gets a codec
//!   of its own, as `flush_zip` says, and a later flush trains.)
//! * **Drift**: the current model encodes at most 256 KiB of the sample to
//!   a ratio below [`DRIFT`] (0.8) times the ratio it reached on held-out
//!   records when it was trained: the data no longer looks like what the
//!   model was trained on.
//! * **Outgrown**: the sample is at least [`OUTGROWN`] (4) times the bytes
//!   the current model was trained on (it came from a small first flush;
//!   each retrain at least quadruples its material, so there are few).
//!
//! Merges never train: they encode with the current model and copy the
//! records already encoded with it. With `Options::shared_models` off,
//! nothing here runs and every store carries its own codec, as before.
//!
//! The dictionary is at most a sixteenth of the values the model is
//! trained for (`merge_zip.global_dict_divisor`), so a small first flush
//! gets a small model, replaced (outgrown) as the data grows.
//!
//! Cost: the sample is one pass over the values; the drift check encodes up to 256 KiB (tens of milliseconds);
//! training itself (dictionary index, three parses of up to 4 MiB, the
//! dictionary's zstd frame) takes a few seconds at the defaults and is
//! rare.

use std::sync::Arc;

use crate::core::Inner;
use crate::error::{Error, Result};
use crate::model_file::ModelFile;
use crate::segment::writer::GroupSource;

/// The least sample a first model is trained from.
pub(crate) const MIN_TRAINING_BYTES: usize = 4 << 10;
/// A current model encoding new data below this share of its training
/// ratio is replaced.
pub(crate) const DRIFT: f32 = 0.8;
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
pub(crate) fn coding_for(inner: &Inner, source: &dyn GroupSource) -> Result<Coding> {
    let current = inner.current().model.clone();
    if !inner.options.shared_models {
        return Ok(Coding {
            model: None,
            trained: false,
            _index: None,
        });
    }
    let zip = inner.options.within_build_budget(&inner.options.merge_zip);
    let (sample, data_bytes) = sample_values(source, zip.sample_bytes)?;
    // The drift check builds the model's matcher index; it is kept for
    // the build that follows.
    let mut hold = None;
    let reason = match &current {
        None => (sample.bytes() >= MIN_TRAINING_BYTES).then_some(Reason::NoneYet),
        Some(m)
            if sample.bytes() as u64 >= OUTGROWN.saturating_mul(m.model.trained_from().max(1)) =>
        {
            Some(Reason::Outgrown)
        }
        Some(m) => {
            let model = &m.model;
            hold = Some(model.hold_index(&zip));
            let ratio = model.ratio_on(sample.records(), TRIAL_BYTES, &zip);
            (ratio < DRIFT * model.ratio()).then_some(Reason::Drift)
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
    let number = inner.new_file_number();
    let (model, bytes) = pith_zip::Model::train(number, sample.records(), data_bytes, &zip)
        .map_err(|e| Error::Internal(format!("training a shared model: {e}")))?;
    drop(sample);
    let file = ModelFile::create(&inner.fs, &inner.dir, number, model, &bytes)?;
    Ok(Coding {
        _index: Some(file.model.hold_index(&zip)),
        model: Some(file),
        trained: true,
    })
}

/// An evenly strided sample of the newest values of `source`, tombstones
/// left out, and the bytes of all those values.
fn sample_values(source: &dyn GroupSource, budget: usize) -> Result<(pith_zip::Sample, u64)> {
    let mut sample = pith_zip::Sample::new(budget);
    let mut buf = Vec::new();
    let (mut index, mut bytes) = (0u64, 0u64);
    for g in source.groups() {
        let g = g?;
        let Some((tag, v)) = g.versions.first() else {
            continue;
        };
        if crate::dbformat::tag_kind(*tag) != crate::dbformat::Kind::Put {
            continue;
        }
        source.value(v, &mut buf)?;
        sample.offer(index, &buf);
        bytes += buf.len() as u64;
        index += 1;
    }
    Ok((sample, bytes))
}
