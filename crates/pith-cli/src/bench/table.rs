//! `pith bench table`: the same rows and indexes in PithDB (`pith-table`)
//! and in SQLite (bundled, WAL mode, the same indexes, `VACUUM`ed), in one
//! run: load time, size on disk, and reads at 1 and 8 threads.
//!
//! Workloads (each for `--seconds` per engine and thread count, in
//! [`ROUNDS`] turns taken by the two engines, so that a machine whose
//! speed drifts moves both; on keys and values drawn from the rows with
//! one seed per turn, the same for both):
//!
//! * `get`: a row by primary key, every column;
//! * `eq <index>`: exact lookup of a row's values on each secondary index,
//!   the matching rows' primary keys (at most 100);
//! * `range100 <cols>`: 100 rows from a row's values on the composite index
//!   `--range-index`, with the columns of the first column group only
//!   (`group`) or every column (`all`);
//! * `count`: rows with one value of the range index's first column;
//! * `regex`: rows whose first column of `--regex-index` fully matches
//!   `--regex` (PithDB: walked through the index's tries; SQLite: a
//!   registered `REGEXP` over every row, and `GLOB` where the pattern has
//!   one).
//!
//! SQLite's schema follows the table's: `INTEGER` for integers, bools and
//! timestamps, `REAL`, `TEXT` (decimals as text), `BLOB`; a one-column
//! integer primary key is SQLite's `INTEGER PRIMARY KEY` (its rowid).
//! Its load inserts every row in one transaction, then creates the
//! indexes; PithDB's is the bulk path (`Table::load`) and a flush. Both are
//! durable when the load ends. Each engine loads twice, the two taking
//! turns, and the faster load of each is reported. Query results are
//! streamed on both sides: SQLite's rows are read from its statement one
//! at a time, PithDB's come from `Table::query_each`, and every column of
//! every row is read.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rusqlite::{params_from_iter, Connection, OpenFlags};

use pith_table::{ColumnType, Condition, KeyBound, Query, Schema, Table, Tables, Value};

use crate::bench::db::sys::dir_bytes;
use crate::input::Objects;
use crate::text::thousands;
use crate::CliError;

/// `pith bench table` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// Rows: JSON Lines objects (zstd ok).
    #[arg(long, default_value = "data/debian-packages-rows.jsonl.zst")]
    rows: PathBuf,
    /// The table's schema.
    #[arg(long, default_value = "data/debian-packages.schema.json")]
    schema: PathBuf,
    /// The composite index of the range and count workloads.
    #[arg(long, default_value = "by_section_size")]
    range_index: String,
    /// The index whose first column (a string) the regex workload matches.
    #[arg(long, default_value = "by_package_version")]
    regex_index: String,
    /// The regex of the regex workload (and its GLOB for SQLite, if any).
    #[arg(long, default_value = "lib.*-dev")]
    regex: String,
    /// SQLite GLOB pattern equivalent to --regex (empty: none).
    #[arg(long, default_value = "lib*-dev")]
    glob: String,
    /// Seconds per read workload, engine and thread count.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Reader threads, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,8")]
    threads: Vec<usize>,
    /// Where the databases are built (a fresh subdirectory; removed after).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Random seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Only the read workloads whose name contains this (e.g. `eq`).
    #[arg(long)]
    only: Option<String>,
}

/// One measured figure of both engines.
struct Row {
    workload: String,
    threads: usize,
    unit: &'static str,
    pith: f64,
    sqlite: f64,
    /// Higher is better (ops/s) or lower (seconds, bytes).
    higher_better: bool,
}

impl Row {
    /// PithDB's advantage: > 1 when PithDB is better.
    fn ratio(&self) -> f64 {
        match self.higher_better {
            true => self.pith / self.sqlite.max(1e-12),
            false => self.sqlite / self.pith.max(1e-12),
        }
    }
}

