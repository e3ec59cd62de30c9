//! `pith stats`: what a database holds and what it costs on disk.
//!
//! Two kinds of figures, never mixed up:
//!
//! * *stored entries*: what the segments hold, summed over segments: every
//!   version of a key kept for snapshots or not yet merged away, and
//!   tombstones. Cheap (from segment headers).
//! * *live data*: the keys a read sees, and their bytes. By default the
//!   live key count is an estimate from the stored entries (distinct keys
//!   per segment minus tombstones, plus what the memtables hold), exact
//!   when one segment holds everything and no tombstone; `--exact` walks
//!   every live record instead and reports exact keys, bytes and the
//!   compression ratio over live data.
//!
//! Every figure covers all column families (each is a key space of its
//! own, so their keys add up); a database with more than the default
//! family also gets a line per family (segments, keys, bytes on disk).

use std::time::Instant;

use crate::db_cmd::{open_read_only, progress, DbArg};
use crate::text::count;
use crate::CliError;

/// `pith stats`.
#[derive(clap::Args)]
pub struct StatsArgs {
    #[command(flatten)]
    db: DbArg,
    /// One JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Count live keys and bytes exactly, by reading every live record
    /// (takes about as long as a full scan).
    #[arg(long)]
    exact: bool,
}

/// Live data, walked.
struct Live {
    keys: u64,
    key_bytes: u64,
    value_bytes: u64,
}

fn walk_live(db: &pith::DB) -> Result<Live, CliError> {
    let bar = progress("{spinner} {elapsed} {human_pos} live records counted");
    let mut live = Live {
        keys: 0,
        key_bytes: 0,
        value_bytes: 0,
    };
    for cf in db.families() {
        for kv in db.range_cf(&cf, None, None)? {
            let (k, v) = kv?;
            live.keys += 1;
            live.key_bytes += k.len() as u64;
            live.value_bytes += v.len() as u64;
            if live.keys.is_multiple_of(4096) {
                bar.set_position(live.keys);
            }
        }
    }
    bar.finish_and_clear();
    Ok(live)
}

