//! What reads and writes look up on every row, worked out once from a
//! table's schema: the column group of each column, each group's columns
//! as stored, and the key column types of the primary key and of each
//! index. A schema's lists are small, but a point read looked them up
//! column by column (a linear search per column, a fresh vector per
//! group) and that was a tenth of its time.
//!
//! Invariant: a `Layout` describes exactly the schema it was made from;
//! a table whose schema changes gets a new one (`Tables::alter`).

use crate::schema::{Column, ColumnType, Schema};

/// Lookups precomputed from one schema.
#[derive(Debug)]
pub(crate) struct Layout {
    /// The group each column is stored in (`None`: a primary key column,
    /// stored in the keys).
    pub group_of: Vec<Option<usize>>,
    /// Each group's columns, in the group's order (as `rowcode` stores
    /// them).
    pub group_columns: Vec<Vec<Column>>,
    /// The primary key's column types, in key order.
    pub pk_types: Vec<ColumnType>,
    /// Each index's column types, in key order.
    pub index_types: Vec<Vec<ColumnType>>,
}

impl Layout {
    pub(crate) fn new(s: &Schema) -> Layout {
        let types = |cols: &[usize]| cols.iter().map(|&c| s.columns[c].ty).collect();
        Layout {
            group_of: (0..s.columns.len()).map(|c| s.group_of(c)).collect(),
            group_columns: s
                .groups
                .iter()
                .map(|g| g.columns.iter().map(|&c| s.columns[c].clone()).collect())
                .collect(),
            pk_types: types(&s.primary_key),
            index_types: s.indexes.iter().map(|i| types(&i.columns)).collect(),
        }
    }
}