/// Runs the benchmark.
pub fn run(args: &Args) -> Result<(), CliError> {
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let work = tempfile::Builder::new()
        .prefix("pith-bench-table-")
        .tempdir_in(&base)
        .map_err(|source| CliError::Io {
            path: base.clone(),
            source,
        })?;
    let text = std::fs::read_to_string(&args.schema).map_err(|source| CliError::Io {
        path: args.schema.clone(),
        source,
    })?;
    let schema = Schema::from_json(&text)?;

    eprintln!("pith bench table: reading {}", args.rows.display());
    let db = Arc::new(pith::DB::open(
        work.path().join("pith"),
        pith::Options::default(),
    )?);
    let tables = Tables::open(db.clone())?;
    let table = tables.create(&schema)?;
    let mut rows = Vec::new();
    for r in Objects::open(&args.rows)? {
        let (line, obj) = r?;
        rows.push(table.row_from_json(&obj, &format!("line {line}"))?);
    }
    let mut report = Vec::new();

    eprintln!("pith bench table: loading {} rows into PithDB", rows.len());
    let mut pith_load = load_pith(&table, &rows)?;
    db.compact()?;
    let pith_bytes = dir_bytes(&work.path().join("pith"));

    eprintln!("pith bench table: loading them into SQLite");
    let sqlite_path = work.path().join("sqlite.db");
    let mut sqlite_load_s = sqlite_load(&sqlite_path, &schema, &rows)?;
    sqlite_vacuum(&sqlite_path)?;
    let sqlite_bytes = dir_bytes(work.path()) - pith_bytes;

    // A second load into each, the engines taking turns again, and the
    // faster of each engine's two: one load is a second or so, and the
    // machine's speed drifts over seconds.
    eprintln!("pith bench table: loading both again");
    let again = work.path().join("again");
    std::fs::create_dir_all(&again).map_err(|source| CliError::Io {
        path: again.clone(),
        source,
    })?;
    {
        let db = Arc::new(pith::DB::open(
            again.join("pith"),
            pith::Options::default(),
        )?);
        let table = Tables::open(db.clone())?.create(&schema)?;
        pith_load = pith_load.min(load_pith(&table, &rows)?);
    }
    sqlite_load_s = sqlite_load_s.min(sqlite_load(&again.join("sqlite.db"), &schema, &rows)?);
    std::fs::remove_dir_all(&again).map_err(|source| CliError::Io {
        path: again.clone(),
        source,
    })?;

    let n = rows.len() as f64;
    report.push(Row {
        workload: "load".into(),
        threads: 1,
        unit: "rows/s",
        pith: n / pith_load,
        sqlite: n / sqlite_load_s,
        higher_better: true,
    });
    report.push(Row {
        workload: "size on disk".into(),
        threads: 0,
        unit: "MB",
        pith: pith_bytes as f64 / 1e6,
        sqlite: sqlite_bytes as f64 / 1e6,
        higher_better: false,
    });

    let workloads = Workloads::new(&schema, &table, &rows, args)?;
    let sqlite = SqliteReads {
        path: sqlite_path.clone(),
        sql: workloads.sql(&schema),
        table: quote(&schema.name),
        regex_column: quote(&schema.columns[workloads.regex_column].name),
    };
    for w in 0..workloads.names.len() {
        if args
            .only
            .as_ref()
            .is_some_and(|o| !workloads.names[w].contains(o.as_str()))
        {
            continue;
        }
        for &threads in &args.threads {
            eprintln!(
                "pith bench table: {} with {threads} thread(s)",
                workloads.names[w]
            );
            let (mut pith, mut lite) = (0.0, 0.0);
            let slice = args.seconds / ROUNDS as f64;
            for round in 0..ROUNDS as u64 {
                let seed = args.seed + 1000 * round;
                pith += timed(threads, slice, seed, |rng| workloads.pith(&table, w, rng))?;
                lite += timed(threads, slice, seed, |rng| sqlite.run(&workloads, w, rng))?;
            }
            let (pith, lite) = (pith / ROUNDS as f64, lite / ROUNDS as f64);
            report.push(Row {
                workload: workloads.names[w].clone(),
                threads,
                unit: "ops/s",
                pith,
                sqlite: lite,
                higher_better: true,
            });
        }
    }
    // One regex query, timed alone: it walks the whole index.
    let (pith_regex, pith_hits) = best_of(3, || {
        table.count(&args.regex_index, &Condition::Regex(args.regex.clone()))
    })?;
    let (lite_regex, lite_hits) = best_of(3, || sqlite.regex(&args.regex))?;
    report.push(Row {
        workload: format!("regex {} ({} rows)", args.regex, pith_hits),
        threads: 1,
        unit: "ms",
        pith: pith_regex * 1e3,
        sqlite: lite_regex * 1e3,
        higher_better: false,
    });
    if pith_hits != lite_hits {
        return Err(CliError::Usage(format!(
            "the engines disagree on the regex: PithDB {pith_hits} rows, SQLite {lite_hits}"
        )));
    }
    if !args.glob.is_empty() {
        let (glob_s, glob_hits) = best_of(3, || sqlite.glob(&args.glob))?;
        report.push(Row {
            workload: format!("regex vs GLOB {} ({} rows)", args.glob, glob_hits),
            threads: 1,
            unit: "ms",
            pith: pith_regex * 1e3,
            sqlite: glob_s * 1e3,
            higher_better: false,
        });
    }
    print_report(&report, &rows, args, pith_bytes, sqlite_bytes);
    Ok(())
}

