//! `pith table`: tables with typed columns, indexes and column groups
//! (`pith-table`) from the command line.
//!
//! Values on the command line (keys, query bounds) are read as JSON when
//! they parse as a value the column takes (`42`, `true`, `"a b"`), and
//! as text otherwise (`zlib`), so strings need no quotes. Rows print as
//! JSON Lines, one object per row, the asked-for columns in order.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use pith_table::{Column, Condition, KeyBound, Query, Schema, Table, Tables, Value};

use crate::db_cmd::{open, open_read_only, progress, DbArg};
use crate::input::Objects;
use crate::output::Out;
use crate::text::thousands;
use crate::CliError;

/// `pith table` subcommands.
#[derive(clap::Subcommand)]
pub enum TableCommand {
    /// Creates a table from a JSON schema file (see `pith-table`'s docs).
    Create {
        #[command(flatten)]
        db: DbArg,
        /// The schema file.
        #[arg(long)]
        schema: PathBuf,
    },
    /// Loads rows: JSON Lines objects, column name -> value (zstd ok; `-`: stdin).
    #[command(after_help = "\
An empty table is bulk loaded: every row is checked first (a bad value or a duplicate \
key stops the load, naming its line, before anything is written), then each column \
group and index is built straight into segments. Into a table that has rows, rows are \
inserted one by one, each checked; a bad line stops the load there.")]
    Load {
        #[command(flatten)]
        db: DbArg,
        /// The table.
        table: String,
        /// Input file.
        file: PathBuf,
    },
    /// Changes a table's schema to the one in a file (`pith table schema` prints the current one).
    #[command(after_help = "\
Changes that need no rewrite of the rows: new nullable columns (at the end, in an existing \
or a new column group), new indexes and dropped ones. Anything else (renaming, retyping or \
removing a column, changing the primary key, moving a column between groups, redefining an \
index under its old name) is refused, saying why, and nothing changes. New indexes are \
built from the rows in the background; this command waits for the build and reports it \
(interrupted, the build resumes the next time the database is opened for writing).")]
    Alter {
        #[command(flatten)]
        db: DbArg,
        /// The new schema (its `name` says which table).
        #[arg(long)]
        schema: PathBuf,
    },
    /// Prints a table's schema as JSON (what `create` and `alter` read).
    Schema {
        #[command(flatten)]
        db: DbArg,
        /// The table.
        table: String,
    },
    /// Lists the tables.
    List {
        #[command(flatten)]
        db: DbArg,
    },
    /// Prints the row with this primary key (one value per key column).
    Get {
        #[command(flatten)]
        db: DbArg,
        /// The table.
        table: String,
        /// Primary key values, in key order.
        #[arg(required = true)]
        key: Vec<String>,
        /// Columns to print, comma-separated (default: all).
        #[arg(long, value_delimiter = ',')]
        columns: Vec<String>,
    },
    /// Prints rows an index selects, in index order.
    Query(QueryArgs),
    /// Rows, raw and stored bytes and the ratio of each column group and index.
    Stats {
        #[command(flatten)]
        db: DbArg,
        /// The table.
        table: String,
    },
    /// Checks that every index entry names its row and every row is in every index.
    Verify {
        #[command(flatten)]
        db: DbArg,
        /// The table.
        table: String,
    },
}

/// `pith table query`.
#[derive(clap::Args)]
#[command(after_help = "\
Exactly one condition: --eq (all of the index's columns, or the first ones), --prefix \
(the first columns), a range (--from/--after for the lower side, --to/--before for the \
upper; each the first columns, inclusive or exclusive), or --regex (the first column, a \
string; walked through the index's tries). --index primary queries the primary key.")]
pub struct QueryArgs {
    #[command(flatten)]
    db: DbArg,
    /// The table.
    table: String,
    /// The index (or `primary`).
    #[arg(long)]
    index: String,
    /// Index columns equal to these values.
    #[arg(long, num_args = 1..)]
    eq: Vec<String>,
    /// The first index columns equal to these values.
    #[arg(long, num_args = 1..)]
    prefix: Vec<String>,
    /// Lower bound, included.
    #[arg(long, num_args = 1..)]
    from: Vec<String>,
    /// Lower bound, excluded.
    #[arg(long, num_args = 1..)]
    after: Vec<String>,
    /// Upper bound, included.
    #[arg(long, num_args = 1..)]
    to: Vec<String>,
    /// Upper bound, excluded.
    #[arg(long, num_args = 1..)]
    before: Vec<String>,
    /// The first column fully matches this regex.
    #[arg(long)]
    regex: Option<String>,
    /// Columns to print, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    columns: Vec<String>,
    /// At most this many rows.
    #[arg(long)]
    limit: Option<usize>,
    /// Descending index order.
    #[arg(long)]
    reverse: bool,
    /// Print only how many rows match.
    #[arg(long)]
    count: bool,
}

