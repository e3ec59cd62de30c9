//! `pith-table`: tables on PithDB, with typed columns, several indexes per
//! table, composite indexes and column groups (TerarkDB's table layer).
//!
//! A table's schema ([`Schema`], from JSON) names its columns and their
//! types, a primary key of one or more columns, indexes (unique or not,
//! composite allowed) and column groups. Each column group and each index
//! lives in a column family of its own, so each is compressed with a
//! model of its own kind of data, and a read of some columns touches only
//! the groups they are in. Keys are order-preserving encodings of the
//! typed values ([`keycode`]), so integer, float, signed and composite
//! keys sort right as bytes; rows carry no column names ([`rowcode`]).
//! Every row write changes the row and all its index entries in one atomic
//! batch; unique constraints hold under concurrent writers (a write lock
//! per table); reads are at a snapshot. An empty table loads in bulk, all
//! its families at once ([`Table::load`]); an index added to a table with
//! rows is built in the background ([`Tables::alter`],
//! [`Tables::wait_for_builds`]).
//!
//! ```
//! use std::sync::Arc;
//! use pith_table::{Condition, Query, Schema, Tables, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Arc::new(pith::DB::open(dir.path(), pith::Options::default())?);
//! let tables = Tables::open(db)?;
//! let schema = Schema::from_json(r#"{
//!     "name": "people",
//!     "columns": [
//!         {"name": "id", "type": "u32"},
//!         {"name": "name", "type": "string"},
//!         {"name": "born", "type": "i16", "nullable": true},
//!         {"name": "bio", "type": "string", "nullable": true}
//!     ],
//!     "primary_key": ["id"],
//!     "indexes": [{"name": "by_name", "columns": ["name", "born"]}],
//!     "column_groups": [{"name": "text", "columns": ["bio"]}]
//! }"#)?;
//! let people = tables.create(&schema)?;
//! people.insert(&[Value::UInt(1), Value::Text("Ada".into()), Value::Int(1815), Value::Null])?;
//! people.insert(&[Value::UInt(2), Value::Text("Alan".into()), Value::Int(1912), Value::Null])?;
//! let cols = people.columns(&["id", "born"])?;
//! let rows = people.query(&Query {
//!     index: "by_name".into(),
//!     condition: Condition::Regex("A.a".into()), // Ada, not Alan
//!     columns: cols,
//!     limit: Some(10),
//!     reverse: false,
//! })?;
//! assert_eq!(rows, vec![vec![Value::UInt(1), Value::Int(1815)]]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod build;
mod catalog;
mod error;
pub mod keycode;
mod layout;
mod maintain;
mod query;
pub mod rowcode;
mod schema;
mod table;
mod value;

pub use build::{BuildState, BuildStatus};
pub use catalog::{group_family, index_family, Tables, CATALOG};
pub use error::{Error, Result};
pub use maintain::{FamilyStats, LoadStats};
pub use query::{Condition, KeyBound, Query, PRIMARY};
pub use schema::{Column, ColumnType, Group, Index, Schema, DEFAULT_GROUP};
pub use table::Table;
pub use value::Value;

/// Decodes `data` as stored keys and rows of a fixed set of column types
/// (the first byte picks which), as the fuzz target and the robustness
/// test do: it must never panic, what decodes must encode back to the
/// bytes it came from, and a row must decode the same afresh and into a
/// reused row.
pub fn fuzz_decode(data: &[u8]) {
    const TYPES: [ColumnType; 12] = [
        ColumnType::U32,
        ColumnType::I16,
        ColumnType::String,
        ColumnType::F64,
        ColumnType::FixedBytes(2),
        ColumnType::Decimal {
            precision: 38,
            scale: 2,
        },
        ColumnType::Bytes,
        ColumnType::Bool,
        ColumnType::Timestamp,
        ColumnType::Uuid,
        ColumnType::I8,
        ColumnType::U64,
    ];
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let types: Vec<ColumnType> = (0..usize::from(pick % 4) + 1)
        .map(|i| TYPES[(usize::from(pick / 4) + 5 * i) % TYPES.len()])
        .collect();
    let mut b = rest;
    if let Some(values) = keycode::decode_all(&mut b, &types) {
        let used = rest.len() - b.len();
        let again = keycode::encode_all(&values, &types);
        // -0.0 is stored as 0.0: the one value with two encodings read.
        let negative_zero = values
            .iter()
            .any(|v| matches!(v, Value::Float(f) if *f == 0.0));
        assert!(
            negative_zero || again == rest[..used],
            "a decoded key encodes to other bytes"
        );
    }
    let mut b = rest;
    for &ty in &types {
        if keycode::skip(&mut b, ty).is_none() {
            break;
        }
    }
    let columns: Vec<Column> = types
        .iter()
        .enumerate()
        .map(|(i, &ty)| Column {
            name: format!("c{i}"),
            ty,
            nullable: i % 2 == 1,
        })
        .collect();
    let refs: Vec<&Column> = columns.iter().collect();
    // The same bytes decoded into a reused row (strings there already,
    // as a query's row buffer holds) agree with a fresh decode, valid or
    // not.
    let mut row: Vec<Value> = (0..refs.len())
        .map(|i| Value::Text(format!("stale {i}")))
        .collect();
    let into = rowcode::decode_some_into(rest, &refs, Some, &mut row);
    match rowcode::decode(rest, &refs) {
        Some(values) => {
            assert_eq!(values.len(), refs.len());
            assert!(into.is_some(), "a row decodes afresh but not into a row");
            // Floats by their bits: a NaN is not equal to itself.
            let same = |a: &Value, b: &Value| match (a, b) {
                (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
                _ => a == b,
            };
            assert!(
                row.len() == values.len() && row.iter().zip(&values).all(|(a, b)| same(a, b)),
                "a row decodes differently into a row: {row:?} against {values:?}"
            );
        }
        None => assert!(into.is_none(), "a bad row decodes into a row"),
    }
}
