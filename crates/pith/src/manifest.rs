//! The manifest: which column families, segments and shared models are
//! live, which logs still matter.
//!
//! One small file, `MANIFEST`, replaced whole on every change: written to
//! `MANIFEST.tmp`, synced, renamed over `MANIFEST`, and the directory
//! synced (through the file-system seam). A failed write removes its
//! temporary file; the caller keeps its old in-memory manifest and stops
//! writes, because after a failed rename or directory sync it cannot know
//! which manifest the disk holds. A rename is atomic, so after a crash the
//! manifest is either the old or the new one, never a mix
//! (`docs/format.md`, "Manifest"). Version 3, written once a database has
//! had a family besides the default one:
//!
//! ```text
//! "PITHMAN\0" | version u32 (3) | segment count u32
//! next_file u64 | last_seq u64 | log_number u64
//! family count u32 | next_family u32 | model count u32 | reserved u32 (0)
//! segment count x ( file_number u64 | keys u64 | records u64 | min_seq u64
//!                   | max_seq u64 | file_bytes u64 | model u64 (0: none)
//!                   | family u32 | reserved u32 (0) )
//! model count x model file number u64, ascending
//! family count x ( id u32 | name_len u32 | current_model u64 (0: none) | name )
//! crc32c of everything before it u32
//! ```
//!
//! Version 2 (a database with only the default family, written as before
//! so older builds still open it) has `current_model u64 | model count u32
//! | reserved u32` where version 3 has its family fields, 56-byte segment
//! entries without the family, and no family table. Version 1 (no model
//! fields, 48-byte segment entries) is still read. Both are rewritten as
//! version 3 on the first change after a family is created.
//!
//! Families are listed by ascending id, the default one (id 0, named
//! `default`) first; ids are never reused (`next_family` is past every id
//! ever given). A family's segments are listed oldest first, in the order
//! of the one segment list; their sequence ranges do not overlap and
//! increase down that order. Logs numbered `>= log_number` hold writes not
//! yet in any segment; older logs are garbage. The model list holds
//! exactly the models some segment is encoded with, plus each family's
//! current one (what its new segments are encoded with); a model file not
//! listed is garbage.

use std::path::Path;

use pith_enc::le;

use crate::env::Fs;
use crate::error::{Error, Result};
use crate::filename::{MANIFEST, MANIFEST_TMP};
const MAGIC: &[u8; 8] = b"PITHMAN\0";
/// The version written once a family besides the default exists.
const VERSION: u32 = 3;
/// The version written while only the default family ever existed.
const VERSION_ONE_FAMILY: u32 = 2;
const FIXED_V1: usize = 40;
const PER_SEGMENT_V1: usize = 48;
const FIXED: usize = 56;
const PER_SEGMENT_V2: usize = 56;
const PER_SEGMENT: usize = 64;
/// Bytes of a family entry before its name.
const PER_FAMILY: usize = 16;

/// The default family's id and name.
pub(crate) const DEFAULT_FAMILY: u32 = 0;
pub(crate) const DEFAULT_FAMILY_NAME: &str = "default";
/// Longest family name, in bytes.
pub(crate) const MAX_FAMILY_NAME: usize = 255;

/// One live segment as the manifest records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SegmentEntry {
    /// The family it belongs to.
    pub family: u32,
    pub number: u64,
    pub keys: u64,
    pub records: u64,
    pub min_seq: u64,
    pub max_seq: u64,
    pub file_bytes: u64,
    /// The shared model its values are encoded with (0: none).
    pub model: u64,
}

/// One live column family as the manifest records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FamilyEntry {
    pub id: u32,
    pub name: String,
    /// The model its new segments are encoded with (0: none yet).
    pub current_model: u64,
}

