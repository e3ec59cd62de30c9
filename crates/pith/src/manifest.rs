//! The manifest: which segments and shared models are live, which logs
//! still matter.
//!
//! One small file, `MANIFEST`, replaced whole on every change: written to
//! `MANIFEST.tmp`, synced, renamed over `MANIFEST`, and the directory
//! synced (through the file-system seam). A failed write removes its
//! temporary file; the caller keeps its old in-memory manifest and stops
//! writes, because after a failed rename or directory sync it cannot know
//! which manifest the disk holds. A rename is atomic, so after a crash the manifest is either the
//! old or the new one, never a mix (`docs/format.md`, "Manifest"):
//!
//! ```text
//! "PITHMAN\0" | version u32 (2) | segment count u32
//! next_file u64 | last_seq u64 | log_number u64
//! current_model u64 (0: none) | model count u32 | reserved u32 (0)
//! count x ( file_number u64 | keys u64 | records u64 | min_seq u64 | max_seq u64
//!           | file_bytes u64 | model u64 (0: none) )
//! model count x model file number u64, ascending
//! crc32c of everything before it u32
//! ```
//!
//! Segments are listed oldest first; their sequence ranges do not overlap
//! and increase down the list. Logs numbered `>= log_number` hold writes
//! not yet in any segment; older logs are garbage. The model list holds
//! exactly the models some segment is encoded with, plus the current one
//! (what new segments are encoded with); a model file not listed is
//! garbage. Version 1 (no model fields, 48-byte segment entries) is still
//! read; it is rewritten as version 2 on the next change.

use std::path::Path;

use pith_enc::le;

use crate::env::Fs;
use crate::error::{Error, Result};
use crate::filename::{MANIFEST, MANIFEST_TMP};
const MAGIC: &[u8; 8] = b"PITHMAN\0";
const VERSION: u32 = 2;
const FIXED_V1: usize = 40;
const PER_SEGMENT_V1: usize = 48;
const FIXED: usize = 56;
const PER_SEGMENT: usize = 56;

/// One live segment as the manifest records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SegmentEntry {
    pub number: u64,
    pub keys: u64,
    pub records: u64,
    pub min_seq: u64,
    pub max_seq: u64,
    pub file_bytes: u64,
    /// The shared model its values are encoded with (0: none).
    pub model: u64,
}

/// The manifest's contents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// Next unused file number (logs and segments share the sequence).
    pub next_file: u64,
    /// Highest sequence number stored in a segment.
    pub last_seq: u64,
    /// Oldest log still needed.
    pub log_number: u64,
    /// Live segments, oldest first.
    pub segments: Vec<SegmentEntry>,
    /// The model new segments are encoded with (0: none yet).
    pub current_model: u64,
    /// Live model files, ascending: those of `segments`, and the current.
    pub models: Vec<u64>,
}

