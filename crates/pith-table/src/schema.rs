//! Table schemas: typed columns, a primary key, indexes and column groups,
//! read from JSON (TerarkDB's `dbmeta.json` is the precedent) and checked
//! whole before anything is stored.
//!
//! ```json
//! {
//!   "name": "packages",
//!   "columns": [
//!     {"name": "id", "type": "u32"},
//!     {"name": "package", "type": "string"},
//!     {"name": "installed_size", "type": "u64", "nullable": true},
//!     {"name": "md5", "type": "fixed_bytes", "length": 16, "nullable": true},
//!     {"name": "price", "type": "decimal", "precision": 12, "scale": 2, "nullable": true}
//!   ],
//!   "primary_key": ["id"],
//!   "indexes": [{"name": "by_package", "columns": ["package"], "unique": true}],
//!   "column_groups": [{"name": "hashes", "columns": ["md5"]}]
//! }
//! ```
//!
//! Invariants of a [`Schema`]: names (table, columns, indexes, groups)
//! are 1 to 64 bytes of `[A-Za-z0-9_]`, distinct within their kind; the
//! primary key is 1 to 16 distinct non-nullable columns; every index has
//! 1 to 16 distinct columns; every column that is not in the primary key
//! is in exactly one group, the ones no group names in the group
//! `default` (always the first group, possibly without columns); primary
//! key columns are in no group (the key holds them). Ascending order is
//! the only order (a descending query walks an index backwards).

use serde_json::{Map, Value as Json};

use crate::error::{Error, Result};

/// A column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// Signed integers.
    I8,
    /// 16-bit signed.
    I16,
    /// 32-bit signed.
    I32,
    /// 64-bit signed.
    I64,
    /// Unsigned integers.
    U8,
    /// 16-bit unsigned.
    U16,
    /// 32-bit unsigned.
    U32,
    /// 64-bit unsigned.
    U64,
    /// IEEE 754 double (NaN refused).
    F64,
    /// true or false.
    Bool,
    /// Exactly this many bytes (hex in JSON).
    FixedBytes(u16),
    /// UTF-8 text.
    String,
    /// Any bytes (hex in JSON).
    Bytes,
    /// Microseconds since the Unix epoch (an integer, or RFC 3339 text, in
    /// JSON; RFC 3339 in UTC out).
    Timestamp,
    /// 16 bytes (`8-4-4-4-12` hex in JSON).
    Uuid,
    /// Exact decimal: at most `precision` digits (1 to 38), `scale` of them
    /// after the point (text or an integer in JSON, never a float).
    Decimal {
        /// Total digits.
        precision: u8,
        /// Digits after the point.
        scale: u8,
    },
}

impl ColumnType {
    /// Bytes of a value in a row when it has a fixed width.
    pub fn fixed_width(self) -> Option<usize> {
        Some(match self {
            ColumnType::I8 | ColumnType::U8 | ColumnType::Bool => 1,
            ColumnType::I16 | ColumnType::U16 => 2,
            ColumnType::I32 | ColumnType::U32 => 4,
            ColumnType::I64 | ColumnType::U64 | ColumnType::F64 | ColumnType::Timestamp => 8,
            ColumnType::FixedBytes(n) => usize::from(n),
            ColumnType::Uuid | ColumnType::Decimal { .. } => 16,
            ColumnType::String | ColumnType::Bytes => return None,
        })
    }

    /// The name the schema file uses.
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::I8 => "i8",
            ColumnType::I16 => "i16",
            ColumnType::I32 => "i32",
            ColumnType::I64 => "i64",
            ColumnType::U8 => "u8",
            ColumnType::U16 => "u16",
            ColumnType::U32 => "u32",
            ColumnType::U64 => "u64",
            ColumnType::F64 => "f64",
            ColumnType::Bool => "bool",
            ColumnType::FixedBytes(_) => "fixed_bytes",
            ColumnType::String => "string",
            ColumnType::Bytes => "bytes",
            ColumnType::Timestamp => "timestamp",
            ColumnType::Uuid => "uuid",
            ColumnType::Decimal { .. } => "decimal",
        }
    }
}

/// One column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: ColumnType,
    /// Whether it may be null.
    pub nullable: bool,
}

