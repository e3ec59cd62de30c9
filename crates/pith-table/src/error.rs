//! The table layer's one error type: every error names the table and,
//! where there is one, the row (its primary key, or the input line) and
//! the column.

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The engine failed (I/O, corruption, ...).
    #[error(transparent)]
    Engine(#[from] pith::Error),
    /// A schema that does not parse or does not make sense.
    #[error("schema of table {table}: {detail}")]
    Schema {
        /// The table (or `?` before its name is known).
        table: String,
        /// What is wrong, naming the column, index or group.
        detail: String,
    },
    /// A value that does not fit its column.
    #[error("table {table}, {row}, column {column}: {detail}")]
    Value {
        /// The table.
        table: String,
        /// The row: its primary key, or where it came from.
        row: String,
        /// The column.
        column: String,
        /// What is wrong with the value.
        detail: String,
    },
    /// A column the schema does not have.
    #[error("table {table}, {row}: no column {column}")]
    UnknownColumn {
        /// The table.
        table: String,
        /// The row.
        row: String,
        /// The name given.
        column: String,
    },
    /// A non-nullable column without a value.
    #[error("table {table}, {row}: column {column} is not nullable and has no value")]
    MissingColumn {
        /// The table.
        table: String,
        /// The row.
        row: String,
        /// The column.
        column: String,
    },
    /// An insert whose primary key, or a unique index's value, is taken.
    #[error("table {table}, {row}: {index} already holds this value")]
    Duplicate {
        /// The table.
        table: String,
        /// The row being written.
        row: String,
        /// `primary key` or the unique index's name.
        index: String,
    },
    /// An update or delete of a row that does not exist.
    #[error("table {table}: no row {row}")]
    NoSuchRow {
        /// The table.
        table: String,
        /// The primary key looked for.
        row: String,
    },
    /// No table of that name.
    #[error("no table {name}")]
    NoSuchTable {
        /// The name.
        name: String,
    },
    /// A table of that name exists already.
    #[error("table {name} already exists")]
    TableExists {
        /// The name.
        name: String,
    },
    /// A query that does not fit the index (too many values, a regex on
    /// a column that is not a string, ...).
    #[error("table {table}, index {index}: {detail}")]
    Query {
        /// The table.
        table: String,
        /// The index.
        index: String,
        /// What is wrong.
        detail: String,
    },
    /// A schema change that would need the table rewritten.
    #[error("table {table}: {detail}")]
    Unsupported {
        /// The table.
        table: String,
        /// The change, and why it is refused.
        detail: String,
    },
    /// Stored bytes that do not decode under the schema.
    #[error("table {table}: stored {what} does not decode: {detail}")]
    Corrupt {
        /// The table.
        table: String,
        /// Which family or entry.
        what: String,
        /// What is wrong.
        detail: String,
    },
    /// A query or count on an index whose background build has not
    /// ended (`Tables::wait_for_builds` waits for it).
    #[error("table {table}, index {index}: not built yet ({rows} rows so far); wait for it with Tables::wait_for_builds")]
    IndexBuilding {
        /// The table.
        table: String,
        /// The index.
        index: String,
        /// Rows its build has walked.
        rows: u64,
    },
    /// An index added by a schema change that could not be built (a
    /// unique index whose rows hold a value twice); it was removed from
    /// the schema.
    #[error("table {table}, index {index}: could not be built and was removed: {detail}")]
    IndexBuildFailed {
        /// The table.
        table: String,
        /// The index.
        index: String,
        /// Why.
        detail: String,
    },
    /// A write through a `Table` opened before the table's schema changed
    /// (`Tables::alter`, `drop_table`): open the table again.
    #[error(
        "table {table}: its schema changed since this handle was opened; open the table again"
    )]
    StaleTable {
        /// The table.
        table: String,
    },
    /// An index build stopped by an error (it starts again at the next
    /// `Tables::open`).
    #[error("table {table}: an index build stopped: {detail}")]
    IndexBuildStopped {
        /// The table.
        table: String,
        /// The error.
        detail: String,
    },
    /// `verify` found an index entry without its row, or a row missing
    /// from an index.
    #[error("table {table}, index {index}: {detail}")]
    Inconsistent {
        /// The table.
        table: String,
        /// The index.
        index: String,
        /// What does not match.
        detail: String,
    },
}
