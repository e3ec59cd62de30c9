//! A table's rows and indexes in their column families, and the writes
//! that keep them in step.
//!
//! Storage (each a column family of the database):
//!
//! * one family per column group: key = the primary key's memcomparable
//!   encoding (`keycode`), value = the group's columns (`rowcode`). The
//!   `default` group's family is where a row *exists*: every row has an
//!   entry there, even with no column in it; a group added later has no
//!   entry for older rows, which read as nulls there.
//! * one family per index: key = the index columns' encoding, then (for a
//!   non-unique index, and for a unique one when a column is null) the
//!   primary key's, value = the primary key's encoding for a unique index,
//!   empty otherwise.
//!
//! Every write (insert, upsert, update, delete) is one `WriteBatch` over
//! the row's groups and every index entry it changes, so readers and
//! recovery see all of it or none. Writes to one table are serialized by
//! its write lock, held from the checks (primary key and unique indexes
//! free) to the commit, so unique constraints hold under concurrent
//! writers; reads take a snapshot and never wait.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};

use pith::{ColumnFamily, Snapshot, WriteBatch, WriteOptions, DB};

use crate::error::{Error, Result};
use crate::keycode;
use crate::layout::Layout;
use crate::rowcode;
use crate::schema::{ColumnType, Schema};
use crate::value::Value;

/// One open table. Cheap to clone; all clones share the write lock.
#[derive(Clone)]
pub struct Table {
    pub(crate) db: Arc<DB>,
    pub(crate) schema: Arc<Schema>,
    /// Lookups precomputed from `schema` (made with it, replaced with it).
    pub(crate) layout: Arc<Layout>,
    /// One family per column group, in schema order (`default` first).
    pub(crate) groups: Vec<ColumnFamily>,
    /// One family per index, in schema order.
    pub(crate) indexes: Vec<ColumnFamily>,
    /// The table's write lock, shared by every handle of the table; it
    /// holds the schema's epoch, which a schema change bumps.
    pub(crate) write: Arc<Mutex<u64>>,
    /// The epoch this handle's schema is from.
    pub(crate) epoch: u64,
    pub(crate) write_options: WriteOptions,
    /// The table's index build when it was opened (see `build`): its
    /// indexes cannot be queried until it ends.
    pub(crate) build: Option<Arc<crate::build::Build>>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.schema.name)
            .field("groups", &self.groups)
            .field("indexes", &self.indexes)
            .finish()
    }
}

/// What [`Table::rows_each`] hands each row to: its position among the
/// keys asked for and the row (`None`: no such row); `false` stops.
pub(crate) type RowVisit<'a> = dyn FnMut(usize, Option<&mut [Value]>) -> Result<bool> + 'a;

impl Table {
    /// The table's schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The database the table lives in.
    pub fn db(&self) -> &Arc<DB> {
        &self.db
    }

    /// The same table, each write fsynced before it returns (or not).
    pub fn synced(mut self, sync: bool) -> Table {
        self.write_options = WriteOptions {
            sync,
            ..WriteOptions::default()
        };
        self
    }

    /// The column positions of `names`, or a typed error naming the
    /// unknown one.
    pub fn columns(&self, names: &[&str]) -> Result<Vec<usize>> {
        names
            .iter()
            .map(|n| {
                self.schema.column(n).ok_or_else(|| Error::UnknownColumn {
                    table: self.schema.name.clone(),
                    row: "a query".into(),
                    column: (*n).into(),
                })
            })
            .collect()
    }

    /// Every column, in schema order.
    pub fn all_columns(&self) -> Vec<usize> {
        (0..self.schema.columns.len()).collect()
    }