/// Runs a `pith table` subcommand.
pub fn run(cmd: &TableCommand) -> Result<(), CliError> {
    match cmd {
        TableCommand::Create { db, schema } => create(&db.db, schema),
        TableCommand::Load { db, table, file } => load(&db.db, table, file),
        TableCommand::Alter { db, schema } => alter(&db.db, schema),
        TableCommand::Schema { db, table } => print_schema(&db.db, table),
        TableCommand::List { db } => list(&db.db),
        TableCommand::Get {
            db,
            table,
            key,
            columns,
        } => get(&db.db, table, key, columns),
        TableCommand::Query(q) => query(q),
        TableCommand::Stats { db, table } => stats(&db.db, table),
        TableCommand::Verify { db, table } => verify(&db.db, table),
    }
}

/// Reads a schema file.
fn read_schema(path: &std::path::Path) -> Result<Schema, CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Schema::from_json(&text)?)
}

fn create(dir: &std::path::Path, schema: &std::path::Path) -> Result<(), CliError> {
    let schema = read_schema(schema)?;
    let tables = Tables::open(Arc::new(open(dir, true)?))?;
    let t = tables.create(&schema)?;
    println!(
        "created table {}: {} columns, {} column groups, {} indexes",
        schema.name,
        schema.columns.len(),
        t.schema().groups.len(),
        schema.indexes.len()
    );
    Ok(())
}