/// The manifest's contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// Next unused file number (logs and segments share the sequence).
    pub next_file: u64,
    /// Highest sequence number stored in a segment.
    pub last_seq: u64,
    /// Oldest log still needed.
    pub log_number: u64,
    /// Live segments; each family's oldest first.
    pub segments: Vec<SegmentEntry>,
    /// Live families, ascending by id, the default one first.
    pub families: Vec<FamilyEntry>,
    /// Past every family id ever given.
    pub next_family: u32,
    /// Live model files, ascending: those of `segments`, and the current
    /// ones.
    pub models: Vec<u64>,
}

impl Manifest {
    /// The manifest of a new database: no segments, the default family.
    pub(crate) fn new() -> Manifest {
        Manifest {
            next_file: 1,
            last_seq: 0,
            log_number: 0,
            segments: Vec::new(),
            families: vec![FamilyEntry {
                id: DEFAULT_FAMILY,
                name: DEFAULT_FAMILY_NAME.into(),
                current_model: 0,
            }],
            next_family: 1,
            models: Vec::new(),
        }
    }

    /// The live family `id`.
    pub(crate) fn family(&self, id: u32) -> Option<&FamilyEntry> {
        self.families.iter().find(|f| f.id == id)
    }

    /// True while only the default family ever existed: version 2 is
    /// written.
    fn one_family(&self) -> bool {
        self.next_family <= 1 && self.families.len() == 1
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let one = self.one_family();
        let per_segment = if one { PER_SEGMENT_V2 } else { PER_SEGMENT };
        let mut b = Vec::with_capacity(
            FIXED + per_segment * self.segments.len() + 8 * self.models.len() + 4,
        );
        b.extend_from_slice(MAGIC);
        le::put_u32(&mut b, if one { VERSION_ONE_FAMILY } else { VERSION });
        le::put_u32(&mut b, self.segments.len() as u32);
        for v in [self.next_file, self.last_seq, self.log_number] {
            le::put_u64(&mut b, v);
        }
        if one {
            let current = self.families.first().map_or(0, |f| f.current_model);
            le::put_u64(&mut b, current);
            le::put_u32(&mut b, self.models.len() as u32);
            le::put_u32(&mut b, 0);
        } else {
            le::put_u32(&mut b, self.families.len() as u32);
            le::put_u32(&mut b, self.next_family);
            le::put_u32(&mut b, self.models.len() as u32);
            le::put_u32(&mut b, 0);
        }
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
            if !one {
                le::put_u32(&mut b, s.family);
                le::put_u32(&mut b, 0);
            }
        }
        for &n in &self.models {
            le::put_u64(&mut b, n);
        }
        if !one {
            for f in &self.families {
                le::put_u32(&mut b, f.id);
                le::put_u32(&mut b, f.name.len() as u32);
                le::put_u64(&mut b, f.current_model);
                b.extend_from_slice(f.name.as_bytes());
            }
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
        if !(1..=VERSION).contains(&version) {
            // Its layout is unknown, so its checksum cannot be found.
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                expected: VERSION,
                found: version,
            });
        }
        let count = u32_at(12) as usize;
        let (fixed, per_segment, models, families) = match version {
            1 => (FIXED_V1, PER_SEGMENT_V1, 0, 0),
            _ if b.len() < FIXED + 4 => {
                return Err(corrupt(0, "manifest is shorter than its fixed part"))
            }
            2 => (FIXED, PER_SEGMENT_V2, u32_at(48) as usize, 0),
            _ => (FIXED, PER_SEGMENT, u32_at(48) as usize, u32_at(40) as usize),
        };
        // The fixed-size tables; version 3's family table follows, its
        // length known only by walking it.
        let tables = fixed + per_segment * count + 8 * models;
        let least = tables + PER_FAMILY * families + 4;
        let fits = match version {
            3 => b.len() >= least,
            _ => b.len() == least,
        };
        if !fits {
            return Err(corrupt(
                12,
                &format!(
                    "manifest of {} bytes, but {count} segments, {models} models and {families} families need {}{least}",
                    b.len(),
                    if version == 3 { "at least " } else { "" }
                ),
            ));
        }
        let end = b.len() - 4;
        let (stored, computed) = (u32_at(end), crc32c::crc32c(&b[..end]));
        if stored != computed {
            return Err(corrupt(
                end,
                &format!(
                    "manifest checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
                ),
            ));
        }
        if version >= 2 && u32_at(52) != 0 {
            return Err(corrupt(52, "reserved manifest field is not zero"));
        }
        let mut m = Manifest {
            next_file: u64_at(16),
            last_seq: u64_at(24),
            log_number: u64_at(32),
            segments: Vec::with_capacity(count),
            families: Vec::with_capacity(families.max(1)),
            next_family: 1,
            models: Vec::with_capacity(models),
        };
        for i in 0..count {
            let at = fixed + per_segment * i;
            if version == 3 && u32_at(at + 60) != 0 {
                return Err(corrupt(at + 60, "reserved segment field is not zero"));
            }
            m.segments.push(SegmentEntry {
                family: if version == 3 { u32_at(at + 56) } else { 0 },
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
        if version == 3 {
            m.next_family = u32_at(44);
            let mut at = tables;
            for _ in 0..families {
                let len = u32_at(at + 4) as usize;
                let name = b
                    .get(at + PER_FAMILY..end)
                    .and_then(|rest| rest.get(..len))
                    .ok_or_else(|| corrupt(at, "family name runs past the manifest's end"))?;
                let name = std::str::from_utf8(name)
                    .map_err(|_| corrupt(at + PER_FAMILY, "family name is not UTF-8"))?;
                m.families.push(FamilyEntry {
                    id: u32_at(at),
                    name: name.to_string(),
                    current_model: u64_at(at + 8),
                });
                at += PER_FAMILY + len;
            }
            if at != end {
                return Err(corrupt(at, "bytes after the family table"));
            }
        } else {
            m.families.push(FamilyEntry {
                id: DEFAULT_FAMILY,
                name: DEFAULT_FAMILY_NAME.into(),
                current_model: if version == 1 { 0 } else { u64_at(40) },
            });
        }
        m.check(path, fixed, tables)?;
        Ok(m)
    }

    /// Checks what the checksum cannot: that the contents make sense
    /// (`fixed` and `tables`: where the segment and model tables start,
    /// for error offsets).
    fn check(&self, path: &Path, fixed: usize, tables: usize) -> Result<()> {
        let corrupt = |offset: usize, detail: &str| Error::corrupt(path, offset as u64, detail);
        let m = self;
        let default_first = m
            .families
            .first()
            .is_some_and(|f| f.id == DEFAULT_FAMILY && f.name == DEFAULT_FAMILY_NAME);
        let mut names: Vec<&str> = m.families.iter().map(|f| f.name.as_str()).collect();
        names.sort_unstable();
        if !default_first
            || m.families.windows(2).any(|w| w[0].id >= w[1].id)
            || m.families.iter().any(|f| f.id >= m.next_family)
            || m.families
                .iter()
                .any(|f| f.name.is_empty() || f.name.len() > MAX_FAMILY_NAME)
            || names.windows(2).any(|w| w[0] == w[1])
        {
            return Err(corrupt(
                tables,
                "family table is not ascending ids from the default family, with distinct names",
            ));
        }
        let mut prev_max: Vec<(u32, u64)> = Vec::new();
        for s in &m.segments {
            let prev = prev_max.iter_mut().find(|(f, _)| *f == s.family);
            if m.family(s.family).is_none()
                || s.number >= m.next_file
                || s.min_seq > s.max_seq
                || prev.as_ref().is_some_and(|(_, p)| s.min_seq <= *p)
                || s.max_seq > m.last_seq
            {
                return Err(corrupt(
                    fixed,
                    &format!(
                        "segment {} has an unknown family, or an impossible file number or sequence range",
                        s.number
                    ),
                ));
            }
            match prev {
                Some(p) => p.1 = s.max_seq,
                None => prev_max.push((s.family, s.max_seq)),
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
        }
        let current_unlisted = m
            .families
            .iter()
            .any(|f| f.current_model != 0 && m.models.binary_search(&f.current_model).is_err());
        if m.models.windows(2).any(|w| w[0] >= w[1])
            || m.models.iter().any(|&n| n == 0 || n >= m.next_file)
            || current_unlisted
        {
            return Err(corrupt(
                tables,
                "model list is not ascending live file numbers including the current models",
            ));
        }
        if m.log_number > m.next_file {
            return Err(corrupt(32, "log number is past the next file number"));
        }
        Ok(())
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

    fn segment(family: u32, number: u64, seqs: (u64, u64), model: u64) -> SegmentEntry {
        SegmentEntry {
            family,
            number,
            keys: 10,
            records: 11,
            min_seq: seqs.0,
            max_seq: seqs.1,
            file_bytes: 999,
            model,
        }
    }

    fn sample() -> Manifest {
        let mut m = Manifest::new();
        m.next_file = 9;
        m.last_seq = 100;
        m.log_number = 8;
        m.segments = vec![segment(0, 3, (1, 40), 2), segment(0, 7, (41, 100), 0)];
        m.families[0].current_model = 6;
        m.models = vec![2, 6];
        m
    }

    /// Two more families, one dropped since: segments of different
    /// families interleave, and their sequence ranges overlap.
    fn with_families() -> Manifest {
        let mut m = sample();
        m.next_family = 4;
        m.families.push(FamilyEntry {
            id: 1,
            name: "rows".into(),
            current_model: 0,
        });
        m.families.push(FamilyEntry {
            id: 3,
            name: "by_name".into(),
            current_model: 2,
        });
        m.segments.insert(1, segment(3, 5, (30, 60), 2));
        m.segments.push(segment(1, 8, (45, 90), 0));
        m
    }

    fn assert_round_trip_and_every_flip_detected(m: &Manifest, version: u32) {
        let p = Path::new("MANIFEST");
        let b = m.encode();
        assert_eq!(u32::from_le_bytes([b[8], b[9], b[10], b[11]]), version);
        assert_eq!(Manifest::decode(p, &b).expect("decodes"), *m);
        for i in 0..b.len() {
            let mut f = b.clone();
            f[i] ^= 0x10;
            assert!(Manifest::decode(p, &f).is_err(), "flip at {i} not detected");
        }
        for cut in 0..b.len() {
            assert!(Manifest::decode(p, &b[..cut]).is_err());
        }
    }

    #[test]
    fn round_trip_and_every_flip_detected() {
        assert_round_trip_and_every_flip_detected(&sample(), 2);
        assert_round_trip_and_every_flip_detected(&with_families(), 3);
        // Once a family was created, version 3 stays, even with the
        // default family alone again.
        let mut dropped = with_families();
        dropped.families.truncate(1);
        dropped.segments.retain(|s| s.family == 0);
        assert_round_trip_and_every_flip_detected(&dropped, 3);
    }

    #[test]
    fn impossible_families_are_refused() {
        let p = Path::new("MANIFEST");
        let refused = |m: &Manifest| {
            let e = Manifest::decode(p, &m.encode()).expect_err("refused");
            assert!(matches!(e, Error::Corruption { .. }), "{e:?}");
        };
        let mut m = with_families();
        m.segments[1].family = 2; // a dropped family
        refused(&m);
        let mut m = with_families();
        m.families[2].name = "rows".into();
        refused(&m);
        let mut m = with_families();
        m.families.swap(1, 2);
        refused(&m);
        let mut m = with_families();
        m.next_family = 3;
        refused(&m);
        let mut m = with_families();
        m.families[1].current_model = 4;
        refused(&m);
        let mut m = with_families();
        m.segments.push(segment(3, 4, (50, 55), 0)); // overlaps its family's last
        refused(&m);
    }
}
