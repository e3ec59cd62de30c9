//! Shared models: a trained global-codec model (dictionary, code lengths,
//! and the matcher's index over the dictionary) as an object of its own,
//! with its own checksummed file, used by any number of stores.
//!
//! A store built with [`crate::SharedBuilder`] holds a 16-byte reference
//! to its model ([`ModelRef`]: the model's id and the crc32c of its body)
//! instead of a dictionary, so a database keeps one copy of each model in
//! memory however many stores use it, builds stores without training, and
//! can copy a record's encoded bytes from one store to another when both
//! use the same model.
//!
//! File layout (`docs/format.md`, "Model file"), little-endian:
//!
//! ```text
//! 0   magic "PITHMDL\0"
//! 8   version u32 (1 or 2)     12  codec u32 (2: the global codec's model)
//! 16  id u64
//! 24  trained_from u64         bytes of sample records it was trained on
//! 32  ratio f32                raw / encoded bytes on held-out records
//! 36  literal price f32        the parse's average literal cost, in bits
//! 40  body length u64
//! 48  body crc32c u32          52  crc32c of bytes 0..52 u32
//! 56  body: the global codec's model section ("PZG1 ..." in version 1,
//!     "PZG2 ...", with a hot table, in version 2)
//! ```
//!
//! Invariants of an opened `Model`: both checksums matched, the body is a
//! valid model section (prefix codes, a dictionary that inflates to its
//! stated size), and `fingerprint` is the crc32c of that body. The
//! matcher's index (its chains, four bytes per dictionary byte, plus up
//! to 16 MiB of chain heads; it reads the decoder's dictionary, no copy)
//! is built when an encoder needs it and freed when
//! the last encoder using it is dropped: an idle or read-only database
//! holds only the dictionary and the decode tables.

use std::sync::{Arc, Mutex, Weak};

use pith_enc::le;

use crate::builder::{
    split_sample, strided, strided_split, trial_bytes, Options, SURVEY_BYTES, TRAINING_BYTES,
    TRIAL_BYTES,
};
use crate::error::{Error, Result};
use crate::global::{self, DictIndex, Effort};

/// Model file magic.
pub const MODEL_MAGIC: [u8; 8] = *b"PITHMDL\0";
/// Model file version: 1 holds a version 1 model section ("PZG1"), 2 a
/// version 2 one ("PZG2", with a hot table). The trainer writes 1 for a
/// model without hot positions, so builds from before version 2 read it.
const VERSION: u32 = 2;
const GLOBAL: u32 = 2;
/// Bytes of the model file header.
pub const MODEL_HEADER_BYTES: usize = 56;

/// Which model a store was encoded with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelRef {
    /// The model's id (the engine uses the model file's number).
    pub id: u64,
    /// crc32c of the model's body: a store refuses a model file that
    /// carries its id but other contents.
    pub fingerprint: u32,
}

/// Keeps a model's matcher index alive ([`Model::hold_index`]).
pub struct IndexHold {
    _index: Arc<DictIndex>,
}

impl std::fmt::Debug for IndexHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IndexHold")
    }
}

/// A trained model of the global codec, shared by the stores encoded with
/// it. `Send + Sync`; wrap it in an `Arc` to share.
pub struct Model {
    id: u64,
    fingerprint: u32,
    trained_from: u64,
    ratio: f32,
    literal_price: f32,
    lengths: Vec<Vec<u8>>,
    decoder: global::Decoder,
    /// The matcher's index while some encoder holds it.
    index: Mutex<Weak<DictIndex>>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("fingerprint", &self.fingerprint)
            .field("dict_bytes", &self.decoder.dict_len())
            .field("ratio", &self.ratio)
            .finish()
    }
}