/// One secondary index: its columns, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    /// Its name.
    pub name: String,
    /// Column positions in [`Schema::columns`].
    pub columns: Vec<usize>,
    /// At most one row per value (nulls included: a null is a value).
    pub unique: bool,
}

/// One column group: columns stored together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Its name.
    pub name: String,
    /// Column positions, in schema order.
    pub columns: Vec<usize>,
}

/// A table's schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    /// The table's name.
    pub name: String,
    /// Every column, in declaration order.
    pub columns: Vec<Column>,
    /// Primary key column positions, in key order.
    pub primary_key: Vec<usize>,
    /// Secondary indexes.
    pub indexes: Vec<Index>,
    /// Column groups, `default` first.
    pub groups: Vec<Group>,
}

/// Longest name, in bytes.
const MAX_NAME: usize = 64;
/// Most columns in a key.
const MAX_KEY_COLUMNS: usize = 16;
/// The group of columns no group names.
pub const DEFAULT_GROUP: &str = "default";

impl Schema {
    /// Parses and checks a schema from JSON text.
    pub fn from_json(text: &str) -> Result<Schema> {
        let json: Json = serde_json::from_str(text).map_err(|e| schema_error("?", e))?;
        Schema::from_value(&json)
    }

    /// Parses and checks a schema from a JSON value.
    pub fn from_value(json: &Json) -> Result<Schema> {
        let obj = json
            .as_object()
            .ok_or_else(|| schema_error("?", "a schema is a JSON object"))?;
        let name = string_field(obj, "name", "?")?;
        check_name(&name, "table", &name)?;
        let table = name.as_str();
        let err = |d: String| schema_error(table, d);
        known_fields(
            obj,
            &["name", "columns", "primary_key", "indexes", "column_groups"],
            table,
            "the schema",
        )?;
        let columns_json = obj
            .get("columns")
            .and_then(Json::as_array)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| err("`columns` must be a non-empty array".into()))?;
        let mut columns = Vec::with_capacity(columns_json.len());
        for (i, c) in columns_json.iter().enumerate() {
            columns.push(parse_column(c, i, table)?);
        }
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].iter().any(|o| o.name == c.name) {
                return Err(err(format!("column {} is declared twice", c.name)));
            }
        }
        let position = |what: &str, n: &str| {
            columns
                .iter()
                .position(|c| c.name == n)
                .ok_or_else(|| err(format!("{what} names column {n}, which is not declared")))
        };
        let names = |v: Option<&Json>, what: &str| -> Result<Vec<usize>> {
            let arr = v
                .and_then(Json::as_array)
                .ok_or_else(|| err(format!("{what} must be an array of column names")))?;
            let mut out = Vec::with_capacity(arr.len());
            for n in arr {
                let n = n
                    .as_str()
                    .ok_or_else(|| err(format!("{what} must be an array of column names")))?;
                let at = position(what, n)?;
                if out.contains(&at) {
                    return Err(err(format!("{what} names column {n} twice")));
                }
                out.push(at);
            }
            Ok(out)
        };
        let primary_key = names(obj.get("primary_key"), "`primary_key`")?;
        if primary_key.is_empty() || primary_key.len() > MAX_KEY_COLUMNS {
            return Err(err(format!(
                "the primary key has 1 to {MAX_KEY_COLUMNS} columns"
            )));
        }
        if let Some(&c) = primary_key.iter().find(|&&c| columns[c].nullable) {
            return Err(err(format!(
                "primary key column {} cannot be nullable",
                columns[c].name
            )));
        }
        let mut indexes: Vec<Index> = Vec::new();
        let no_indexes = Json::Array(Vec::new());
        let index_json = obj.get("indexes").unwrap_or(&no_indexes);
        let index_json = index_json
            .as_array()
            .ok_or_else(|| err("`indexes` must be an array".into()))?;
        for ix in index_json {
            let o = ix
                .as_object()
                .ok_or_else(|| err("an index is an object".into()))?;
            let name = string_field(o, "name", table)?;
            check_name(&name, "index", table)?;
            known_fields(
                o,
                &["name", "columns", "unique"],
                table,
                &format!("index {name}"),
            )?;
            if indexes.iter().any(|i| i.name == name) {
                return Err(err(format!("index {name} is declared twice")));
            }
            let cols = names(o.get("columns"), &format!("index {name}"))?;
            if cols.is_empty() || cols.len() > MAX_KEY_COLUMNS {
                return Err(err(format!(
                    "index {name} has 1 to {MAX_KEY_COLUMNS} columns"
                )));
            }
            let unique = match o.get("unique") {
                None => false,
                Some(Json::Bool(b)) => *b,
                Some(_) => return Err(err(format!("index {name}: `unique` is true or false"))),
            };
            indexes.push(Index {
                name,
                columns: cols,
                unique,
            });
        }
        let mut groups = vec![Group {
            name: DEFAULT_GROUP.into(),
            columns: Vec::new(),
        }];
        let mut grouped = vec![false; columns.len()];
        let no_groups = Json::Array(Vec::new());
        let groups_json = obj.get("column_groups").unwrap_or(&no_groups);
        let groups_json = groups_json
            .as_array()
            .ok_or_else(|| err("`column_groups` must be an array".into()))?;
        for g in groups_json {
            let o = g
                .as_object()
                .ok_or_else(|| err("a column group is an object".into()))?;
            let name = string_field(o, "name", table)?;
            check_name(&name, "column group", table)?;
            known_fields(
                o,
                &["name", "columns"],
                table,
                &format!("column group {name}"),
            )?;
            if groups.iter().any(|x| x.name == name) {
                return Err(err(format!(
                    "column group {name} is declared twice (or is the reserved `default`)"
                )));
            }
            let mut cols = names(o.get("columns"), &format!("column group {name}"))?;
            for &c in &cols {
                if primary_key.contains(&c) {
                    return Err(err(format!(
                        "column group {name} names primary key column {} (the key holds it)",
                        columns[c].name
                    )));
                }
                if grouped[c] {
                    return Err(err(format!(
                        "column {} is in two column groups",
                        columns[c].name
                    )));
                }
                grouped[c] = true;
            }
            if cols.is_empty() {
                return Err(err(format!("column group {name} has no columns")));
            }
            cols.sort_unstable();
            groups.push(Group {
                name,
                columns: cols,
            });
        }
        groups[0].columns = (0..columns.len())
            .filter(|c| !grouped[*c] && !primary_key.contains(c))
            .collect();
        Ok(Schema {
            name,
            columns,
            primary_key,
            indexes,
            groups,
        })
    }

    /// The schema as JSON (what [`Schema::from_value`] reads back).
    pub fn to_json(&self) -> Json {
        let cols: Vec<Json> = self
            .columns
            .iter()
            .map(|c| {
                let mut o = Map::new();
                o.insert("name".into(), Json::from(c.name.clone()));
                o.insert("type".into(), Json::from(c.ty.name()));
                match c.ty {
                    ColumnType::FixedBytes(n) => {
                        o.insert("length".into(), Json::from(n));
                    }
                    ColumnType::Decimal { precision, scale } => {
                        o.insert("precision".into(), Json::from(precision));
                        o.insert("scale".into(), Json::from(scale));
                    }
                    _ => {}
                }
                if c.nullable {
                    o.insert("nullable".into(), Json::Bool(true));
                }
                Json::Object(o)
            })
            .collect();
        let names = |cols: &[usize]| -> Json {
            cols.iter()
                .map(|&c| Json::from(self.columns[c].name.clone()))
                .collect()
        };
        let indexes: Vec<Json> = self
            .indexes
            .iter()
            .map(|i| {
                serde_json::json!({"name": i.name, "columns": names(&i.columns), "unique": i.unique})
            })
            .collect();
        let groups: Vec<Json> = self.groups[1..]
            .iter()
            .map(|g| serde_json::json!({"name": g.name, "columns": names(&g.columns)}))
            .collect();
        serde_json::json!({
            "name": self.name,
            "columns": cols,
            "primary_key": names(&self.primary_key),
            "indexes": indexes,
            "column_groups": groups,
        })
    }

    /// The position of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// The index named `name`.
    pub fn index(&self, name: &str) -> Option<&Index> {
        self.indexes.iter().find(|i| i.name == name)
    }

    /// The group column `c` is stored in; `None` for a primary key column.
    pub fn group_of(&self, c: usize) -> Option<usize> {
        self.groups.iter().position(|g| g.columns.contains(&c))
    }

    /// Checks that `next` is this schema with changes that need no
    /// rewrite: nullable columns added (at the end, in any group), indexes
    /// added or dropped. Everything else is refused, naming the change.
    pub fn check_change(&self, next: &Schema) -> Result<()> {
        let refuse = |detail: String| Error::Unsupported {
            table: self.name.clone(),
            detail,
        };
        if next.name != self.name {
            return Err(refuse("a schema change cannot rename the table".into()));
        }
        if next.columns.len() < self.columns.len()
            || next.columns[..self.columns.len()] != self.columns[..]
        {
            return Err(refuse(
                "existing columns must stay as they are, in order (only new nullable columns may be added, at the end)"
                    .into(),
            ));
        }
        if let Some(c) = next.columns[self.columns.len()..]
            .iter()
            .find(|c| !c.nullable)
        {
            return Err(refuse(format!(
                "new column {} must be nullable (existing rows have no value for it)",
                c.name
            )));
        }
        if next.primary_key != self.primary_key {
            return Err(refuse("the primary key cannot change".into()));
        }
        for g in &self.groups {
            let kept = next.groups.iter().find(|n| n.name == g.name);
            if !kept.is_some_and(|n| n.columns.starts_with(&g.columns)) {
                return Err(refuse(format!(
                    "column group {} must keep its columns (a group's rows would need rewriting)",
                    g.name
                )));
            }
        }
        for i in &next.indexes {
            if let Some(old) = self.index(&i.name) {
                if old != i {
                    return Err(refuse(format!(
                        "index {} changed its definition: drop it and add it under a new name",
                        i.name
                    )));
                }
            }
        }
        Ok(())
    }
}