/// The read workloads and the keys they draw from.
struct Workloads {
    names: Vec<String>,
    /// Primary keys of the rows.
    keys: Vec<Vec<Value>>,
    /// Per secondary index, each row's values of its columns.
    index_values: Vec<Vec<Vec<Value>>>,
    /// Per secondary index, its columns' types.
    index_types: Vec<Vec<ColumnType>>,
    pk_types: Vec<ColumnType>,
    /// The range index's position.
    range: usize,
    /// Rows whose range index values hold no null (SQL's row-value
    /// comparison of a null is unknown, PithDB's sorts it first).
    range_rows: Vec<usize>,
    /// Columns of the first column group (and the key), and all columns.
    group_columns: Vec<usize>,
    all_columns: Vec<usize>,
    regex_column: usize,
}

/// Workload kinds by position: get, one eq per index, range100 group,
/// range100 all, count.
impl Workloads {
    fn new(
        schema: &Schema,
        table: &Table,
        rows: &[Vec<Value>],
        args: &Args,
    ) -> Result<Self, CliError> {
        let range = schema
            .indexes
            .iter()
            .position(|i| i.name == args.range_index)
            .ok_or_else(|| CliError::Usage(format!("no index {}", args.range_index)))?;
        let regex_ix = schema
            .index(&args.regex_index)
            .ok_or_else(|| CliError::Usage(format!("no index {}", args.regex_index)))?;
        let regex_column = regex_ix.columns[0];
        if schema.columns[regex_column].ty != ColumnType::String {
            return Err(CliError::Usage(format!(
                "index {}'s first column is not a string",
                args.regex_index
            )));
        }
        let mut names = vec!["get".to_string()];
        names.extend(schema.indexes.iter().map(|i| format!("eq {}", i.name)));
        names.push(format!("range100 {} group", args.range_index));
        names.push(format!("range100 {} all", args.range_index));
        names.push(format!(
            "count {}",
            schema.columns[schema.indexes[range].columns[0]].name
        ));
        let keys = rows
            .iter()
            .map(|r| schema.primary_key.iter().map(|&c| r[c].clone()).collect())
            .collect();
        let index_values = schema
            .indexes
            .iter()
            .map(|ix| {
                rows.iter()
                    .map(|r| ix.columns.iter().map(|&c| r[c].clone()).collect())
                    .collect()
            })
            .collect();
        let types = |cols: &[usize]| -> Vec<ColumnType> {
            cols.iter().map(|&c| schema.columns[c].ty).collect()
        };
        let index_types = schema.indexes.iter().map(|i| types(&i.columns)).collect();
        let range_rows: Vec<usize> = (0..rows.len())
            .filter(|&n| {
                schema.indexes[range]
                    .columns
                    .iter()
                    .all(|&c| rows[n][c] != Value::Null)
            })
            .collect();
        if range_rows.is_empty() {
            return Err(CliError::Usage(format!(
                "no row has values in every column of {}",
                args.range_index
            )));
        }
        let mut group_columns = schema.primary_key.clone();
        group_columns.extend(&schema.groups[0].columns);
        Ok(Workloads {
            names,
            keys,
            index_values,
            index_types,
            pk_types: types(&schema.primary_key),
            range,
            range_rows,
            group_columns,
            all_columns: table.all_columns(),
            regex_column,
        })
    }