    /// A row from a JSON object (column name -> value), checked against
    /// the schema: unknown columns, values that do not fit and missing
    /// non-nullable columns are errors naming `row` (where it came from).
    pub fn row_from_json(
        &self,
        obj: &serde_json::Map<String, serde_json::Value>,
        row: &str,
    ) -> Result<Vec<Value>> {
        let s = &self.schema;
        if let Some(k) = obj.keys().find(|k| s.column(k).is_none()) {
            return Err(Error::UnknownColumn {
                table: s.name.clone(),
                row: row.into(),
                column: k.clone(),
            });
        }
        s.columns
            .iter()
            .map(|c| match obj.get(&c.name) {
                None if c.nullable => Ok(Value::Null),
                None => Err(Error::MissingColumn {
                    table: s.name.clone(),
                    row: row.into(),
                    column: c.name.clone(),
                }),
                Some(j) => Value::from_json(j, c).map_err(|detail| Error::Value {
                    table: s.name.clone(),
                    row: row.into(),
                    column: c.name.clone(),
                    detail,
                }),
            })
            .collect()
    }

    /// A row's values as a JSON object of the columns at `columns`.
    pub fn row_to_json(&self, columns: &[usize], values: &[Value]) -> serde_json::Value {
        let mut o = serde_json::Map::new();
        for (&c, v) in columns.iter().zip(values) {
            let col = &self.schema.columns[c];
            o.insert(col.name.clone(), v.to_json(col.ty));
        }
        serde_json::Value::Object(o)
    }

    /// Inserts `row` (every column, in schema order). Fails with
    /// [`Error::Duplicate`] when its primary key or a unique index value is
    /// taken; nothing is written then.
    pub fn insert(&self, row: &[Value]) -> Result<()> {
        self.check_row(row)?;
        let _w = self.lock_for_write()?;
        let pk = self.pk_key(row);
        if self.db.contains_cf(&self.groups[0], &pk)? {
            return Err(self.duplicate(row, "primary key"));
        }
        let mut batch = WriteBatch::new();
        for i in self.maintained() {
            let (key, value) = self.index_entry(i, row, &pk);
            if self.schema.indexes[i].unique && self.db.contains_cf(&self.indexes[i], &key)? {
                return Err(self.duplicate(row, &self.schema.indexes[i].name));
            }
            batch.put_cf(&self.indexes[i], key, value);
        }
        for g in 0..self.groups.len() {
            batch.put_cf(&self.groups[g], &pk, self.group_value(g, row));
        }
        self.db.write(self.write_options, batch)?;
        Ok(())
    }

    /// Inserts `row`, or replaces the row with its primary key (its index
    /// entries follow). Fails only when a unique index value is taken by
    /// another row.
    pub fn upsert(&self, row: &[Value]) -> Result<()> {
        self.check_row(row)?;
        let _w = self.lock_for_write()?;
        let pk = self.pk_key(row);
        let old = self.read_row(None, &pk, &self.index_groups())?;
        self.replace(&pk, old.as_deref(), row, None)
    }

    /// Sets the columns in `changes` (position, value) of the row with
    /// primary key `key`, rewriting only the groups they are in and the
    /// index entries whose values change. A primary key column cannot
    /// change (delete and insert instead).
    pub fn update(&self, key: &[Value], changes: &[(usize, Value)]) -> Result<()> {
        let pk = self.key_of(key)?;
        let label = self.label(key);
        if let Some((c, _)) = changes
            .iter()
            .find(|(c, _)| self.schema.primary_key.contains(c) || *c >= self.schema.columns.len())
        {
            let name = self
                .schema
                .columns
                .get(*c)
                .map_or_else(|| format!("#{c}"), |col| col.name.clone());
            return Err(Error::Value {
                table: self.schema.name.clone(),
                row: label,
                column: name,
                detail: "an update cannot change a primary key column (delete and insert instead)"
                    .into(),
            });
        }
        let _w = self.lock_for_write()?;
        let all: Vec<usize> = (0..self.groups.len()).collect();
        let old = self
            .read_row(None, &pk, &all)?
            .ok_or_else(|| Error::NoSuchRow {
                table: self.schema.name.clone(),
                row: label.clone(),
            })?;
        let mut row = old.clone();
        for (c, v) in changes {
            row[*c] = v.clone();
        }
        self.check_row(&row)?;
        let touched: Vec<usize> = (0..self.groups.len())
            .filter(|&g| {
                changes
                    .iter()
                    .any(|(c, _)| self.schema.groups[g].columns.contains(c))
            })
            .collect();
        self.replace(&pk, Some(&old), &row, Some(&touched))
    }