impl Model {
    /// Trains model `id` on `sample` (records like those it will encode;
    /// at most [`Options::sample_bytes`] of them are used), drawn from
    /// `data_bytes` of data: even-numbered records become dictionary
    /// material (at most [`Options::global_dict_bytes`], and at most
    /// `data_bytes / global_dict_divisor`: a dictionary larger than a
    /// sixteenth of the data it serves costs more than it saves),
    /// odd-numbered ones are held out: a strided part of them (at most
    /// half) measures the ratio, and the rest train the codes and pick
    /// which dictionary bytes are kept (those some match of theirs
    /// copies). Data that zstd cannot compress at all (see
    /// [`PROBE_RATIO`]) gets no dictionary: it would find nothing, and
    /// building and keeping it costs. Returns the model and its file
    /// bytes.
    pub fn train<R: AsRef<[u8]>>(
        id: u64,
        sample: &[R],
        data_bytes: u64,
        options: &Options,
    ) -> Result<(Model, Vec<u8>)> {
        let records: Vec<&[u8]> = sample.iter().map(|r| r.as_ref()).collect();
        let records = strided(&records, options.sample_bytes.max(1));
        let (material, held) = split_sample(&records);
        let mut cap = options.global_dict_bytes.min(global::MAX_DICT);
        if options.global_dict_divisor > 0 {
            let share = data_bytes / options.global_dict_divisor as u64;
            cap = cap.min(usize::try_from(share).unwrap_or(usize::MAX));
        }
        // Incompressible data: no dictionary, and codes (of literals,
        // nearly all) learnt and measured on a probe's worth.
        let (training, trial) = match compressible(&records) {
            true => (TRAINING_BYTES, TRIAL_BYTES),
            false => {
                cap = 0;
                (PROBE_BYTES, PROBE_BYTES)
            }
        };
        let dict = strided(&material, cap).concat();
        let trained_from = records.iter().map(|r| r.len() as u64).sum();
        // The ratio is measured on records that neither trained the codes
        // nor chose the dictionary bytes kept.
        let (trial, rest) = strided_split(&held, trial_bytes(&held, trial));
        let mut encoder = global::Encoder::train(
            &dict,
            &strided(&rest, training),
            &strided(&rest, SURVEY_BYTES),
            options.global_depth,
            options.threads,
            options.effort,
        );
        // The trial and the dictionary's zstd frame take about as long
        // (20 and 25 ms for Debian's 1.1 MB dictionary) and need nothing
        // from each other: on two threads when the options allow two.
        let dict = encoder.index().shared_dict().clone();
        let pack = || global::compress_dict(dict.bytes(), global::MODEL_DICT_LEVEL);
        let (ratio, packed) = std::thread::scope(|s| {
            let packing = (options.threads > 1).then(|| s.spawn(pack));
            let ratio = ratio_of(&mut encoder, &trial).unwrap_or(1.0);
            let packed = match packing {
                Some(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                None => pack(),
            };
            (ratio, packed)
        });
        let body = encoder.model_bytes_with(&packed?);
        let index = Arc::downgrade(encoder.index());
        // The decoder takes the encoder's dictionary as it is (no copy),
        // and an index built over it later shares it too.
        let decoder = global::Decoder::over(
            encoder.index().shared_dict().clone(),
            encoder.lengths(),
            encoder.hot(),
        )?;
        let model = Model {
            id,
            fingerprint: crc32c::crc32c(&body),
            trained_from,
            ratio,
            literal_price: encoder.literal_price(),
            lengths: encoder.lengths().to_vec(),
            decoder,
            index: Mutex::new(index),
        };
        let bytes = model.file_bytes(&body);
        Ok((model, bytes))
    }

    fn file_bytes(&self, body: &[u8]) -> Vec<u8> {
        let mut b = Vec::with_capacity(MODEL_HEADER_BYTES + body.len());
        b.extend_from_slice(&MODEL_MAGIC);
        le::put_u32(&mut b, if body.starts_with(b"PZG2") { 2 } else { 1 });
        le::put_u32(&mut b, GLOBAL);
        le::put_u64(&mut b, self.id);
        le::put_u64(&mut b, self.trained_from);
        le::put_u32(&mut b, self.ratio.to_bits());
        le::put_u32(&mut b, self.literal_price.to_bits());
        le::put_u64(&mut b, body.len() as u64);
        le::put_u32(&mut b, self.fingerprint);
        let crc = crc32c::crc32c(&b);
        le::put_u32(&mut b, crc);
        b.extend_from_slice(body);
        b
    }

    /// Opens a model from its file bytes, checking both checksums and the
    /// model section.
    pub fn open(bytes: &[u8]) -> Result<Model> {
        let corrupt = |offset: u64, detail: String| Error::Corrupt { offset, detail };
        let Some(h) = bytes.first_chunk::<MODEL_HEADER_BYTES>() else {
            return Err(Error::Truncated {
                what: "model header",
                needed: MODEL_HEADER_BYTES as u64,
                available: bytes.len() as u64,
            });
        };
        if h[..8] != MODEL_MAGIC {
            return Err(corrupt(
                0,
                "bad model magic (expected \"PITHMDL\\0\")".into(),
            ));
        }
        let (stored, computed) = (le::u32_in(h, 52), crc32c::crc32c(&h[..52]));
        if stored != computed {
            return Err(Error::ChecksumMismatch {
                region: "model header".into(),
                stored,
                computed,
            });
        }
        let version = le::u32_in(h, 8);
        if !(1..=VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion {
                expected: VERSION,
                found: version,
            });
        }
        let codec = le::u32_in(h, 12);
        if codec != GLOBAL {
            return Err(corrupt(12, format!("model of unknown codec {codec}")));
        }
        let body = &bytes[MODEL_HEADER_BYTES..];
        if le::u64_in(h, 40) != body.len() as u64 {
            return Err(corrupt(
                40,
                format!(
                    "model body of {} bytes, the header says {}",
                    body.len(),
                    le::u64_in(h, 40)
                ),
            ));
        }
        let fingerprint = crc32c::crc32c(body);
        if fingerprint != le::u32_in(h, 48) {
            return Err(Error::ChecksumMismatch {
                region: "model body".into(),
                stored: le::u32_in(h, 48),
                computed: fingerprint,
            });
        }
        let section = if version == 1 { b"PZG1" } else { b"PZG2" };
        if !body.starts_with(section) {
            return Err(corrupt(
                MODEL_HEADER_BYTES as u64,
                format!(
                    "a version {version} model file must hold a \"{}\" section",
                    String::from_utf8_lossy(section)
                ),
            ));
        }
        let global::ModelParts { dict, lengths, hot } = global::read_model(body)
            .map_err(|d| corrupt(MODEL_HEADER_BYTES as u64, format!("model section: {d}")))?;
        let decoder = global::Decoder::from_parts(dict, &lengths, &hot)?;
        let price = |at: usize| f32::from_bits(le::u32_in(h, at));
        let (ratio, literal_price) = (price(32), price(36));
        if !(ratio.is_finite() && ratio > 0.0 && literal_price.is_finite() && literal_price > 0.0) {
            return Err(corrupt(
                32,
                "model ratio or literal price is not positive".into(),
            ));
        }
        Ok(Model {
            id: le::u64_in(h, 16),
            fingerprint,
            trained_from: le::u64_in(h, 24),
            ratio,
            literal_price,
            lengths,
            decoder,
            index: Mutex::new(Weak::new()),
        })
    }

