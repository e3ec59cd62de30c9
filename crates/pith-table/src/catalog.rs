//! The tables of a database: their schemas, in a catalog family
//! (`pith.tables`: table name -> schema JSON), and their families, named
//! `pith.table.<table>.group.<group>` and `pith.table.<table>.index.<index>`
//! (table, group and index names are `[A-Za-z0-9_]`, so the names cannot
//! collide).
//!
//! Creating a table creates its families, then writes its catalog entry
//! (synced): a crash in between leaves families no entry names, which the
//! next create of that table drops first. Dropping a table removes its
//! entry first, then its families. A schema change is checked
//! (`Schema::check_change`): new index families are built from the rows
//! under the table's write lock before the new schema is written; dropped
//! index families go after.
//!
//! Open every table of a database through one [`Tables`]: it holds the
//! per-table write locks that keep unique constraints under concurrent
//! writers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pith::{ColumnFamily, WriteOptions, DB};

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::schema::Schema;
use crate::table::Table;

/// The catalog family's name.
pub const CATALOG: &str = "pith.tables";

/// The family of a table's column group.
pub fn group_family(table: &str, group: &str) -> String {
    format!("pith.table.{table}.group.{group}")
}

/// The family of a table's index.
pub fn index_family(table: &str, index: &str) -> String {
    format!("pith.table.{table}.index.{index}")
}

/// The tables of one database.
pub struct Tables {
    db: Arc<DB>,
    catalog: ColumnFamily,
    /// Per-table write locks, shared by every `Table` of a name.
    locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Serializes catalog changes (create, drop, alter).
    changes: Mutex<()>,
}

impl Tables {
    /// The tables of `db` (creating the catalog family on first use).
    pub fn open(db: Arc<DB>) -> Result<Tables> {
        let catalog = match db.family(CATALOG) {
            Some(f) => f,
            None if db.is_read_only() => {
                return Err(Error::NoSuchTable {
                    name: "(none: the database has no tables)".into(),
                })
            }
            None => db.create_family(CATALOG)?,
        };
        Ok(Tables {
            db,
            catalog,
            locks: Mutex::new(HashMap::new()),
            changes: Mutex::new(()),
        })
    }

    /// The database.
    pub fn db(&self) -> &Arc<DB> {
        &self.db
    }

    /// The names of every table, sorted.
    pub fn list(&self) -> Result<Vec<String>> {
        self.db
            .range_cf(&self.catalog, None, None)?
            .keys()
            .map(|k| Ok(String::from_utf8_lossy(&k?).into_owned()))
            .collect()
    }

    /// The schema of table `name`.
    pub fn schema(&self, name: &str) -> Result<Schema> {
        let json = self
            .db
            .get_cf(&self.catalog, name)?
            .ok_or_else(|| Error::NoSuchTable { name: name.into() })?;
        let text = String::from_utf8(json).map_err(|_| Error::Corrupt {
            table: name.into(),
            what: "catalog entry".into(),
            detail: "not UTF-8".into(),
        })?;
        Schema::from_json(&text)
    }

    /// Creates a table with `schema` (durably) and opens it.
    pub fn create(&self, schema: &Schema) -> Result<Table> {
        let _c = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        if self.db.get_cf(&self.catalog, &schema.name)?.is_some() {
            return Err(Error::TableExists {
                name: schema.name.clone(),
            });
        }
        for name in families_of(schema) {
            if let Some(orphan) = self.db.family(&name) {
                // Left by a create or drop that crashed half way: no
                // catalog entry names it.
                self.db.drop_family(&orphan)?;
            }
            self.db.create_family(&name)?;
        }
        self.put_schema(schema)?;
        self.open_table(&schema.name)
    }