    /// Deletes the row with primary key `key` and its index entries; false
    /// when there was none.
    pub fn delete(&self, key: &[Value]) -> Result<bool> {
        let pk = self.key_of(key)?;
        let _w = self.lock_for_write()?;
        let Some(old) = self.read_row(None, &pk, &self.index_groups())? else {
            return Ok(false);
        };
        let mut batch = WriteBatch::new();
        for i in self.maintained() {
            self.delete_entries(&mut batch, i, &old, &pk)?;
        }
        for g in &self.groups {
            batch.delete_cf(g, &pk);
        }
        self.db.write(self.write_options, batch)?;
        Ok(true)
    }

    /// The columns at `columns` of the row with primary key `key`, read
    /// from only the groups they are in; `None` when there is no such row.
    pub fn get(&self, key: &[Value], columns: &[usize]) -> Result<Option<Vec<Value>>> {
        self.get_at(&self.db.snapshot(), key, columns)
    }

    /// [`Table::get`] as of `snapshot`.
    pub fn get_at(
        &self,
        snapshot: &Snapshot,
        key: &[Value],
        columns: &[usize],
    ) -> Result<Option<Vec<Value>>> {
        let pk = self.key_of(key)?;
        self.check_columns(columns)?;
        let mut found = None;
        self.rows_each(snapshot, &[pk], columns, &mut |_, row| {
            found = row.map(|row| {
                row.iter_mut()
                    .map(|v| std::mem::replace(v, Value::Null))
                    .collect()
            });
            Ok(true)
        })?;
        Ok(found)
    }

    /// Writes `row` over `old` (the same primary key's row, at least its
    /// index columns, if it exists): index entries that change are
    /// replaced, unique ones checked; `groups` (all when `None`) are
    /// rewritten. Caller holds the write lock.
    fn replace(
        &self,
        pk: &[u8],
        old: Option<&[Value]>,
        row: &[Value],
        groups: Option<&[usize]>,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        for i in self.maintained() {
            let (key, value) = self.index_entry(i, row, pk);
            let old_key = old.map(|o| self.index_entry(i, o, pk).0);
            if old_key.as_ref() == Some(&key) {
                continue;
            }
            if self.schema.indexes[i].unique && self.db.contains_cf(&self.indexes[i], &key)? {
                return Err(self.duplicate(row, &self.schema.indexes[i].name));
            }
            if let Some(o) = old {
                self.delete_entries(&mut batch, i, o, pk)?;
            }
            batch.put_cf(&self.indexes[i], key, value);
        }
        let all: Vec<usize> = (0..self.groups.len()).collect();
        for &g in groups.unwrap_or(&all) {
            batch.put_cf(&self.groups[g], pk, self.group_value(g, row));
        }
        self.db.write(self.write_options, batch)?;
        Ok(())
    }