fn schema_error(table: &str, detail: impl std::fmt::Display) -> Error {
    Error::Schema {
        table: table.into(),
        detail: detail.to_string(),
    }
}

fn string_field(o: &Map<String, Json>, field: &str, table: &str) -> Result<String> {
    o.get(field)
        .and_then(Json::as_str)
        .map(str::to_string)
        .ok_or_else(|| schema_error(table, format!("`{field}` must be a string")))
}

fn known_fields(o: &Map<String, Json>, known: &[&str], table: &str, what: &str) -> Result<()> {
    match o.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(schema_error(
            table,
            format!("{what}: unknown field `{k}` (known: {})", known.join(", ")),
        )),
        None => Ok(()),
    }
}

fn check_name(name: &str, what: &str, table: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(schema_error(
            table,
            format!("{what} name {name:?} must be 1 to {MAX_NAME} characters of [A-Za-z0-9_]"),
        ))
    }
}

fn parse_column(c: &Json, i: usize, table: &str) -> Result<Column> {
    let o = c
        .as_object()
        .ok_or_else(|| schema_error(table, format!("column {i} is not an object")))?;
    let name = string_field(o, "name", table)?;
    check_name(&name, "column", table)?;
    let err = |d: String| schema_error(table, format!("column {name}: {d}"));
    let ty_name = o
        .get("type")
        .and_then(Json::as_str)
        .ok_or_else(|| err("`type` must be a string".into()))?;
    let number = |field: &str, range: std::ops::RangeInclusive<u64>| -> Result<u64> {
        o.get(field)
            .and_then(Json::as_u64)
            .filter(|n| range.contains(n))
            .ok_or_else(|| {
                err(format!(
                    "`{field}` must be an integer from {} to {}",
                    range.start(),
                    range.end()
                ))
            })
    };
    let mut fields = vec!["name", "type", "nullable"];
    let ty = match ty_name {
        "i8" => ColumnType::I8,
        "i16" => ColumnType::I16,
        "i32" => ColumnType::I32,
        "i64" => ColumnType::I64,
        "u8" => ColumnType::U8,
        "u16" => ColumnType::U16,
        "u32" => ColumnType::U32,
        "u64" => ColumnType::U64,
        "f64" => ColumnType::F64,
        "bool" => ColumnType::Bool,
        "string" => ColumnType::String,
        "bytes" => ColumnType::Bytes,
        "timestamp" => ColumnType::Timestamp,
        "uuid" => ColumnType::Uuid,
        "fixed_bytes" => {
            fields.push("length");
            ColumnType::FixedBytes(number("length", 1..=4096)? as u16)
        }
        "decimal" => {
            fields.push("precision");
            fields.push("scale");
            let precision = number("precision", 1..=38)? as u8;
            let scale = number("scale", 0..=u64::from(precision))? as u8;
            ColumnType::Decimal { precision, scale }
        }
        other => {
            return Err(err(format!(
                "unknown type `{other}` (known: i8, i16, i32, i64, u8, u16, u32, u64, f64, bool, fixed_bytes, string, bytes, timestamp, uuid, decimal)"
            )))
        }
    };
    known_fields(o, &fields, table, &format!("column {name}"))?;
    let nullable = match o.get("nullable") {
        None => false,
        Some(Json::Bool(b)) => *b,
        Some(_) => return Err(err("`nullable` is true or false".into())),
    };
    Ok(Column { name, ty, nullable })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = r#"{
        "name": "t",
        "columns": [
            {"name": "id", "type": "u32"},
            {"name": "name", "type": "string"},
            {"name": "size", "type": "u64", "nullable": true},
            {"name": "body", "type": "string", "nullable": true},
            {"name": "price", "type": "decimal", "precision": 10, "scale": 2, "nullable": true}
        ],
        "primary_key": ["id"],
        "indexes": [{"name": "by_name", "columns": ["name", "size"], "unique": true}],
        "column_groups": [{"name": "text", "columns": ["body"]}]
    }"#;

    #[test]
    fn parses_groups_indexes_and_round_trips() {
        let s = Schema::from_json(SCHEMA).expect("parses");
        assert_eq!(s.primary_key, vec![0]);
        assert_eq!(s.groups[0].name, "default");
        assert_eq!(s.groups[0].columns, vec![1, 2, 4]);
        assert_eq!(s.groups[1].columns, vec![3]);
        assert_eq!(s.group_of(0), None);
        assert_eq!(s.group_of(3), Some(1));
        assert_eq!(
            s.index("by_name").map(|i| i.columns.clone()),
            Some(vec![1, 2])
        );
        assert_eq!(Schema::from_value(&s.to_json()).expect("round trip"), s);
    }

    #[test]
    fn mistakes_are_named() {
        let bad = |text: &str, needle: &str| {
            let e = Schema::from_json(text).expect_err("refused").to_string();
            assert!(e.contains(needle), "{e} should mention {needle}");
        };
        let with = |from: &str, to: &str| SCHEMA.replace(from, to);
        bad(&with("\"u32\"", "\"int\""), "unknown type `int`");
        bad(&with("[\"id\"]", "[\"nope\"]"), "column nope");
        bad(&with("[\"id\"]", "[\"size\"]"), "cannot be nullable");
        bad(&with("\"body\"]", "\"id\"]"), "primary key column id");
        bad(
            &with(
                "\"body\"]}]",
                "\"body\"]}, {\"name\": \"more\", \"columns\": [\"body\"]}]",
            ),
            "two column groups",
        );
        bad(&with("\"precision\": 10", "\"precision\": 40"), "precision");
        bad(
            &with("\"unique\": true", "\"unique\": true, \"order\": \"desc\""),
            "unknown field `order`",
        );
        bad(
            &with("\"name\": \"t\"", "\"name\": \"t t\""),
            "[A-Za-z0-9_]",
        );
        bad("[]", "JSON object");
    }

    #[test]
    fn only_changes_without_a_rewrite_are_allowed() {
        let s = Schema::from_json(SCHEMA).expect("parses");
        let add_col = SCHEMA.replace(
            "\"nullable\": true}\n        ]",
            "\"nullable\": true},\n {\"name\": \"extra\", \"type\": \"i64\", \"nullable\": true}\n        ]",
        );
        let next = Schema::from_json(&add_col).expect("parses");
        s.check_change(&next)
            .expect("a nullable column may be added");
        let add_index = SCHEMA.replace(
            "\"unique\": true}]",
            "\"unique\": true}, {\"name\": \"by_size\", \"columns\": [\"size\"]}]",
        );
        s.check_change(&Schema::from_json(&add_index).expect("parses"))
            .expect("an index may be added");
        let not_null = add_col.replace("\"i64\", \"nullable\": true", "\"i64\"");
        let e = s.check_change(&Schema::from_json(&not_null).expect("parses"));
        assert!(matches!(e, Err(Error::Unsupported { .. })));
        let retyped = SCHEMA.replace("\"u64\"", "\"i64\"");
        let e = s.check_change(&Schema::from_json(&retyped).expect("parses"));
        assert!(matches!(e, Err(Error::Unsupported { .. })));
    }
}