    /// The model's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// What a store encoded with this model records about it.
    pub fn reference(&self) -> ModelRef {
        ModelRef {
            id: self.id,
            fingerprint: self.fingerprint,
        }
    }

    /// Bytes of sample records the model was trained on.
    pub fn trained_from(&self) -> u64 {
        self.trained_from
    }

    /// Raw over encoded bytes on records held out of training.
    pub fn ratio(&self) -> f32 {
        self.ratio
    }

    /// Size of the inflated dictionary.
    pub fn dict_bytes(&self) -> usize {
        self.decoder.dict_len()
    }

    /// Memory the model holds: dictionary and decode tables, plus the
    /// matcher's index while an encoder uses it.
    pub fn heap_bytes(&self) -> usize {
        self.decoder.heap_bytes() + self.live_index().map_or(0, |i| i.heap_bytes())
    }

    /// True when a live matcher index reads the decoder's dictionary
    /// rather than a copy of it.
    #[cfg(test)]
    pub(crate) fn shares_dictionary_with_index(&self) -> bool {
        self.live_index()
            .is_some_and(|i| Arc::ptr_eq(i.shared_dict(), self.decoder.shared_dict()))
    }

    fn live_index(&self) -> Option<Arc<DictIndex>> {
        self.index
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .upgrade()
    }