    fn eq_count(&self) -> usize {
        self.index_values.len()
    }

    /// The row workload `w` draws its values from.
    fn pick(&self, w: usize, rng: &mut rand::rngs::StdRng) -> usize {
        match w {
            w if w > self.eq_count() => self.range_rows[rng.gen_range(0..self.range_rows.len())],
            _ => rng.gen_range(0..self.keys.len()),
        }
    }

    /// One operation of workload `w` on PithDB; returns rows seen.
    fn pith(&self, t: &Table, w: usize, rng: &mut rand::rngs::StdRng) -> Result<u64, CliError> {
        let pick = self.pick(w, rng);
        let ix = &t.schema().indexes;
        Ok(match w {
            0 => u64::from(t.get(&self.keys[pick], &self.all_columns)?.is_some()),
            w if w <= self.eq_count() => {
                let i = w - 1;
                let q = Query {
                    index: ix[i].name.clone(),
                    condition: Condition::Eq(self.index_values[i][pick].clone()),
                    columns: t.schema().primary_key.clone(),
                    limit: Some(100),
                    reverse: false,
                };
                t.query_each(&q, |row| {
                    std::hint::black_box(row);
                    true
                })?
            }
            w if w <= self.eq_count() + 2 => {
                let all = w == self.eq_count() + 2;
                let q = Query {
                    index: ix[self.range].name.clone(),
                    condition: Condition::Range(
                        KeyBound::Included(self.index_values[self.range][pick].clone()),
                        KeyBound::Unbounded,
                    ),
                    columns: if all {
                        self.all_columns.clone()
                    } else {
                        self.group_columns.clone()
                    },
                    limit: Some(100),
                    reverse: false,
                };
                t.query_each(&q, |row| {
                    std::hint::black_box(row);
                    true
                })?
            }
            _ => {
                let first = self.index_values[self.range][pick][0].clone();
                t.count(&ix[self.range].name, &Condition::Prefix(vec![first]))?
            }
        })
    }

    /// SQL text of every workload, in order.
    fn sql(&self, schema: &Schema) -> Vec<String> {
        let col = |c: usize| quote(&schema.columns[c].name);
        let list = |cols: &[usize]| cols.iter().map(|&c| col(c)).collect::<Vec<_>>().join(", ");
        let pk = list(&schema.primary_key);
        let pk_where = schema
            .primary_key
            .iter()
            .map(|&c| format!("{} = ?", col(c)))
            .collect::<Vec<_>>()
            .join(" AND ");
        let t = quote(&schema.name);
        let mut out = vec![format!(
            "SELECT {} FROM {t} WHERE {pk_where}",
            list(&self.all_columns)
        )];
        for ix in &schema.indexes {
            let w = ix
                .columns
                .iter()
                .map(|&c| format!("{} IS ?", col(c)))
                .collect::<Vec<_>>()
                .join(" AND ");
            out.push(format!("SELECT {pk} FROM {t} WHERE {w} LIMIT 100"));
        }
        let r = &schema.indexes[self.range];
        let order = list(&r.columns);
        // Rows at or after a tuple of the index's columns, in index order.
        let tuple = format!("({order}) >= ({})", vec!["?"; r.columns.len()].join(", "));
        for cols in [&self.group_columns, &self.all_columns] {
            out.push(format!(
                "SELECT {} FROM {t} WHERE {tuple} ORDER BY {order}, {pk} LIMIT 100",
                list(cols)
            ));
        }
        out.push(format!(
            "SELECT count(*) FROM {t} WHERE {} IS ?",
            col(r.columns[0])
        ));
        out
    }
}

fn quote(name: &str) -> String {
    format!("\"{name}\"")
}