    /// Opens table `name`.
    pub fn open_table(&self, name: &str) -> Result<Table> {
        let schema = self.schema(name)?;
        let family = |n: String| {
            self.db.family(&n).ok_or_else(|| Error::Corrupt {
                table: name.into(),
                what: format!("column family {n}"),
                detail: "missing".into(),
            })
        };
        let groups = schema
            .groups
            .iter()
            .map(|g| family(group_family(name, &g.name)))
            .collect::<Result<_>>()?;
        let indexes = schema
            .indexes
            .iter()
            .map(|i| family(index_family(name, &i.name)))
            .collect::<Result<_>>()?;
        let write = self
            .locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name.into())
            .or_default()
            .clone();
        Ok(Table {
            db: self.db.clone(),
            layout: Arc::new(Layout::new(&schema)),
            schema: Arc::new(schema),
            groups,
            indexes,
            write,
            write_options: WriteOptions::default(),
        })
    }

    /// Drops table `name` and everything in it.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let _c = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        let schema = self.schema(name)?;
        self.db.delete_cf(&self.catalog, name)?;
        self.db.sync_wal()?;
        for f in families_of(&schema) {
            if let Some(cf) = self.db.family(&f) {
                self.db.drop_family(&cf)?;
            }
        }
        Ok(())
    }

    /// Changes table `next.name`'s schema to `next`, if it needs no
    /// rewrite (see `Schema::check_change`): new nullable columns, new
    /// column groups for them, new indexes (built now from the rows,
    /// writes to the table waiting meanwhile), dropped indexes.
    pub fn alter(&self, next: &Schema) -> Result<Table> {
        let _c = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        let old = self.open_table(&next.name)?;
        old.schema.check_change(next)?;
        let _w = old.lock();
        let mut created = Vec::new();
        let before = families_of(&old.schema);
        for f in families_of(next)
            .into_iter()
            .filter(|f| !before.contains(f))
        {
            if let Some(orphan) = self.db.family(&f) {
                // Left by an alter that crashed half way.
                self.db.drop_family(&orphan)?;
            }
            created.push(self.db.create_family(&f)?);
        }
        let draft = Table {
            schema: Arc::new(next.clone()),
            layout: Arc::new(Layout::new(next)),
            groups: next
                .groups
                .iter()
                .map(|g| self.family_or_missing(&next.name, &group_family(&next.name, &g.name)))
                .collect::<Result<_>>()?,
            indexes: next
                .indexes
                .iter()
                .map(|i| self.family_or_missing(&next.name, &index_family(&next.name, &i.name)))
                .collect::<Result<_>>()?,
            ..old.clone()
        };
        let new_indexes: Vec<usize> = next
            .indexes
            .iter()
            .enumerate()
            .filter(|(_, i)| old.schema.index(&i.name).is_none())
            .map(|(n, _)| n)
            .collect();
        if let Err(e) = crate::maintain::build_indexes(&draft, &new_indexes) {
            for cf in &created {
                let _ = self.db.drop_family(cf);
            }
            return Err(e);
        }
        self.put_schema(next)?;
        for i in &old.schema.indexes {
            if next.index(&i.name).is_none() {
                if let Some(cf) = self.db.family(&index_family(&next.name, &i.name)) {
                    self.db.drop_family(&cf)?;
                }
            }
        }
        drop(_w);
        self.open_table(&next.name)
    }

    fn family_or_missing(&self, table: &str, name: &str) -> Result<ColumnFamily> {
        self.db.family(name).ok_or_else(|| Error::Corrupt {
            table: table.into(),
            what: format!("column family {name}"),
            detail: "missing".into(),
        })
    }

    fn put_schema(&self, schema: &Schema) -> Result<()> {
        let mut b = pith::WriteBatch::new();
        b.put_cf(&self.catalog, &schema.name, schema.to_json().to_string());
        self.db.write(WriteOptions::synced(), b)?;
        Ok(())
    }
}

/// Every family a table with `schema` has.
fn families_of(schema: &Schema) -> Vec<String> {
    schema
        .groups
        .iter()
        .map(|g| group_family(&schema.name, &g.name))
        .chain(
            schema
                .indexes
                .iter()
                .map(|i| index_family(&schema.name, &i.name)),
        )
        .collect()
}
