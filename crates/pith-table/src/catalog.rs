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
//! (`Schema::check_change`): the new schema is written with the names of
//! the indexes it adds (synced, in one batch), which a background build
//! then fills from the rows while the table stays open (see `build`);
//! dropped index families go after the schema is written.
//!
//! Open every table of a database through one [`Tables`]: it holds the
//! per-table write locks that keep unique constraints under concurrent
//! writers, and runs the index builds (stopping them when dropped; the
//! next `Tables::open` starts the unfinished ones again).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use pith::{ColumnFamily, FamilyOptions, WriteOptions, DB};

use crate::build::{self, Build, BuildState, BuildStatus, Walked};
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
    /// (holding each table's schema epoch: see `Table::lock_for_write`).
    locks: Mutex<HashMap<String, Arc<Mutex<u64>>>>,
    /// Serializes catalog changes (create, drop, alter).
    changes: Mutex<()>,
    /// Serializes the catalog writes of builds that end.
    ends: Arc<Mutex<()>>,
    /// Each table's latest index build, and its thread while it runs.
    builds: Mutex<HashMap<String, Running>>,
}

/// A table's build and its thread (taken when it is joined).
type Running = (Arc<Build>, Option<JoinHandle<()>>);

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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
        let tables = Tables {
            db,
            catalog,
            locks: Mutex::new(HashMap::new()),
            changes: Mutex::new(()),
            ends: Arc::new(Mutex::new(())),
            builds: Mutex::new(HashMap::new()),
        };
        if !tables.db.is_read_only() {
            // Builds a close or a crash interrupted start again.
            for table in tables.list()? {
                let building = tables.building(&table)?;
                if !building.is_empty() {
                    tables.start_build(&table, building)?;
                }
            }
        }
        Ok(tables)
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
            .filter(|k| k.as_ref().map_or(true, |k: &String| !k.contains('/')))
            .collect()
    }

    /// The indexes of table `name` being built, per the catalog.
    fn building(&self, name: &str) -> Result<Vec<String>> {
        let Some(json) = self.db.get_cf(&self.catalog, build::building_key(name))? else {
            return Ok(Vec::new());
        };
        serde_json::from_slice(&json).map_err(|e| Error::Corrupt {
            table: name.into(),
            what: "catalog entry of indexes being built".into(),
            detail: e.to_string(),
        })
    }

    /// Table `name`'s write lock, shared by all its handles.
    fn write_lock(&self, name: &str) -> Arc<Mutex<u64>> {
        locked(&self.locks).entry(name.into()).or_default().clone()
    }

    /// Table `name`'s latest build; when none ran since open (a read-only
    /// database, or a build that could not start) but the catalog lists
    /// indexes being built, a stopped one, so they are not queried
    /// half built.
    fn build_of(&self, name: &str) -> Result<Option<Arc<Build>>> {
        if let Some((b, _)) = locked(&self.builds).get(name) {
            return Ok(Some(b.clone()));
        }
        let building = self.building(name)?;
        if building.is_empty() {
            return Ok(None);
        }
        let b = Build::new(name, building);
        b.finish(BuildState::Stopped, None);
        Ok(Some(Arc::new(b)))
    }

    /// Every index build since open: running, done or stopped.
    pub fn builds(&self) -> Vec<BuildStatus> {
        let mut out: Vec<BuildStatus> = locked(&self.builds)
            .values()
            .map(|(b, _)| b.status())
            .collect();
        out.sort_by(|a, b| a.table.cmp(&b.table));
        out
    }

    /// Waits until table `name`'s index build (if any) ends; the error of
    /// an index that could not be built, or of the build itself.
    pub fn wait_for_builds(&self, name: &str) -> Result<()> {
        let build = locked(&self.builds).get(name).map(|(b, _)| b.clone());
        build.map_or(Ok(()), |b| b.wait())
    }

    /// Stops table `name`'s build, if one runs, and waits for its thread.
    fn stop_build(&self, name: &str) {
        let running = locked(&self.builds).get_mut(name).and_then(|(b, h)| {
            b.stop();
            h.take()
        });
        if let Some(h) = running {
            // The thread ends the build even when it panics.
            let _ = h.join();
        }
    }

    /// Starts building indexes `indexes` of table `name` (whose schema
    /// has them) in the background.
    fn start_build(&self, name: &str, indexes: Vec<String>) -> Result<()> {
        let t = self.open_table(name)?;
        let positions: Vec<usize> = indexes
            .iter()
            .filter_map(|i| t.schema.indexes.iter().position(|x| &x.name == i))
            .collect();
        let b = Arc::new(Build::new(name, indexes));
        let (db, catalog, ends, build) = (
            self.db.clone(),
            self.catalog.clone(),
            self.ends.clone(),
            b.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name(format!("pith-index-build-{name}"))
            .spawn(move || {
                // Whatever happens, the build ends and its waiters wake.
                let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    match build::walk(&build, &t, &positions)? {
                        Walked::Stopped => Ok(BuildState::Stopped),
                        Walked::Done(failed) => {
                            let _e = locked(&ends);
                            end_build(&db, &catalog, &t, &failed).map(|()| BuildState::Done)
                        }
                    }
                }))
                .unwrap_or_else(|_| {
                    Err(Error::Engine(pith::Error::Internal(format!(
                        "the index build of table {} panicked",
                        t.schema.name
                    ))))
                });
                match ended {
                    Ok(state) => build.finish(state, None),
                    Err(e) => build.finish(BuildState::Stopped, Some(e)),
                }
            })
            .map_err(|e| {
                Error::Engine(pith::Error::Internal(format!(
                    "starting the index build of table {name}: {e}"
                )))
            })?;
        locked(&self.builds).insert(name.into(), (b, Some(spawned)));
        Ok(())
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
        let write = self.write_lock(name);
        // Read under the write lock, which a schema change holds while it
        // writes the schema and bumps the epoch: the two agree.
        let (schema, epoch) = {
            let w = locked(&write);
            (self.schema(name)?, *w)
        };
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
        let indexes: Vec<ColumnFamily> = schema
            .indexes
            .iter()
            .map(|i| family(index_family(name, &i.name)))
            .collect::<Result<_>>()?;
        // No index keeps a Bloom filter. A non-unique index is only ever
        // sought and scanned (its keys end in the row's primary key), never
        // read by exact key: a filter would cost about 1.2 bytes a row for
        // nothing. A unique index is read by exact key when an insert
        // checks its value is free, usually a miss, but the primary key's
        // check before it is a miss in the default group, which has no
        // filter either: the trie's own miss is a few hundred nanoseconds.
        // Measured on the Debian table (20,000 inserts into the loaded
        // table, 4 alternating runs): 117-120K inserts/s without, 118-130K
        // with; the filter is 79 KB (0.5% of the table).
        for cf in &indexes {
            self.db
                .set_family_options(cf, FamilyOptions::new().bloom_bits_per_key(0))?;
        }
        Ok(Table {
            db: self.db.clone(),
            layout: Arc::new(Layout::new(&schema)),
            schema: Arc::new(schema),
            groups,
            indexes,
            write,
            epoch,
            write_options: WriteOptions::default(),
            build: self.build_of(name)?,
        })
    }

    /// Drops table `name` and everything in it.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let _c = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        let schema = self.schema(name)?;
        self.stop_build(name);
        let mut b = pith::WriteBatch::new();
        b.delete_cf(&self.catalog, name);
        b.delete_cf(&self.catalog, build::building_key(name));
        {
            let write = self.write_lock(name);
            let mut w = locked(&write);
            self.db.write(WriteOptions::synced(), b)?;
            *w += 1;
        }
        locked(&self.builds).remove(name);
        for f in families_of(&schema) {
            if let Some(cf) = self.db.family(&f) {
                self.db.drop_family(&cf)?;
            }
        }
        Ok(())
    }

    /// Changes table `next.name`'s schema to `next`, if it needs no
    /// rewrite (see `Schema::check_change`): new nullable columns, new
    /// column groups for them, new indexes, dropped indexes. New indexes
    /// are built in the background (see [`Tables::wait_for_builds`]);
    /// until then queries on them fail with [`Error::IndexBuilding`]. A
    /// `Table` opened before the change keeps the old schema and refuses
    /// to write ([`Error::StaleTable`]): open the table again.
    pub fn alter(&self, next: &Schema) -> Result<Table> {
        let _c = self.changes.lock().unwrap_or_else(|p| p.into_inner());
        self.schema(&next.name)?.check_change(next)?;
        // A build still running is stopped; what it did not finish is
        // built again below.
        self.stop_build(&next.name);
        let old = self.open_table(&next.name)?;
        let mut w = old.lock();
        let before = families_of(&old.schema);
        for f in families_of(next)
            .into_iter()
            .filter(|f| !before.contains(f))
        {
            if let Some(orphan) = self.db.family(&f) {
                // Left by an alter that crashed half way.
                self.db.drop_family(&orphan)?;
            }
            self.db.create_family(&f)?;
        }
        let unfinished = self.building(&next.name)?;
        let building: Vec<String> = next
            .indexes
            .iter()
            .filter(|i| old.schema.index(&i.name).is_none() || unfinished.contains(&i.name))
            .map(|i| i.name.clone())
            .collect();
        let mut b = pith::WriteBatch::new();
        b.put_cf(&self.catalog, &next.name, next.to_json().to_string());
        let key = build::building_key(&next.name);
        match building.is_empty() {
            true => b.delete_cf(&self.catalog, key),
            false => b.put_cf(&self.catalog, key, serde_json::json!(building).to_string()),
        };
        self.db.write(WriteOptions::synced(), b)?;
        // Handles opened before refuse to write from now on.
        *w += 1;
        for i in &old.schema.indexes {
            if next.index(&i.name).is_none() {
                if let Some(cf) = self.db.family(&index_family(&next.name, &i.name)) {
                    self.db.drop_family(&cf)?;
                }
            }
        }
        drop(w);
        if building.is_empty() {
            locked(&self.builds).remove(&next.name);
        } else {
            self.start_build(&next.name, building)?;
        }
        self.open_table(&next.name)
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

impl Drop for Tables {
    /// Stops every build (the next open starts them again).
    fn drop(&mut self) {
        let names: Vec<String> = locked(&self.builds).keys().cloned().collect();
        for name in names {
            self.stop_build(&name);
        }
    }
}

/// Ends a build of `t` that walked every row: in one synced batch, the
/// indexes that `failed` (positions) leave the schema and the
/// list of indexes being built goes; then the failed indexes' families
/// are dropped.
fn end_build(db: &DB, catalog: &ColumnFamily, t: &Table, failed: &[usize]) -> Result<()> {
    let mut schema = (*t.schema).clone();
    let gone: Vec<String> = failed
        .iter()
        .map(|&i| schema.indexes[i].name.clone())
        .collect();
    schema.indexes.retain(|i| !gone.contains(&i.name));
    let mut b = pith::WriteBatch::new();
    if !gone.is_empty() {
        b.put_cf(catalog, &schema.name, schema.to_json().to_string());
    }
    b.delete_cf(catalog, build::building_key(&schema.name));
    db.write(WriteOptions::synced(), b)?;
    for name in gone {
        if let Some(cf) = db.family(&index_family(&schema.name, &name)) {
            db.drop_family(&cf)?;
        }
    }
    Ok(())
}