/// `pith stats`.
pub fn stats(args: &StatsArgs) -> Result<(), CliError> {
    let db = open_read_only(&args.db.db)?;
    let s = db.stats()?;
    let mut families = Vec::new();
    for cf in db.families() {
        let f = db.stats_cf(&cf)?;
        families.push((
            cf,
            f.segments.len(),
            f.total(|x| x.keys),
            f.total(|x| x.file_bytes),
        ));
    }
    let started = Instant::now();
    let live = match args.exact {
        true => Some(walk_live(&db)?),
        false => None,
    };
    let entries = s.total(|x| x.records);
    let distinct = s.total(|x| x.keys);
    let tombstones = s.total(|x| x.tombstones);
    let raw_keys = s.total(|x| x.raw_key_bytes);
    let raw_values = s.total(|x| x.raw_value_bytes);
    let index = s.total(|x| x.index_bytes);
    let store = s.total(|x| x.store_bytes);
    let resident = s.total(|x| x.resident_bytes);
    let memtable_entries = s.memtable_entries;
    // Exact without a walk when nothing can hide or repeat a key: one
    // segment per family at most (families are separate key spaces).
    let estimate_is_exact =
        families.iter().all(|f| f.1 <= 1) && tombstones == 0 && memtable_entries == 0;
    let live_keys_estimate = (distinct + memtable_entries).saturating_sub(tombstones);
    let disk = s.disk_bytes.max(1) as f64;
    let stored_ratio = (raw_keys + raw_values) as f64 / disk;
    let live_ratio = live
        .as_ref()
        .map(|l| (l.key_bytes + l.value_bytes) as f64 / disk);
    if args.json {
        let segments: Vec<serde_json::Value> = s
            .segments
            .iter()
            .map(|x| {
                serde_json::json!({"number": x.number, "keys": x.keys, "records": x.records,
                "tombstones": x.tombstones, "index_bytes": x.index_bytes, "store_bytes": x.store_bytes,
                "resident_bytes": x.resident_bytes, "file_bytes": x.file_bytes, "codec": x.codec, "model": x.model,
                "tag_bits": x.tag_bits})
            })
            .collect();
        let models: Vec<serde_json::Value> = s
            .models
            .iter()
            .map(|m| {
                serde_json::json!({"number": m.number, "file_bytes": m.file_bytes,
                "heap_bytes": m.heap_bytes, "dict_bytes": m.dict_bytes,
                "trained_ratio": m.trained_ratio, "trained_from": m.trained_from,
                "current": m.current, "segments": m.segments})
            })
            .collect();
        let family_rows: Vec<serde_json::Value> = families
            .iter()
            .map(|(cf, segments, keys, bytes)| {
                serde_json::json!({"name": cf.name(), "id": cf.id(), "segments": segments,
                "stored_distinct_keys": keys, "file_bytes": bytes})
            })
            .collect();
        let mut v = serde_json::json!({
            "families": family_rows,
            "live_keys": live.as_ref().map_or(live_keys_estimate, |l| l.keys),
            "live_keys_exact": live.is_some() || estimate_is_exact,
            "stored_entries": entries, "stored_distinct_keys": distinct,
            "tombstones": tombstones, "memtable_entries": memtable_entries,
            "stored_key_bytes": raw_keys, "stored_value_bytes": raw_values,
            "index_bytes": index, "value_store_bytes": store, "disk_bytes": s.disk_bytes,
            "resident_index_bytes": resident,
            "wal_bytes": s.wal_bytes, "memtable_bytes": s.memtable_bytes,
            "stored_compression_ratio": stored_ratio, "segment_count": s.segments.len(),
            "segments": segments, "last_sequence": s.last_sequence, "models": models,
        });
        if let (Some(l), Some(r), Some(map)) = (&live, live_ratio, v.as_object_mut()) {
            map.insert("live_key_bytes".into(), l.key_bytes.into());
            map.insert("live_value_bytes".into(), l.value_bytes.into());
            map.insert("live_compression_ratio".into(), r.into());
        }
        println!("{v}");
        return Ok(());
    }
    match &live {
        Some(l) => {
            println!(
                "live keys                {} (exact: every live record read in {:.1} s)",
                l.keys,
                started.elapsed().as_secs_f64()
            );
            println!("live key bytes           {}", l.key_bytes);
            println!("live value bytes         {}", l.value_bytes);
        }
        None if estimate_is_exact => {
            println!("live keys                {live_keys_estimate} (exact: one segment per column family, no tombstones, empty memtable)");
        }
        None => {
            println!("live keys                ~{live_keys_estimate} (estimate: keys of each segment and memtable entries, less tombstones; a key in two segments counts twice; --exact counts)");
        }
    }
    println!("stored entries           {entries} (versions and tombstones included, summed over segments)");
    println!("  tombstones             {tombstones}");
    println!("  in memtables           {memtable_entries}");
    println!("stored key bytes         {raw_keys}");
    println!("stored value bytes       {raw_values}");
    println!("index (trie) bytes       {index}");
    println!("value store bytes        {store}");
    println!("resident index bytes     {resident} (trie, tags, history, Bloom, record offsets: kept in memory)");
    println!("files on disk, bytes     {}", s.disk_bytes);
    println!("  of which logs          {}", s.wal_bytes);
    match live_ratio {
        Some(r) => println!("compression ratio        {r:.2}x (live keys and values / files on disk)"),
        None => println!("compression ratio        {stored_ratio:.2}x (stored keys and values / files on disk; --exact: over live data)"),
    }
    if families.len() > 1 {
        println!("column families          {}", families.len());
        for (cf, segments, keys, bytes) in &families {
            println!(
                "  {:<40} {}, {}, {} B in segments",
                cf.name(),
                count(*segments as u64, "segment"),
                count(*keys, "stored key"),
                bytes
            );
        }
    }
    println!("segments                 {}", s.segments.len());
    for x in &s.segments {
        let model = x
            .model
            .map(|m| format!(", model {m:06}"))
            .unwrap_or_default();
        println!(
            "  {:06}.seg  {}, {}, {}, trie {} B, store {} B ({}{model}), tags {} bits a record, file {} B",
            x.number,
            count(x.keys, "key"),
            count(x.records, "version"),
            count(x.tombstones, "tombstone"),
            x.index_bytes,
            x.store_bytes,
            x.codec,
            x.tag_bits,
            x.file_bytes
        );
    }
    println!("shared models            {}", s.models.len());
    for m in &s.models {
        println!(
            "  {:06}.model  file {} B, dictionary {} B, memory {} B, trained on {} B to {:.2}x, {}{}",
            m.number,
            m.file_bytes,
            m.dict_bytes,
            m.heap_bytes,
            m.trained_from,
            m.trained_ratio,
            count(m.segments as u64, "segment"),
            if m.current { ", current" } else { "" }
        );
    }
    Ok(())
}