/// A value as an SQLite parameter.
fn sql_value(v: &Value, ty: ColumnType) -> rusqlite::types::Value {
    use rusqlite::types::Value as S;
    match v {
        Value::Null => S::Null,
        Value::Int(n) => S::Integer(*n),
        Value::UInt(n) => S::Integer(*n as i64),
        Value::Float(f) => S::Real(*f),
        Value::Bool(b) => S::Integer(i64::from(*b)),
        Value::Text(s) => S::Text(s.clone()),
        Value::Bytes(b) => S::Blob(b.clone()),
        Value::Decimal(_) => match v.to_json(ty) {
            serde_json::Value::String(s) => S::Text(s),
            other => S::Text(other.to_string()),
        },
    }
}

fn sql_type(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::F64 => "REAL",
        ColumnType::String | ColumnType::Decimal { .. } => "TEXT",
        ColumnType::Bytes | ColumnType::FixedBytes(_) | ColumnType::Uuid => "BLOB",
        _ => "INTEGER",
    }
}

fn sqlite_err(e: rusqlite::Error) -> CliError {
    CliError::Usage(format!("sqlite: {e}"))
}

/// Seconds a load of `rows` into a new SQLite database at `path` takes:
/// the rows in one transaction, then the indexes, then a checkpoint.
fn sqlite_load(path: &Path, schema: &Schema, rows: &[Vec<Value>]) -> Result<f64, CliError> {
    let started = Instant::now();
    let mut conn = Connection::open(path).map_err(sqlite_err)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(sqlite_err)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sqlite_err)?;
    let t = quote(&schema.name);
    let int_pk = schema.primary_key.len() == 1
        && sql_type(schema.columns[schema.primary_key[0]].ty) == "INTEGER";
    let mut cols: Vec<String> = schema
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut d = format!("{} {}", quote(&c.name), sql_type(c.ty));
            if int_pk && schema.primary_key[0] == i {
                d.push_str(" PRIMARY KEY");
            } else if !c.nullable {
                d.push_str(" NOT NULL");
            }
            d
        })
        .collect();
    if !int_pk {
        let pk: Vec<String> = schema
            .primary_key
            .iter()
            .map(|&c| quote(&schema.columns[c].name))
            .collect();
        cols.push(format!("PRIMARY KEY ({})", pk.join(", ")));
    }
    conn.execute_batch(&format!("CREATE TABLE {t} ({})", cols.join(", ")))
        .map_err(sqlite_err)?;
    let tx = conn.transaction().map_err(sqlite_err)?;
    {
        let marks = vec!["?"; schema.columns.len()].join(", ");
        let mut insert = tx
            .prepare(&format!("INSERT INTO {t} VALUES ({marks})"))
            .map_err(sqlite_err)?;
        for r in rows {
            let params = r
                .iter()
                .zip(&schema.columns)
                .map(|(v, c)| sql_value(v, c.ty));
            insert
                .execute(params_from_iter(params))
                .map_err(sqlite_err)?;
        }
    }
    for ix in &schema.indexes {
        let cols: Vec<String> = ix
            .columns
            .iter()
            .map(|&c| quote(&schema.columns[c].name))
            .collect();
        tx.execute_batch(&format!(
            "CREATE {}INDEX {} ON {t} ({})",
            if ix.unique { "UNIQUE " } else { "" },
            quote(&ix.name),
            cols.join(", ")
        ))
        .map_err(sqlite_err)?;
    }
    tx.commit().map_err(sqlite_err)?;
    conn.pragma_update(None, "wal_checkpoint", "FULL")
        .map_err(sqlite_err)?;
    Ok(started.elapsed().as_secs_f64())
}

fn sqlite_vacuum(path: &Path) -> Result<(), CliError> {
    let conn = Connection::open(path).map_err(sqlite_err)?;
    conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
        .map_err(sqlite_err)?;
    Ok(())
}

/// SQLite's side of the reads: a connection per thread.
struct SqliteReads {
    path: PathBuf,
    sql: Vec<String>,
    /// The table's and the regex column's quoted names.
    table: String,
    regex_column: String,
}

thread_local! {
    static CONN: std::cell::RefCell<Option<(PathBuf, Connection)>> = const { std::cell::RefCell::new(None) };
}

