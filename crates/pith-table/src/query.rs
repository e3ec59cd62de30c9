//! Index queries: exact, prefix of a composite index, range with
//! inclusive or exclusive bounds, and regex over an index's first column
//! (a string) walked through the index family's tries; forward or
//! backward, with a limit; each at one snapshot. The primary key is an
//! index too, named [`PRIMARY`].
//!
//! A condition's values are a prefix of the index's columns (all of them
//! for [`Condition::Eq`] on a unique index, a point read). Keys encode
//! column by column (`keycode`), so "the first k columns equal v" is "the
//! key starts with enc(v)", and ranges over a prefix are ranges of keys:
//!
//! | bound | key range |
//! |---|---|
//! | from `Included(v)` | keys >= enc(v) |
//! | from `Excluded(v)` | keys >= successor(enc(v)) (past every key starting with it) |
//! | to `Included(v)` | keys < successor(enc(v)) |
//! | to `Excluded(v)` | keys < enc(v) |
//!
//! A regex `R` on a first string column is the engine's whole-key search
//! for `\x01(?:R)\x00\x01.*` (the column's encoding, then anything); since
//! `R` may match across the terminator, each hit's decoded column is
//! checked against `^(?:R)$` as well, so the result is exactly the rows
//! whose column matches, among strings without a NUL byte: a NUL is stored
//! escaped (`0x00 0xFF`), which the walk does not see through, so a string
//! holding one is never found by a regex. A backward regex query walks
//! every match.

use pith::Snapshot;

use crate::error::{Error, Result};
use crate::keycode;
use crate::schema::ColumnType;
use crate::table::Table;
use crate::value::Value;

/// The name that queries the primary key.
pub const PRIMARY: &str = "primary";

/// One side of a range.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyBound {
    /// No bound.
    Unbounded,
    /// Values of a prefix of the index's columns, included.
    Included(Vec<Value>),
    /// Values of a prefix of the index's columns, excluded.
    Excluded(Vec<Value>),
}

/// What rows an index query selects.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    /// Index columns equal to these values (all columns, or a prefix).
    Eq(Vec<Value>),
    /// The first columns equal to these values.
    Prefix(Vec<Value>),
    /// Keys between two bounds.
    Range(KeyBound, KeyBound),
    /// The first column (a string) fully matches this regex.
    Regex(String),
}

/// An index query.
#[derive(Clone, Debug)]
pub struct Query {
    /// The index's name, or [`PRIMARY`].
    pub index: String,
    /// Which rows.
    pub condition: Condition,
    /// Which columns to return (positions), in order.
    pub columns: Vec<usize>,
    /// At most this many rows.
    pub limit: Option<usize>,
    /// Descending index order.
    pub reverse: bool,
}

/// The index a query walks: its family, column types, and how an entry
/// gives the primary key.
struct Walk<'a> {
    family: &'a pith::ColumnFamily,
    types: Vec<ColumnType>,
    /// The entry's value is the primary key (a unique index).
    pk_in_value: bool,
    /// The key is the primary key (the primary "index").
    pk_is_key: bool,
}

impl Table {
    /// Rows selected by `q`: the columns asked for, in index order.
    pub fn query(&self, q: &Query) -> Result<Vec<Vec<Value>>> {
        self.check_columns(&q.columns)?;
        let snap = self.db.snapshot();
        let pks = self.matching_keys(&snap, &q.index, &q.condition, q.limit, q.reverse)?;
        let groups = self.groups_for(&q.columns);
        let mut out = Vec::with_capacity(pks.len());
        for pk in pks {
            let row =
                self.read_row(Some(&snap), &pk, &groups)?
                    .ok_or_else(|| Error::Inconsistent {
                        table: self.schema.name.clone(),
                        index: q.index.clone(),
                        detail: format!(
                            "an entry names row {}, which does not exist",
                            crate::table::escape(&pk)
                        ),
                    })?;
            out.push(q.columns.iter().map(|&c| row[c].clone()).collect());
        }
        Ok(out)
    }

    /// How many rows `condition` selects on `index` (no row is read).
    pub fn count(&self, index: &str, condition: &Condition) -> Result<u64> {
        let snap = self.db.snapshot();
        Ok(self
            .matching_keys(&snap, index, condition, None, false)?
            .len() as u64)
    }