    /// The indexes writes maintain (positions): all but one whose
    /// background build failed (it is being dropped).
    fn maintained(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.indexes.len()).filter(|&i| {
            let name = &self.schema.indexes[i].name;
            self.build.as_ref().is_none_or(|b| !b.failed(name))
        })
    }

    /// Whether the entry `key` of index `i` is row `pk`'s to delete. Always
    /// for a non-unique index (the key holds the primary key); for a unique
    /// one, when the entry names `pk`: while a build has not reached a
    /// row, another row may hold the entry of its old value (a duplicate
    /// the build will find), which a write of this row must not delete.
    fn owns_entry(&self, i: usize, key: &[u8], pk: &[u8]) -> Result<bool> {
        if !self.schema.indexes[i].unique {
            return Ok(true);
        }
        Ok(self
            .db
            .get_cf(&self.indexes[i], key)?
            .is_some_and(|v| v == pk))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, u64> {
        self.write.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The write lock, for a write through this handle: refused when the
    /// schema changed since the handle was opened (its writes would skip
    /// a new index or write to a dropped one).
    pub(crate) fn lock_for_write(&self) -> Result<MutexGuard<'_, u64>> {
        let w = self.lock();
        if *w != self.epoch {
            return Err(Error::StaleTable {
                table: self.schema.name.clone(),
            });
        }
        Ok(w)
    }

    /// Checks a whole row against the schema; errors name the row by its
    /// primary key.
    pub(crate) fn check_row(&self, row: &[Value]) -> Result<()> {
        let s = &self.schema;
        if row.len() != s.columns.len() {
            return Err(Error::Value {
                table: s.name.clone(),
                row: "a row".into(),
                column: "*".into(),
                detail: format!(
                    "{} values where the table has {} columns",
                    row.len(),
                    s.columns.len()
                ),
            });
        }
        for (v, c) in row.iter().zip(&s.columns) {
            v.check(c).map_err(|detail| Error::Value {
                table: s.name.clone(),
                row: self.row_label(row),
                column: c.name.clone(),
                detail,
            })?;
        }
        Ok(())
    }

    /// [`Table::label`] of a whole row (every column, in schema order).
    pub(crate) fn row_label(&self, row: &[Value]) -> String {
        let pk: Vec<Value> = self
            .schema
            .primary_key
            .iter()
            .map(|&c| row.get(c).cloned().unwrap_or(Value::Null))
            .collect();
        self.label(&pk)
    }

    /// Checks primary key values and returns their encoding.
    pub(crate) fn key_of(&self, key: &[Value]) -> Result<Vec<u8>> {
        let s = &self.schema;
        let label = self.label(key);
        if key.len() != s.primary_key.len() {
            return Err(Error::Value {
                table: s.name.clone(),
                row: label,
                column: "primary key".into(),
                detail: format!(
                    "{} values where the primary key has {} columns",
                    key.len(),
                    s.primary_key.len()
                ),
            });
        }
        for (v, &c) in key.iter().zip(&s.primary_key) {
            v.check(&s.columns[c]).map_err(|detail| Error::Value {
                table: s.name.clone(),
                row: label.clone(),
                column: s.columns[c].name.clone(),
                detail,
            })?;
        }
        Ok(keycode::encode_all(key, self.pk_types()))
    }

    pub(crate) fn check_columns(&self, columns: &[usize]) -> Result<()> {
        match columns.iter().find(|&&c| c >= self.schema.columns.len()) {
            Some(c) => Err(Error::UnknownColumn {
                table: self.schema.name.clone(),
                row: "a query".into(),
                column: format!("#{c}"),
            }),
            None => Ok(()),
        }
    }

    /// `key=value, ...` of primary key values, for messages.
    pub(crate) fn label(&self, key: &[Value]) -> String {
        let s = &self.schema;
        let parts: Vec<String> = key
            .iter()
            .zip(&s.primary_key)
            .map(|(v, &c)| format!("{}={}", s.columns[c].name, v.to_json(s.columns[c].ty)))
            .collect();
        format!("row ({})", parts.join(", "))
    }

    fn duplicate(&self, row: &[Value], index: &str) -> Error {
        Error::Duplicate {
            table: self.schema.name.clone(),
            row: self.row_label(row),
            index: index.into(),
        }
    }

    pub(crate) fn pk_types(&self) -> &[ColumnType] {
        &self.layout.pk_types
    }

    pub(crate) fn index_types(&self, i: usize) -> &[ColumnType] {
        &self.layout.index_types[i]
    }

    /// The primary key's encoding, from a whole row.
    pub(crate) fn pk_key(&self, row: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        self.pk_key_into(&mut out, row);
        out
    }

    /// Appends [`Table::pk_key`] to `out`.
    pub(crate) fn pk_key_into(&self, out: &mut Vec<u8>, row: &[Value]) {
        let s = &self.schema;
        for &c in &s.primary_key {
            keycode::encode(out, &row[c], s.columns[c].ty);
        }
    }

    /// Index `i`'s entry for `row`, whose primary key encodes as `pk`.
    ///
    /// A unique index's entry is keyed by the columns alone, so a second
    /// row with the same values finds it taken, and holds the primary key
    /// as its value. Null is not a value that can be taken (as in SQL, a
    /// unique index admits any number of rows with a null in its columns):
    /// such an entry's key also ends with the primary key, so it collides
    /// with no other row's, and its value is still the primary key.
    pub(crate) fn index_entry(&self, i: usize, row: &[Value], pk: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let mut key = Vec::new();
        match self.index_key_into(&mut key, i, row, pk) {
            true => (key, pk.to_vec()),
            false => (key, Vec::new()),
        }
    }

    /// Appends the key of [`Table::index_entry`] to `key`; returns
    /// whether its value is the primary key (else it is empty).
    pub(crate) fn index_key_into(
        &self,
        key: &mut Vec<u8>,
        i: usize,
        row: &[Value],
        pk: &[u8],
    ) -> bool {
        let s = &self.schema;
        let ix = &s.indexes[i];
        for &c in &ix.columns {
            keycode::encode(key, &row[c], s.columns[c].ty);
        }
        match ix.unique {
            true if self.has_null(i, row) => {
                key.extend_from_slice(pk);
                true
            }
            true => true,
            false => {
                key.extend_from_slice(pk);
                false
            }
        }
    }

    /// The key an older version of this crate gave index `i`'s entry for
    /// `row` when it differs from today's: before a unique index admitted
    /// nulls, an entry with a null was keyed by the columns alone, as any
    /// unique entry. At most one row per such key can have one (a second
    /// was refused as a duplicate). It is deleted when the row's values in
    /// the index change or the row is deleted (a write that leaves them as
    /// they are leaves it), an index build replaces it, and `verify`
    /// accepts it.
    ///
    /// `key` is today's key of the entry (from [`Table::index_entry`]);
    /// the legacy one is the same without the primary key at its end.
    pub(crate) fn legacy_entry<'k>(
        &self,
        i: usize,
        row: &[Value],
        key: &'k [u8],
        pk: &[u8],
    ) -> Option<&'k [u8]> {
        if !self.schema.indexes[i].unique || !self.has_null(i, row) {
            return None;
        }
        key.strip_suffix(pk)
    }

    /// Whether `row` has a null in a column of index `i`.
    fn has_null(&self, i: usize, row: &[Value]) -> bool {
        self.schema.indexes[i]
            .columns
            .iter()
            .any(|&c| row[c] == Value::Null)
    }

    /// Adds to `batch` the deletes of the entries of index `i` that row
    /// `pk`, whose values were `old`, owns: today's form, and the legacy
    /// one if it is there (see [`Table::legacy_entry`]).
    fn delete_entries(
        &self,
        batch: &mut WriteBatch,
        i: usize,
        old: &[Value],
        pk: &[u8],
    ) -> Result<()> {
        let (k, _) = self.index_entry(i, old, pk);
        let legacy = self.legacy_entry(i, old, &k, pk).map(<[u8]>::to_vec);
        for k in std::iter::once(k).chain(legacy) {
            if self.owns_entry(i, &k, pk)? {
                batch.delete_cf(&self.indexes[i], k);
            }
        }
        Ok(())
    }

    /// Group `g`'s value for `row`.
    pub(crate) fn group_value(&self, g: usize, row: &[Value]) -> Vec<u8> {
        let mut out = Vec::new();
        self.group_value_into(&mut out, g, row);
        out
    }

    /// Appends [`Table::group_value`] to `out`.
    pub(crate) fn group_value_into(&self, out: &mut Vec<u8>, g: usize, row: &[Value]) {
        rowcode::encode_columns_into(
            out,
            row,
            &self.schema.groups[g].columns,
            &self.layout.group_columns[g],
        )
    }

    /// The groups holding `columns` (none for primary key columns only).
    pub(crate) fn groups_for(&self, columns: &[usize]) -> Vec<usize> {
        let mut groups: Vec<usize> = columns
            .iter()
            .filter_map(|&c| self.layout.group_of.get(c).copied().flatten())
            .collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }

    /// The groups holding some index's columns.
    pub(crate) fn index_groups(&self) -> Vec<usize> {
        let cols: Vec<usize> = self
            .schema
            .indexes
            .iter()
            .flat_map(|i| i.columns.iter().copied())
            .collect();
        self.groups_for(&cols)
    }

    /// The row with primary key encoding `pk`, as of `snapshot` (now when
    /// `None`): every column, those of groups not in `groups` null. `None`
    /// when the row does not exist.
    pub(crate) fn read_row(
        &self,
        snapshot: Option<&Snapshot>,
        pk: &[u8],
        groups: &[usize],
    ) -> Result<Option<Vec<Value>>> {
        if !groups.contains(&0) && !self.row_exists(snapshot, pk)? {
            return Ok(None);
        }
        // Every group at one point, the state looked up once.
        let reads = groups.iter().map(|&g| (&self.groups[g], pk));
        let found = match snapshot {
            Some(snap) => self.db.multi_get_cf_at(snap, reads)?,
            None => self.db.multi_get_cf(reads)?,
        };
        self.row_of(pk, groups, found)
    }

    /// The values at `columns` of the rows with primary keys `pks`, as of
    /// `snapshot`, each handed to `visit` with its position in `pks`:
    /// `Some(row)`, or `None` for a row that does not exist, until `visit`
    /// returns `false`. Every group value is read first, in one call of the
    /// engine, group by group: the reads of one family follow each other,
    /// so its decoder's tables stay in cache (on the Debian table's
    /// 100-row ranges of every column, 5% less time than row by row). Then
    /// each row is built straight from those bytes (other columns of the
    /// groups are stepped over, not decoded) into one row buffer reused
    /// from row to row (its strings too): a caller keeping a row takes its
    /// values out. A caller that may stop early hands few `pks` at a time.
    pub(crate) fn rows_each<P: AsRef<[u8]>>(
        &self,
        snapshot: &Snapshot,
        pks: &[P],
        columns: &[usize],
        visit: &mut RowVisit<'_>,
    ) -> Result<()> {
        let s = &self.schema;
        let mut groups = self.groups_for(columns);
        if !groups.contains(&0) {
            // The default group is where a row exists: read it too.
            groups.insert(0, 0);
        }
        // Each column's first output position (NONE: not asked for); a
        // column asked for again is copied from there at the end.
        const NONE: usize = usize::MAX;
        let mut first_at = vec![NONE; s.columns.len()];
        let mut again = Vec::new();
        for (i, &c) in columns.iter().enumerate() {
            match first_at[c] {
                NONE => first_at[c] = i,
                first => again.push((first, i)),
            }
        }
        // The value of group `gi` of row `r` is `found[gi * rows + r]`,
        // bytes of `values`: read `n` of the multi-get (group by group,
        // each in row order) is `found[n]`.
        let (rows, width) = (pks.len(), groups.len());
        let mut values = Vec::new();
        let mut found: Vec<Option<Range<usize>>> = vec![None; rows * width];
        let reads = groups
            .iter()
            .flat_map(|&g| pks.iter().map(move |pk| (&self.groups[g], pk.as_ref())));
        self.db
            .multi_get_cf_at_with(snapshot, reads, |n, bytes| -> Result<()> {
                if let Some(bytes) = bytes {
                    let start = values.len();
                    values.extend_from_slice(bytes);
                    found[n] = Some(start..values.len());
                }
                Ok(())
            })?;
        // Where each group's columns go in the row (NONE: not asked for).
        let places: Vec<Vec<usize>> = groups
            .iter()
            .map(|&g| s.groups[g].columns.iter().map(|&c| first_at[c]).collect())
            .collect();
        let mut row = vec![Value::Null; columns.len()];
        for (r, pk) in pks.iter().enumerate() {
            let pk = pk.as_ref();
            let of_row = (0..width).map(|gi| &found[gi * rows + r]);
            if found[r].is_none() {
                if !visit(r, None)? {
                    break;
                }
                continue;
            }
            for ((&g, span), places) in groups.iter().zip(of_row).zip(&places) {
                let at = |i: usize| places.get(i).copied().filter(|&p| p != NONE);
                let group_columns = &self.layout.group_columns[g];
                match span {
                    Some(span) => rowcode::decode_some_into(
                        &values[span.clone()],
                        group_columns,
                        at,
                        &mut row,
                    )
                    .ok_or_else(|| self.corrupt(&format!("group {}", s.groups[g].name), pk))?,
                    // A group added after the row was written: its columns
                    // are null.
                    None => (0..group_columns.len())
                        .filter_map(at)
                        .for_each(|p| row[p] = Value::Null),
                }
            }
            let mut rest = pk;
            for (&c, &ty) in s.primary_key.iter().zip(self.pk_types()) {
                let bad = || self.corrupt("primary key", pk);
                match first_at[c] {
                    NONE => keycode::skip(&mut rest, ty).ok_or_else(bad)?,
                    at => row[at] = keycode::decode(&mut rest, ty).ok_or_else(bad)?,
                }
            }
            for &(first, i) in &again {
                row[i] = row[first].clone();
            }
            if !visit(r, Some(&mut row))? {
                break;
            }
        }
        Ok(())
    }

    /// True when the default group (where a row exists) has `pk`.
    fn row_exists(&self, snapshot: Option<&Snapshot>, pk: &[u8]) -> Result<bool> {
        Ok(match snapshot {
            Some(snap) => self.db.get_cf_at(&self.groups[0], snap, pk)?.is_some(),
            None => self.db.contains_cf(&self.groups[0], pk)?,
        })
    }

    /// The row with primary key `pk` from the values `found` in `groups`
    /// (in that order); `None` when the default group's is missing.
    fn row_of(
        &self,
        pk: &[u8],
        groups: &[usize],
        found: Vec<Option<Vec<u8>>>,
    ) -> Result<Option<Vec<Value>>> {
        let s = &self.schema;
        let mut row = vec![Value::Null; s.columns.len()];
        for (&g, bytes) in groups.iter().zip(found) {
            let Some(bytes) = bytes else {
                if g == 0 {
                    return Ok(None);
                }
                continue; // a group added after the row was written
            };
            let cols = &s.groups[g].columns;
            rowcode::decode_each(&bytes, &self.layout.group_columns[g], |i, v| {
                row[cols[i]] = v;
            })
            .ok_or_else(|| self.corrupt(&format!("group {}", s.groups[g].name), pk))?;
        }
        let mut rest = pk;
        let key = keycode::decode_all(&mut rest, self.pk_types())
            .filter(|_| rest.is_empty())
            .ok_or_else(|| self.corrupt("primary key", pk))?;
        for (&c, v) in s.primary_key.iter().zip(key) {
            row[c] = v;
        }
        Ok(Some(row))
    }

    pub(crate) fn corrupt(&self, what: &str, key: &[u8]) -> Error {
        Error::Corrupt {
            table: self.schema.name.clone(),
            what: what.into(),
            detail: format!("entry {}", escape(key)),
        }
    }
}

/// Bytes as printable text, non-printing bytes as `\xNN`.
pub(crate) fn escape(b: &[u8]) -> String {
    b.iter()
        .map(|&c| match c {
            0x20..=0x7e if c != b'\\' => char::from(c).to_string(),
            _ => format!("\\x{c:02x}"),
        })
        .collect()
}