impl SqliteReads {
    fn with_conn<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, CliError>,
    ) -> Result<T, CliError> {
        CONN.with(|slot| {
            let mut slot = slot.borrow_mut();
            if slot.as_ref().is_none_or(|(p, _)| *p != self.path) {
                let conn = Connection::open_with_flags(
                    &self.path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(sqlite_err)?;
                conn.set_prepared_statement_cache_capacity(64);
                add_regexp(&conn)?;
                *slot = Some((self.path.clone(), conn));
            }
            match slot.as_ref() {
                Some((_, conn)) => f(conn),
                None => Err(CliError::Usage("sqlite: no connection".into())),
            }
        })
    }

    fn run(&self, w: &Workloads, k: usize, rng: &mut rand::rngs::StdRng) -> Result<u64, CliError> {
        let pick = w.pick(k, rng);
        let values = |vs: &[Value], types: &[ColumnType]| -> Vec<rusqlite::types::Value> {
            vs.iter()
                .zip(types)
                .map(|(v, &t)| sql_value(v, t))
                .collect()
        };
        let params: Vec<rusqlite::types::Value> = match k {
            0 => values(&w.keys[pick], &w.pk_types),
            k if k <= w.eq_count() => values(&w.index_values[k - 1][pick], &w.index_types[k - 1]),
            k if k <= w.eq_count() + 2 => {
                values(&w.index_values[w.range][pick], &w.index_types[w.range])
            }
            _ => values(
                &w.index_values[w.range][pick][..1],
                &w.index_types[w.range][..1],
            ),
        };
        let count = k == self.sql.len() - 1;
        self.with_conn(|conn| {
            let mut stmt = conn.prepare_cached(&self.sql[k]).map_err(sqlite_err)?;
            if count {
                return stmt
                    .query_row(params_from_iter(params), |r| r.get::<_, i64>(0))
                    .map(|n| n as u64)
                    .map_err(sqlite_err);
            }
            let mut rows = stmt.query(params_from_iter(params)).map_err(sqlite_err)?;
            let mut n = 0u64;
            while let Some(r) = rows.next().map_err(sqlite_err)? {
                // Read every column, as PithDB decodes every one asked for.
                for i in 0..r.as_ref().column_count() {
                    std::hint::black_box(r.get_ref(i).map_err(sqlite_err)?);
                }
                n += 1;
            }
            Ok(n)
        })
    }

    /// Rows whose regex column fully matches `pattern`.
    fn regex(&self, pattern: &str) -> Result<u64, CliError> {
        self.count_where("REGEXP", &format!("^(?:{pattern})$"))
    }

    /// Rows whose regex column matches the GLOB `pattern`.
    fn glob(&self, pattern: &str) -> Result<u64, CliError> {
        self.count_where("GLOB", pattern)
    }

    fn count_where(&self, op: &str, pattern: &str) -> Result<u64, CliError> {
        let q = format!(
            "SELECT count(*) FROM {} WHERE {} {op} ?",
            self.table, self.regex_column
        );
        self.with_conn(|conn| {
            conn.query_row(&q, [pattern], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
                .map_err(sqlite_err)
        })
    }
}

/// Registers `REGEXP` (the regex crate, whole-pattern semantics as given).
fn add_regexp(conn: &Connection) -> Result<(), CliError> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function(
        "regexp",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let re = ctx.get_or_create_aux(
                0,
                |vr| -> Result<regex::Regex, Box<dyn std::error::Error + Send + Sync>> {
                    Ok(regex::Regex::new(vr.as_str()?)?)
                },
            )?;
            let text = ctx.get_raw(1).as_str().unwrap_or("");
            Ok(re.is_match(text))
        },
    )
    .map_err(sqlite_err)
}

/// Seconds a bulk load of `rows` into the empty `table` takes, its flush
/// included (durable when it ends, as SQLite's). The load takes its rows
/// by value: they are copied before the clock starts, as SQLite's binds
/// them from the same vector.
fn load_pith(table: &Table, rows: &[Vec<Value>]) -> Result<f64, CliError> {
    let owned: Vec<(String, Vec<Value>)> =
        rows.iter().map(|r| (String::new(), r.clone())).collect();
    let started = Instant::now();
    table.load(owned.into_iter().map(Ok), &mut |_| {})?;
    table.db().flush()?;
    Ok(started.elapsed().as_secs_f64())
}

