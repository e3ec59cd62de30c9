//! Whole-table work: loading many rows, checking that rows and indexes
//! agree, and sizes.
//!
//! Loading into an empty table takes the bulk path: every row is checked
//! and encoded, primary keys and unique index values are checked for
//! duplicates among themselves (sorted), and every family is bulk-loaded
//! at once (`DB::bulk_load_families`: sorted segments built in parallel,
//! no log, installed in one manifest edit, so a crash leaves all the rows
//! and their index entries or none). The rows are held in memory
//! meanwhile (about twice their encoded size). Loading into a table that
//! has rows inserts them instead, checked like any insert. Either way, a
//! bad row stops the load with an error naming its line and column; a
//! bulk load writes nothing before every row is checked.

use pith::Records;

use crate::error::{Error, Result};
use crate::keycode;
use crate::table::{escape, Table};
use crate::value::Value;

/// What a load did.
#[derive(Clone, Debug, Default)]
pub struct LoadStats {
    /// Rows loaded.
    pub rows: u64,
    /// Whether the bulk path was taken.
    pub bulk: bool,
}

/// Sizes of one column group or index, from [`Table::stats`].
#[derive(Clone, Debug)]
pub struct FamilyStats {
    /// `group` or `index`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// Entries (rows, for a group).
    pub entries: u64,
    /// Bytes of keys and values written to its segments.
    pub raw_bytes: u64,
    /// Bytes of its segment files.
    pub stored_bytes: u64,
}

impl FamilyStats {
    /// Raw over stored bytes.
    pub fn ratio(&self) -> f64 {
        self.raw_bytes as f64 / self.stored_bytes.max(1) as f64
    }
}

impl Table {
    /// Loads `rows` (each with where it came from, for errors: `line 7`),
    /// calling `progress` with the rows read so far now and then.
    pub fn load<I>(&self, rows: I, progress: &mut dyn FnMut(u64)) -> Result<LoadStats>
    where
        I: IntoIterator<Item = Result<(String, Vec<Value>)>>,
    {
        let _w = self.lock_for_write()?;
        let empty = self.db.count_keys_cf(&self.groups[0])? == 0;
        if !empty {
            drop(_w);
            return self.load_by_inserts(rows, progress);
        }
        let s = &self.schema;
        let mut labels: Vec<String> = Vec::new();
        // Each family's records flat in one buffer (`Records`): a row
        // allocates nothing of its own.
        let mut groups: Vec<Records> = vec![Records::new(); self.groups.len()];
        let mut indexes: Vec<Records> = vec![Records::new(); self.indexes.len()];
        let (mut pk, mut key) = (Vec::new(), Vec::new());
        for (n, row) in rows.into_iter().enumerate() {
            let (label, row) = row?;
            self.check_row(&row).map_err(|e| relabel(e, &label))?;
            pk.clear();
            self.pk_key_into(&mut pk, &row);
            for (g, out) in groups.iter_mut().enumerate() {
                out.push_with(&pk, |value| self.group_value_into(value, g, &row));
            }
            for (i, out) in indexes.iter_mut().enumerate() {
                key.clear();
                let pk_value = self.index_key_into(&mut key, i, &row, &pk);
                out.push(&key, if pk_value { &pk } else { &[] });
            }
            labels.push(label);
            if n % 4096 == 4095 {
                progress(n as u64 + 1);
            }
        }
        if labels.len() > Records::MAX_ORDERED {
            return Err(Error::Engine(pith::Error::InvalidArgument(format!(
                "a bulk load of {} rows; at most {} at once",
                labels.len(),
                Records::MAX_ORDERED
            ))));
        }
        let duplicate = |n: u32, index: &str| Error::Duplicate {
            table: s.name.clone(),
            row: labels[n as usize].clone(),
            index: index.into(),
        };
        // Every group is keyed by the primary key: the first holds them.
        let checks = std::iter::once((&groups[0], "primary key")).chain(
            indexes
                .iter()
                .zip(&s.indexes)
                .filter(|(_, ix)| ix.unique)
                .map(|(records, ix)| (records, &ix.name[..])),
        );
        for (records, what) in checks {
            let order = records.key_order();
            let same = |w: &[u32]| records.key(w[0] as usize) == records.key(w[1] as usize);
            if let Some(w) = order.windows(2).find(|w| same(w)) {
                return Err(duplicate(w[1], what));
            }
        }
        let rows = labels.len() as u64;
        drop(labels);
        // One load of every family, built in parallel and installed in one
        // edit: a crash leaves all of the rows and their index entries or
        // none of them.
        let families = self
            .indexes
            .iter()
            .zip(indexes)
            .chain(self.groups.iter().zip(groups))
            .collect();
        self.db.bulk_load_families(families)?;
        progress(rows);
        Ok(LoadStats { rows, bulk: true })
    }

