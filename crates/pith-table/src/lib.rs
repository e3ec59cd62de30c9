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
//! per table); reads are at a snapshot.
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

mod catalog;
mod error;
pub mod keycode;
mod maintain;
mod query;
pub mod rowcode;
mod schema;
mod table;
mod value;

pub use catalog::{group_family, index_family, Tables, CATALOG};
pub use error::{Error, Result};
pub use maintain::{FamilyStats, LoadStats};
pub use query::{Condition, KeyBound, Query, PRIMARY};
pub use schema::{Column, ColumnType, Group, Index, Schema, DEFAULT_GROUP};
pub use table::Table;
pub use value::Value;