    /// Raw over encoded bytes of at most about `budget` bytes of `records`
    /// (evenly strided) with this model, encoded as `options` say (their
    /// [`Options::effort`] and [`Options::global_depth`]), plain records
    /// counted at their size as a store keeps them: compared with
    /// [`Model::ratio`] (measured with the options it was trained with),
    /// it says whether data has drifted from the model.
    pub fn ratio_on<R: AsRef<[u8]>>(&self, records: &[R], budget: usize, options: &Options) -> f32 {
        let records: Vec<&[u8]> = records.iter().map(|r| r.as_ref()).collect();
        let mut encoder = self.encoder(options);
        ratio_of(&mut encoder, &strided(&records, budget)).unwrap_or(self.ratio)
    }

    /// Keeps the matcher's index (building it if needed) for as long as
    /// the returned value lives, so encoders made meanwhile do not build
    /// it again.
    pub fn hold_index(&self, options: &Options) -> IndexHold {
        IndexHold {
            _index: self.index(options.effort),
        }
    }

    /// An encoder (one per thread) parsing as `options` say. The first one
    /// builds the matcher's index; the others share it.
    pub(crate) fn encoder(&self, options: &Options) -> global::Encoder {
        global::Encoder::for_model(
            self.index(options.effort),
            self.lengths.clone(),
            global::HotTable::from_positions(self.decoder.hot_positions().to_vec()),
            self.literal_price,
            options.global_depth,
            options.effort,
        )
    }

    /// The matcher's index, built when nothing holds one fit for `effort`
    /// (the thorough parse needs the chains, the fast one only the heads).
    fn index(&self, effort: Effort) -> Arc<DictIndex> {
        let chains = effort == Effort::Thorough;
        let mut slot = self.index.lock().unwrap_or_else(|p| p.into_inner());
        match slot.upgrade() {
            Some(index) if index.has_chains() || !chains => index,
            _ => {
                let index = Arc::new(DictIndex::over(self.decoder.shared_dict().clone(), chains));
                *slot = Arc::downgrade(&index);
                index
            }
        }
    }

    pub(crate) fn decoder(&self) -> &global::Decoder {
        &self.decoder
    }
}

/// Raw over zstd (level 1) bytes of a probe of the sample (about
/// [`PROBE_BYTES`] of its records, evenly strided, one after another)
/// under which the data is taken to be incompressible (random bytes,
/// hashes, compressed media): what repeats within and across records, a
/// dictionary included, zstd finds in the probe too.
pub const PROBE_RATIO: f64 = 1.05;
/// Bytes of the compressibility probe.
const PROBE_BYTES: usize = 256 << 10;

/// False when the records look incompressible (see [`PROBE_RATIO`]):
/// what [`Model::train`] decides a dictionary on, for callers deciding
/// whether data that did not compress may now.
pub fn compressible<R: AsRef<[u8]>>(records: &[R]) -> bool {
    let records: Vec<&[u8]> = records.iter().map(|r| r.as_ref()).collect();
    let probe = strided(&records, PROBE_BYTES).concat();
    match zstd::bulk::compress(&probe, 1) {
        Ok(c) => probe.len() as f64 >= PROBE_RATIO * c.len() as f64,
        // Undecided: train as usual.
        Err(_) => true,
    }
}

/// Raw over encoded bytes of `records` with `encoder`, a record the
/// encoding does not shrink counted at its size (it is stored plain);
/// `None` when there are no bytes to encode.
fn ratio_of(encoder: &mut global::Encoder, records: &[&[u8]]) -> Option<f32> {
    let (mut raw, mut encoded, mut out) = (0usize, 0usize, Vec::new());
    for r in records {
        out.clear();
        encoder.encode(r, &mut out);
        raw += r.len();
        encoded += out.len().min(r.len());
    }
    (encoded > 0).then(|| raw as f32 / encoded as f32)
}