    /// The primary keys (encoded) of the entries of `index` that
    /// `condition` selects, in index order (backward when `reverse`), at
    /// most `limit`.
    pub(crate) fn matching_keys(
        &self,
        snap: &Snapshot,
        index: &str,
        condition: &Condition,
        limit: Option<usize>,
        reverse: bool,
    ) -> Result<Vec<Vec<u8>>> {
        let walk = self.walk(index)?;
        let limit = limit.unwrap_or(usize::MAX);
        let error = |detail: String| Error::Query {
            table: self.schema.name.clone(),
            index: index.into(),
            detail,
        };
        let prefix_of = |values: &[Value]| -> Result<Vec<u8>> {
            if values.len() > walk.types.len() {
                return Err(error(format!(
                    "{} values for {} columns",
                    values.len(),
                    walk.types.len()
                )));
            }
            self.check_index_values(index, &walk.types, values)?;
            Ok(keycode::encode_all(values, &walk.types))
        };
        if let Condition::Regex(pattern) = condition {
            return self.regex_keys(snap, &walk, index, pattern, limit, reverse);
        }
        if let Condition::Eq(values) = condition {
            if walk.pk_in_value && values.len() == walk.types.len() {
                // A unique index's whole value: one point read.
                let key = prefix_of(values)?;
                let pk = self.db.get_cf_at(walk.family, snap, &key)?;
                return Ok(pk.into_iter().take(limit).collect());
            }
        }
        let (from, to) = match condition {
            Condition::Eq(values) | Condition::Prefix(values) => {
                let p = prefix_of(values)?;
                let end = pith_enc::prefix::successor(&p);
                (Some(p), end)
            }
            Condition::Range(lo, hi) => {
                let from = match lo {
                    KeyBound::Unbounded => None,
                    KeyBound::Included(v) => Some(prefix_of(v)?),
                    KeyBound::Excluded(v) => match pith_enc::prefix::successor(&prefix_of(v)?) {
                        Some(s) => Some(s),
                        None => return Ok(Vec::new()),
                    },
                };
                let to = match hi {
                    KeyBound::Unbounded => None,
                    KeyBound::Included(v) => pith_enc::prefix::successor(&prefix_of(v)?),
                    KeyBound::Excluded(v) => Some(prefix_of(v)?),
                };
                (from, to)
            }
            Condition::Regex(_) => (None, None),
        };
        let scan = self
            .db
            .range_cf_at(walk.family, snap, from.as_deref(), to.as_deref())?;
        let mut out = Vec::new();
        let mut take = |kv: pith::Result<(Vec<u8>, Vec<u8>)>| -> Result<bool> {
            let (k, v) = kv?;
            out.push(self.pk_of(&walk, index, k, v)?);
            Ok(out.len() < limit)
        };
        if limit == 0 {
            return Ok(out);
        }
        if reverse {
            for kv in scan.rev() {
                if !take(kv)? {
                    break;
                }
            }
        } else {
            for kv in scan {
                if !take(kv)? {
                    break;
                }
            }
        }
        Ok(out)
    }

    fn regex_keys(
        &self,
        snap: &Snapshot,
        walk: &Walk<'_>,
        index: &str,
        pattern: &str,
        limit: usize,
        reverse: bool,
    ) -> Result<Vec<Vec<u8>>> {
        let error = |detail: String| Error::Query {
            table: self.schema.name.clone(),
            index: index.into(),
            detail,
        };
        if walk.types.first() != Some(&ColumnType::String) {
            return Err(error(
                "a regex query needs a string as the index's first column".into(),
            ));
        }
        let exact = regex::Regex::new(&format!("^(?:{pattern})$"))
            .map_err(|e| error(format!("regex: {e}")))?;
        let whole = format!("(?-u:\\x01)(?:{pattern})(?s-u:\\x00\\x01.*)");
        let search = self.db.search_from_cf_at(walk.family, snap, &whole, b"")?;
        let mut out = Vec::new();
        for kv in search {
            let (k, v) = kv?;
            let mut rest = &k[..];
            let first = keycode::decode(&mut rest, ColumnType::String);
            let Some(Value::Text(text)) = first else {
                continue; // null, or not this column's encoding
            };
            if !exact.is_match(&text) {
                continue;
            }
            out.push(self.pk_of(walk, index, k, v)?);
            if !reverse && out.len() >= limit {
                break;
            }
        }
        if reverse {
            out.reverse();
            out.truncate(limit);
        }
        Ok(out)
    }

    /// The index named `index` (or the primary key) as a walk.
    fn walk(&self, index: &str) -> Result<Walk<'_>> {
        if index == PRIMARY {
            return Ok(Walk {
                family: &self.groups[0],
                types: self.pk_types(),
                pk_in_value: false,
                pk_is_key: true,
            });
        }
        let i = self
            .schema
            .indexes
            .iter()
            .position(|i| i.name == index)
            .ok_or_else(|| Error::Query {
                table: self.schema.name.clone(),
                index: index.into(),
                detail: "no such index".into(),
            })?;
        Ok(Walk {
            family: &self.indexes[i],
            types: self.index_types(i),
            pk_in_value: self.schema.indexes[i].unique,
            pk_is_key: false,
        })
    }

    /// The primary key an entry names.
    fn pk_of(&self, walk: &Walk<'_>, index: &str, key: Vec<u8>, value: Vec<u8>) -> Result<Vec<u8>> {
        if walk.pk_is_key {
            return Ok(key);
        }
        if walk.pk_in_value {
            return Ok(value);
        }
        let mut rest = &key[..];
        keycode::decode_all(&mut rest, &walk.types)
            .map(|_| rest.to_vec())
            .ok_or_else(|| self.corrupt(&format!("index {index}"), &key))
    }

    fn check_index_values(
        &self,
        index: &str,
        types: &[ColumnType],
        values: &[Value],
    ) -> Result<()> {
        let s = &self.schema;
        let columns: Vec<usize> = match s.index(index) {
            Some(ix) => ix.columns.clone(),
            None => s.primary_key.clone(),
        };
        for ((v, &c), _) in values.iter().zip(&columns).zip(types) {
            v.check(&s.columns[c]).map_err(|detail| Error::Query {
                table: s.name.clone(),
                index: index.into(),
                detail: format!("column {}: {detail}", s.columns[c].name),
            })?;
        }
        Ok(())
    }
}