    fn load_by_inserts<I>(&self, rows: I, progress: &mut dyn FnMut(u64)) -> Result<LoadStats>
    where
        I: IntoIterator<Item = Result<(String, Vec<Value>)>>,
    {
        let mut n = 0;
        for row in rows {
            let (label, row) = row?;
            self.insert(&row).map_err(|e| relabel(e, &label))?;
            n += 1;
            if n % 4096 == 0 {
                progress(n);
            }
        }
        progress(n);
        Ok(LoadStats {
            rows: n,
            bulk: false,
        })
    }

    /// Checks that every index entry names an existing row holding that
    /// value, and that every row is in every index (but those whose
    /// background build has not ended); returns the rows.
    pub fn verify(&self) -> Result<u64> {
        let snap = self.db.snapshot();
        let s = &self.schema;
        let groups = self.index_groups();
        let mut rows = 0u64;
        // An index whose build has not ended is not checked.
        let built: Vec<bool> = s
            .indexes
            .iter()
            .map(|ix| {
                self.build
                    .as_ref()
                    .is_none_or(|b| b.check(&ix.name).is_ok())
            })
            .collect();
        let inconsistent = |index: &str, detail: String| Error::Inconsistent {
            table: s.name.clone(),
            index: index.into(),
            detail,
        };
        for kv in self
            .db
            .range_cf_at(&self.groups[0], &snap, None, None)?
            .keys()
        {
            let pk = kv?;
            rows += 1;
            let all: Vec<usize> = (0..self.groups.len()).collect();
            let row = self
                .read_row(Some(&snap), &pk, &all)?
                .ok_or_else(|| self.corrupt("group default", &pk))?;
            for (i, ix) in s.indexes.iter().enumerate() {
                if !built[i] {
                    continue;
                }
                let (key, value) = self.index_entry(i, &row, &pk);
                let stored = self.db.get_cf_at(&self.indexes[i], &snap, &key)?;
                let legacy = match (&stored, self.legacy_entry(i, &row, &key, &pk)) {
                    (None, Some(old)) => self.db.get_cf_at(&self.indexes[i], &snap, old)?,
                    _ => None,
                };
                if stored.or(legacy).as_deref() != Some(&value[..]) {
                    return Err(inconsistent(
                        &ix.name,
                        format!("{} has no entry {}", self.label_of(&pk), escape(&key)),
                    ));
                }
            }
        }
        for (i, ix) in s.indexes.iter().enumerate() {
            if !built[i] {
                continue;
            }
            let mut entries = 0u64;
            for kv in self.db.range_cf_at(&self.indexes[i], &snap, None, None)? {
                let (key, value) = kv?;
                entries += 1;
                let pk = match ix.unique {
                    true => value,
                    false => {
                        let mut rest = &key[..];
                        keycode::decode_all(&mut rest, self.index_types(i))
                            .ok_or_else(|| self.corrupt(&format!("index {}", ix.name), &key))?;
                        rest.to_vec()
                    }
                };
                let row = self.read_row(Some(&snap), &pk, &groups)?.ok_or_else(|| {
                    inconsistent(
                        &ix.name,
                        format!("entry {} names a row that does not exist", escape(&key)),
                    )
                })?;
                let want = self.index_entry(i, &row, &pk).0;
                if want != key && self.legacy_entry(i, &row, &want, &pk) != Some(&key[..]) {
                    return Err(inconsistent(
                        &ix.name,
                        format!("entry {} does not match its row's values", escape(&key)),
                    ));
                }
            }
            if entries != rows {
                return Err(inconsistent(
                    &ix.name,
                    format!("{entries} entries for {rows} rows"),
                ));
            }
        }
        Ok(rows)
    }

    /// Sizes of every column group and index.
    pub fn stats(&self) -> Result<Vec<FamilyStats>> {
        let s = &self.schema;
        let named = s
            .groups
            .iter()
            .map(|g| ("group", &g.name))
            .chain(s.indexes.iter().map(|i| ("index", &i.name)));
        let mut out = Vec::new();
        for ((kind, name), cf) in named.zip(self.groups.iter().chain(&self.indexes)) {
            let st = self.db.stats_cf(cf)?;
            out.push(FamilyStats {
                kind,
                name: name.clone(),
                entries: self.db.count_keys_cf(cf)?,
                raw_bytes: st.total(|x| x.raw_key_bytes + x.raw_value_bytes),
                stored_bytes: st.total(|x| x.file_bytes),
            });
        }
        Ok(out)
    }

    /// The primary key encoding `pk` as a label.
    pub(crate) fn label_of(&self, pk: &[u8]) -> String {
        let mut rest = pk;
        match keycode::decode_all(&mut rest, self.pk_types()) {
            Some(values) => self.label(&values),
            None => format!("row {}", escape(pk)),
        }
    }
}

/// `e` with its row named by `label` (where the row came from).
fn relabel(e: Error, label: &str) -> Error {
    match e {
        Error::Value {
            table,
            row,
            column,
            detail,
        } => Error::Value {
            table,
            row: format!("{label} {row}"),
            column,
            detail,
        },
        Error::Duplicate { table, row, index } => Error::Duplicate {
            table,
            row: format!("{label} {row}"),
            index,
        },
        other => other,
    }
}
