//! `DB.stats()`, `DB.verify()` and `DB.bulk_load()` results as Python
//! dicts: the engine's structs field by field, under the same names.

use engine::{BulkStats, ModelInfo, SegmentInfo, Stats, VerifyReport};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// `stats` as a dict (segments and models as lists of dicts).
pub(crate) fn stats_dict<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let segments = PyList::empty(py);
    for seg in &s.segments {
        segments.append(segment_dict(py, seg)?)?;
    }
    let models = PyList::empty(py);
    for m in &s.models {
        models.append(model_dict(py, m)?)?;
    }
    d.set_item("memtable_bytes", s.memtable_bytes)?;
    d.set_item("memtable_entries", s.memtable_entries)?;
    d.set_item("frozen_memtables", s.frozen_memtables)?;
    d.set_item("disk_bytes", s.disk_bytes)?;
    d.set_item("wal_bytes", s.wal_bytes)?;
    d.set_item("last_sequence", s.last_sequence)?;
    d.set_item("records_copied", s.records_copied)?;
    d.set_item("records_encoded", s.records_encoded)?;
    let cache = PyDict::new(py);
    cache.set_item("capacity_bytes", s.value_cache.capacity_bytes)?;
    cache.set_item("charged_bytes", s.value_cache.charged_bytes)?;
    cache.set_item("values", s.value_cache.values)?;
    cache.set_item("hits", s.value_cache.hits)?;
    cache.set_item("misses", s.value_cache.misses)?;
    d.set_item("value_cache", cache)?;
    d.set_item("segments", segments)?;
    d.set_item("models", models)?;
    Ok(d)
}

fn segment_dict<'py>(py: Python<'py>, s: &SegmentInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("number", s.number)?;
    d.set_item("keys", s.keys)?;
    d.set_item("records", s.records)?;
    d.set_item("tombstones", s.tombstones)?;
    d.set_item("expiring", s.expiring)?;
    d.set_item("raw_key_bytes", s.raw_key_bytes)?;
    d.set_item("raw_value_bytes", s.raw_value_bytes)?;
    d.set_item("index_bytes", s.index_bytes)?;
    d.set_item("store_bytes", s.store_bytes)?;
    d.set_item("meta_bytes", s.meta_bytes)?;
    d.set_item("resident_bytes", s.resident_bytes)?;
    d.set_item("file_bytes", s.file_bytes)?;
    d.set_item("codec", &s.codec)?;
    d.set_item("model", s.model)?;
    d.set_item("seq_range", s.seq_range)?;
    d.set_item("tag_bits", s.tag_bits)?;
    Ok(d)
}

fn model_dict<'py>(py: Python<'py>, m: &ModelInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("number", m.number)?;
    d.set_item("file_bytes", m.file_bytes)?;
    d.set_item("heap_bytes", m.heap_bytes)?;
    d.set_item("dict_bytes", m.dict_bytes)?;
    d.set_item("trained_ratio", m.trained_ratio)?;
    d.set_item("trained_from", m.trained_from)?;
    d.set_item("current", m.current)?;
    d.set_item("segments", m.segments)?;
    Ok(d)
}

/// `report` as a dict (`torn_logs` as a list of path strings).
pub(crate) fn verify_dict<'py>(py: Python<'py>, r: &VerifyReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("segments", r.segments)?;
    d.set_item("records", r.records)?;
    d.set_item("models", r.models)?;
    d.set_item("wals", r.wals)?;
    d.set_item("wal_records", r.wal_records)?;
    let torn: Vec<String> = r
        .torn_logs
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    d.set_item("torn_logs", torn)?;
    Ok(d)
}

/// `stats` of a bulk load as a dict.
pub(crate) fn bulk_dict<'py>(py: Python<'py>, s: &BulkStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("records", s.records)?;
    d.set_item("keys", s.keys)?;
    d.set_item("segments", s.segments)?;
    Ok(d)
}