/// Turns each engine takes at each read workload. With one turn each, on
/// the 2-core VM, the every-column range's ratio moved 0.90-0.98x over
/// three runs while each engine's own rate moved by up to 40%.
const ROUNDS: usize = 3;

/// Operations per second of `op` on `threads` threads for `seconds`.
fn timed(
    threads: usize,
    seconds: f64,
    seed: u64,
    op: impl Fn(&mut rand::rngs::StdRng) -> Result<u64, CliError> + Sync,
) -> Result<f64, CliError> {
    let deadline = Duration::from_secs_f64(seconds);
    let results: Vec<Result<u64, CliError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|t| {
                let op = &op;
                s.spawn(move || {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(seed + t as u64);
                    let started = Instant::now();
                    let mut ops = 0u64;
                    while started.elapsed() < deadline {
                        for _ in 0..16 {
                            std::hint::black_box(op(&mut rng)?);
                            ops += 1;
                        }
                    }
                    Ok(ops)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CliError::Usage("a reader thread panicked".into())))
            })
            .collect()
    });
    let mut total = 0;
    for r in results {
        total += r?;
    }
    Ok(total as f64 / seconds)
}

/// The fastest of `runs` calls of `f`, in seconds, and its result.
fn best_of<T, E>(runs: usize, mut f: impl FnMut() -> Result<T, E>) -> Result<(f64, T), CliError>
where
    CliError: From<E>,
{
    let mut best = f64::MAX;
    let mut out = None;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let r = f()?;
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(r);
    }
    match out {
        Some(r) => Ok((best, r)),
        None => Err(CliError::Usage("no run".into())),
    }
}

fn print_report(
    report: &[Row],
    rows: &[Vec<Value>],
    args: &Args,
    pith_bytes: u64,
    sqlite_bytes: u64,
) {
    println!(
        "pith bench table: {} rows of {} (schema {}), PithDB against SQLite {} (WAL, VACUUMed)",
        thousands(rows.len() as u64),
        args.rows.display(),
        args.schema.display(),
        rusqlite::version()
    );
    println!(
        "{:<44} {:>7} {:>8} {:>14} {:>14} {:>8}",
        "workload", "threads", "unit", "pith", "sqlite", "ratio"
    );
    for r in report {
        let threads = match r.threads {
            0 => "-".to_string(),
            t => t.to_string(),
        };
        println!(
            "{:<44} {:>7} {:>8} {:>14.1} {:>14.1} {:>8.2}",
            r.workload,
            threads,
            r.unit,
            r.pith,
            r.sqlite,
            r.ratio()
        );
    }
    println!("legend:");
    println!("  ratio        PithDB's advantage: pith/sqlite for rates, sqlite/pith for sizes and times (> 1: PithDB better)");
    println!("  get          one row by primary key, every column");
    println!("  eq INDEX     exact lookup of one row's values on a secondary index: the matching primary keys (at most 100)");
    println!("  range100     100 rows in index order from one row's values: the first column group's columns (group) or all");
    println!("  count COL    rows with one value of the range index's first column");
    println!("  regex        rows whose index column fully matches (PithDB: through the index's tries; SQLite: REGEXP over every row, or GLOB)");
    let figures: Vec<serde_json::Value> = report
        .iter()
        .map(|r| {
            serde_json::json!({
                "workload": r.workload, "threads": r.threads, "unit": r.unit,
                "pith": r.pith, "sqlite": r.sqlite, "ratio": r.ratio(),
            })
        })
        .collect();
    let json = serde_json::json!({
        "bench": "table",
        "rows": rows.len(),
        "input": args.rows.display().to_string(),
        "pith_bytes": pith_bytes,
        "sqlite_bytes": sqlite_bytes,
        "size_ratio": pith_bytes as f64 / sqlite_bytes.max(1) as f64,
        "seconds": args.seconds,
        "results": figures,
    });
    println!("{json}");
}