fn alter(dir: &std::path::Path, path: &std::path::Path) -> Result<(), CliError> {
    let next = read_schema(path)?;
    let tables = Tables::open(Arc::new(open(dir, false)?))?;
    let before = tables.schema(&next.name)?;
    let t = tables.alter(&next)?;
    let changes = schema_changes(&before, t.schema());
    match changes.is_empty() {
        true => println!("table {}: the schema is unchanged", next.name),
        false => println!("table {}: {}", next.name, changes.join("; ")),
    }
    // A build this change started, or one an earlier run left unfinished
    // (opening the database resumed it): waited for either way, since
    // this process's exit would stop it again.
    let ours = |b: &pith_table::BuildStatus| b.table == next.name;
    let Some(started) = tables.builds().into_iter().find(ours) else {
        return Ok(());
    };
    let clock = Instant::now();
    let bar = progress("{spinner} {elapsed} {msg}");
    while let Some(b) = tables
        .builds()
        .into_iter()
        .find(|b| ours(b) && b.state == pith_table::BuildState::Running)
    {
        bar.set_message(format!(
            "building {}: {} rows",
            b.indexes.join(", "),
            thousands(b.rows)
        ));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    bar.finish_and_clear();
    let waited = tables.wait_for_builds(&next.name);
    let status = tables.builds().into_iter().find(ours);
    for (index, why) in status.iter().flat_map(|b| &b.failed) {
        println!("index {index} could not be built and was dropped: {why}");
    }
    waited?;
    println!(
        "built {} in {:.1} s ({} rows walked)",
        started.indexes.join(", "),
        clock.elapsed().as_secs_f64(),
        thousands(status.map_or(0, |b| b.rows))
    );
    Ok(())
}

/// What `after` adds to or drops from `before`, one phrase each.
fn schema_changes(before: &Schema, after: &Schema) -> Vec<String> {
    let mut out = Vec::new();
    for c in &after.columns[before.columns.len().min(after.columns.len())..] {
        out.push(format!("column {} ({}) added", c.name, c.ty.name()));
    }
    for g in after
        .groups
        .iter()
        .filter(|g| !before.groups.iter().any(|b| b.name == g.name))
    {
        out.push(format!("column group {} added", g.name));
    }
    for i in after
        .indexes
        .iter()
        .filter(|i| before.index(&i.name).is_none())
    {
        out.push(format!("index {} added", i.name));
    }
    for i in before
        .indexes
        .iter()
        .filter(|i| after.index(&i.name).is_none())
    {
        out.push(format!("index {} dropped", i.name));
    }
    out
}

fn print_schema(dir: &std::path::Path, name: &str) -> Result<(), CliError> {
    let tables = Tables::open(Arc::new(open_read_only(dir)?))?;
    let schema = tables.schema(name)?;
    let text = serde_json::to_string_pretty(&schema.to_json())
        .map_err(|e| CliError::Usage(format!("printing the schema of {name}: {e}")))?;
    println!("{text}");
    Ok(())
}

fn list(dir: &std::path::Path) -> Result<(), CliError> {
    let tables = match Tables::open(Arc::new(open_read_only(dir)?)) {
        Ok(t) => t,
        // A database no table was ever created in.
        Err(pith_table::Error::NoSuchTable { .. }) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for name in tables.list()? {
        println!("{name}");
    }
    Ok(())
}

fn open_table(dir: &std::path::Path, name: &str, write: bool) -> Result<Table, CliError> {
    let db = match write {
        true => open(dir, false)?,
        false => open_read_only(dir)?,
    };
    let tables = Tables::open(Arc::new(db))?;
    Ok(tables.open_table(name)?)
}

fn load(dir: &std::path::Path, name: &str, file: &std::path::Path) -> Result<(), CliError> {
    let t = open_table(dir, name, true)?;
    let started = Instant::now();
    let bar = progress("{spinner} {elapsed} {msg}");
    bar.set_message("reading rows");
    let shown = crate::input::display_name(file);
    let rows = Objects::open(file)?.map(|r| {
        let (line, obj) = r.map_err(|e| pith_table::Error::Value {
            table: name.into(),
            row: "input".into(),
            column: "*".into(),
            detail: e.to_string(),
        })?;
        let label = format!("{}:{line}", shown.display());
        let row = t.row_from_json(&obj, &label)?;
        Ok((label, row))
    });
    let stats = t.load(rows, &mut |n| {
        bar.set_message(format!("{} rows", thousands(n)))
    })?;
    bar.set_message("flushing");
    t.db().flush()?;
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "loaded {} rows into {name} in {secs:.1} s ({:.0} rows/s, {})",
        thousands(stats.rows),
        stats.rows as f64 / secs.max(1e-9),
        if stats.bulk { "bulk" } else { "row by row" }
    );
    Ok(())
}

/// Reads a command-line value for `column`: as JSON when it parses as a
/// value the column takes, else as text.
fn value(arg: &str, column: &Column, table: &str) -> Result<Value, CliError> {
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(arg) {
        if let Ok(v) = Value::from_json(&json, column) {
            return Ok(v);
        }
    }
    Value::from_json(&serde_json::Value::String(arg.into()), column).map_err(|detail| {
        CliError::Table(pith_table::Error::Value {
            table: table.into(),
            row: "the command line".into(),
            column: column.name.clone(),
            detail,
        })
    })
}

/// Values for the first columns of `cols`.
fn values(args: &[String], cols: &[usize], t: &Table) -> Result<Vec<Value>, CliError> {
    let s = t.schema();
    if args.len() > cols.len() {
        return Err(CliError::Usage(format!(
            "{} values given, but there are {} columns",
            args.len(),
            cols.len()
        )));
    }
    args.iter()
        .zip(cols)
        .map(|(a, &c)| value(a, &s.columns[c], &s.name))
        .collect()
}

fn chosen(t: &Table, names: &[String]) -> Result<Vec<usize>, CliError> {
    if names.is_empty() {
        return Ok(t.all_columns());
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    Ok(t.columns(&names)?)
}

fn get(
    dir: &std::path::Path,
    name: &str,
    key: &[String],
    columns: &[String],
) -> Result<(), CliError> {
    let t = open_table(dir, name, false)?;
    let key = values(key, &t.schema().primary_key, &t)?;
    let cols = chosen(&t, columns)?;
    match t.get(&key, &cols)? {
        Some(row) => {
            println!("{}", json_line(&t, &cols, &row));
            Ok(())
        }
        None => Err(CliError::NotFound(format!(
            "no row with that key in {name}"
        ))),
    }
}

fn query(a: &QueryArgs) -> Result<(), CliError> {
    let t = open_table(&a.db.db, &a.table, false)?;
    let s = t.schema();
    let index_cols = match s.index(&a.index) {
        Some(ix) => ix.columns.clone(),
        None if a.index == pith_table::PRIMARY => s.primary_key.clone(),
        None => {
            return Err(CliError::Usage(format!(
                "table {} has no index {} (indexes: {}, and primary)",
                s.name,
                a.index,
                s.indexes
                    .iter()
                    .map(|i| i.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    };
    let v = |args: &[String]| values(args, &index_cols, &t);
    let lower = !a.from.is_empty() || !a.after.is_empty();
    let upper = !a.to.is_empty() || !a.before.is_empty();
    let kinds = [
        !a.eq.is_empty(),
        !a.prefix.is_empty(),
        lower || upper,
        a.regex.is_some(),
    ];
    if kinds.iter().filter(|&&k| k).count() != 1
        || (!a.from.is_empty() && !a.after.is_empty())
        || (!a.to.is_empty() && !a.before.is_empty())
    {
        return Err(CliError::Usage(
            "give exactly one of --eq, --prefix, a range (--from or --after, --to or --before) or --regex".into(),
        ));
    }
    let condition = if !a.eq.is_empty() {
        Condition::Eq(v(&a.eq)?)
    } else if !a.prefix.is_empty() {
        Condition::Prefix(v(&a.prefix)?)
    } else if let Some(r) = &a.regex {
        Condition::Regex(r.clone())
    } else {
        let lo = match (&a.from[..], &a.after[..]) {
            ([], []) => KeyBound::Unbounded,
            (f, []) => KeyBound::Included(v(f)?),
            (_, x) => KeyBound::Excluded(v(x)?),
        };
        let hi = match (&a.to[..], &a.before[..]) {
            ([], []) => KeyBound::Unbounded,
            (f, []) => KeyBound::Included(v(f)?),
            (_, x) => KeyBound::Excluded(v(x)?),
        };
        Condition::Range(lo, hi)
    };
    if a.count {
        println!("{}", t.count(&a.index, &condition)?);
        return Ok(());
    }
    let cols = chosen(&t, &a.columns)?;
    let q = Query {
        index: a.index.clone(),
        condition,
        columns: cols.clone(),
        limit: a.limit,
        reverse: a.reverse,
    };
    let mut out = Out::stdout();
    let io = |source| CliError::Io {
        path: PathBuf::from("<stdout>"),
        source,
    };
    // Rows are printed as the query finds them, not collected first; a
    // failed write (a closed pipe) stops the query.
    let mut failed = None;
    t.query_each(&q, |row| {
        let mut line = json_line(&t, &cols, row).into_bytes();
        line.push(b'\n');
        failed = out.write(&line).err();
        failed.is_none()
    })?;
    if let Some(e) = failed {
        return Err(io(e));
    }
    out.finish().map_err(io)
}

/// A row as one JSON object, its columns in the order asked for.
fn json_line(t: &Table, cols: &[usize], row: &[Value]) -> String {
    let s = t.schema();
    let fields: Vec<String> = cols
        .iter()
        .zip(row)
        .map(|(&c, v)| {
            let col = &s.columns[c];
            format!(
                "{}:{}",
                serde_json::Value::from(col.name.as_str()),
                v.to_json(col.ty)
            )
        })
        .collect();
    format!("{{{}}}", fields.join(","))
}

fn stats(dir: &std::path::Path, name: &str) -> Result<(), CliError> {
    let t = open_table(dir, name, false)?;
    println!(
        "{:<6} {:<24} {:>10} {:>14} {:>14} {:>7}",
        "kind", "name", "entries", "raw bytes", "stored bytes", "ratio"
    );
    let mut raw = 0;
    let mut stored = 0;
    for f in t.stats()? {
        println!(
            "{:<6} {:<24} {:>10} {:>14} {:>14} {:>7.2}",
            f.kind,
            f.name,
            thousands(f.entries),
            thousands(f.raw_bytes),
            thousands(f.stored_bytes),
            f.ratio()
        );
        raw += f.raw_bytes;
        stored += f.stored_bytes;
    }
    println!(
        "{:<6} {:<24} {:>10} {:>14} {:>14} {:>7.2}",
        "all",
        name,
        "",
        thousands(raw),
        thousands(stored),
        raw as f64 / stored.max(1) as f64
    );
    Ok(())
}

fn verify(dir: &std::path::Path, name: &str) -> Result<(), CliError> {
    let t = open_table(dir, name, false)?;
    let started = Instant::now();
    let rows = t.verify()?;
    println!(
        "ok: {} rows, {} indexes agree with them ({:.1} s)",
        thousands(rows),
        t.schema().indexes.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