impl Manifest {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(
            FIXED + PER_SEGMENT * self.segments.len() + 8 * self.models.len() + 4,
        );
        b.extend_from_slice(MAGIC);
        le::put_u32(&mut b, VERSION);
        le::put_u32(&mut b, self.segments.len() as u32);
        for v in [
            self.next_file,
            self.last_seq,
            self.log_number,
            self.current_model,
        ] {
            le::put_u64(&mut b, v);
        }
        le::put_u32(&mut b, self.models.len() as u32);
        le::put_u32(&mut b, 0);
        for s in &self.segments {
            for v in [
                s.number,
                s.keys,
                s.records,
                s.min_seq,
                s.max_seq,
                s.file_bytes,
                s.model,
            ] {
                le::put_u64(&mut b, v);
            }
        }
        for &n in &self.models {
            le::put_u64(&mut b, n);
        }
        let crc = crc32c::crc32c(&b);
        le::put_u32(&mut b, crc);
        b
    }

    pub(crate) fn decode(path: &Path, b: &[u8]) -> Result<Manifest> {
        let corrupt = |offset: usize, detail: &str| Error::corrupt(path, offset as u64, detail);
        if b.len() < FIXED_V1 + 4 {
            return Err(corrupt(0, "manifest is shorter than its fixed part"));
        }
        if &b[..8] != MAGIC {
            return Err(corrupt(0, "bad manifest magic (expected \"PITHMAN\\0\")"));
        }
        // In bounds: the fixed part was checked above and below, the
        // tables once the length matches the counts.
        let u32_at = |at: usize| le::u32_at(b, at).unwrap_or(0);
        let u64_at = |at: usize| le::u64_at(b, at).unwrap_or(0);
        let version = u32_at(8);
        if version != 1 && version != VERSION {
            // Its layout is unknown, so its checksum cannot be found.
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                expected: VERSION,
                found: version,
            });
        }
        let count = u32_at(12) as usize;
        let (fixed, per_segment, models) = match version {
            1 => (FIXED_V1, PER_SEGMENT_V1, 0),
            _ if b.len() < FIXED + 4 => {
                return Err(corrupt(0, "manifest is shorter than its fixed part"))
            }
            _ => (FIXED, PER_SEGMENT, u32_at(48) as usize),
        };
        let expected = fixed + per_segment * count + 8 * models + 4;
        if b.len() != expected {
            return Err(corrupt(
                12,
                &format!(
                    "manifest of {} bytes, but {count} segments and {models} models need {expected}",
                    b.len()
                ),
            ));
        }
        let (stored, computed) = (u32_at(expected - 4), crc32c::crc32c(&b[..expected - 4]));
        if stored != computed {
            return Err(corrupt(
                expected - 4,
                &format!(
                    "manifest checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
                ),
            ));
        }
        if version == VERSION && u32_at(52) != 0 {
            return Err(corrupt(52, "reserved manifest field is not zero"));
        }
        let mut m = Manifest {
            next_file: u64_at(16),
            last_seq: u64_at(24),
            log_number: u64_at(32),
            segments: Vec::with_capacity(count),
            current_model: if version == 1 { 0 } else { u64_at(40) },
            models: Vec::with_capacity(models),
        };
        for i in 0..count {
            let at = fixed + per_segment * i;
            m.segments.push(SegmentEntry {
                number: u64_at(at),
                keys: u64_at(at + 8),
                records: u64_at(at + 16),
                min_seq: u64_at(at + 24),
                max_seq: u64_at(at + 32),
                file_bytes: u64_at(at + 40),
                model: if version == 1 { 0 } else { u64_at(at + 48) },
            });
        }
        let models_at = fixed + per_segment * count;
        m.models = (0..models).map(|i| u64_at(models_at + 8 * i)).collect();
        let mut prev_max = None;
        for s in &m.segments {
            if s.number >= m.next_file
                || s.min_seq > s.max_seq
                || prev_max.is_some_and(|p| s.min_seq <= p)
                || s.max_seq > m.last_seq
            {
                return Err(corrupt(
                    fixed,
                    &format!(
                        "segment {} has an impossible file number or sequence range",
                        s.number
                    ),
                ));
            }
            if s.model != 0 && m.models.binary_search(&s.model).is_err() {
                return Err(corrupt(
                    fixed,
                    &format!(
                        "segment {} uses model {}, which is not listed",
                        s.number, s.model
                    ),
                ));
            }
            prev_max = Some(s.max_seq);
        }
        if m.models.windows(2).any(|w| w[0] >= w[1])
            || m.models.iter().any(|&n| n == 0 || n >= m.next_file)
            || (m.current_model != 0 && m.models.binary_search(&m.current_model).is_err())
        {
            return Err(corrupt(
                models_at,
                "model list is not ascending live file numbers including the current model",
            ));
        }
        if m.log_number > m.next_file {
            return Err(corrupt(32, "log number is past the next file number"));
        }
        Ok(m)
    }

    /// Reads `dir/MANIFEST`; `None` when there is none.
    pub(crate) fn read(fs: &dyn Fs, dir: &Path) -> Result<Option<Manifest>> {
        let path = dir.join(MANIFEST);
        match fs.read(&path) {
            Ok(b) => Manifest::decode(&path, &b).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Replaces `dir/MANIFEST` atomically and durably.
    pub(crate) fn write(&self, fs: &dyn Fs, dir: &Path) -> Result<()> {
        let tmp = dir.join(MANIFEST_TMP);
        let result = write_tmp(fs, &tmp, &self.encode());
        if result.is_err() {
            // Best effort: a leftover is removed by the next write or open.
            let _ = fs.remove(&tmp);
        }
        result?;
        let path = dir.join(MANIFEST);
        fs.rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
        fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
    }
}

/// Writes and syncs a new `tmp`, replacing a leftover one.
fn write_tmp(fs: &dyn Fs, tmp: &Path, bytes: &[u8]) -> Result<()> {
    let io = |e| Error::io(tmp, e);
    match fs.remove(tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
        _ => {}
    }
    let mut f = fs.create(tmp).map_err(io)?;
    f.append(bytes).map_err(io)?;
    f.sync().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            next_file: 9,
            last_seq: 100,
            log_number: 8,
            segments: vec![
                SegmentEntry {
                    number: 3,
                    keys: 10,
                    records: 11,
                    min_seq: 1,
                    max_seq: 40,
                    file_bytes: 999,
                    model: 2,
                },
                SegmentEntry {
                    number: 7,
                    keys: 5,
                    records: 5,
                    min_seq: 41,
                    max_seq: 100,
                    file_bytes: 500,
                    model: 0,
                },
            ],
            current_model: 6,
            models: vec![2, 6],
        }
    }

    #[test]
    fn round_trip_and_every_flip_detected() {
        let p = Path::new("MANIFEST");
        let m = sample();
        let b = m.encode();
        assert_eq!(Manifest::decode(p, &b).expect("decodes"), m);
        for i in 0..b.len() {
            let mut f = b.clone();
            f[i] ^= 0x10;
            assert!(Manifest::decode(p, &f).is_err(), "flip at {i} not detected");
        }
        for cut in 0..b.len() {
            assert!(Manifest::decode(p, &b[..cut]).is_err());
        }
    }
}
