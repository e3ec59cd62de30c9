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
    /// The index's columns (positions) and their types.
    columns: Vec<usize>,
    types: Vec<ColumnType>,
    /// The entry's value is the primary key (a unique index).
    pk_in_value: bool,
    /// The key is the primary key (the primary "index").
    pk_is_key: bool,
}

/// True when an index key's first column (a string) fully matches
/// `exact` (the walk's pattern may match across the column's end).
fn regex_hit(key: &[u8], exact: &regex::Regex) -> bool {
    let mut rest = key;
    matches!(keycode::decode(&mut rest, ColumnType::String), Some(Value::Text(t)) if exact.is_match(&t))
}

/// Where a condition's entries lie in the index family: a key range, or a
/// regex search, or one point (a unique index's whole value).
enum Span {
    Range(Option<Vec<u8>>, Option<Vec<u8>>),
    Point(Vec<u8>),
    Regex(String, regex::Regex),
    Empty,
}

impl Table {
    /// Rows selected by `q`: the columns asked for, in index order. When
    /// every column asked for is in the index entry (its columns and the
    /// primary key), no row is read (a covering index).
    pub fn query(&self, q: &Query) -> Result<Vec<Vec<Value>>> {
        self.check_columns(&q.columns)?;
        let snap = self.db.snapshot();
        let walk = self.walk(&q.index)?;
        let span = self.span(&walk, &q.index, &q.condition)?;
        let entries = self.entries(&snap, &walk, &q.index, span, q.limit, q.reverse)?;
        let s = &self.schema;
        let in_entry = |c: &usize| walk.columns.contains(c) || s.primary_key.contains(c);
        if q.columns.iter().all(in_entry) {
            return entries
                .into_iter()
                .map(|(key, pk)| self.entry_values(&walk, &q.index, &q.columns, &key, &pk))
                .collect();
        }
        let groups = self.groups_for(&q.columns);
        let mut out = Vec::with_capacity(entries.len());
        for (_, pk) in entries {
            let row =
                self.read_row(Some(&snap), &pk, &groups)?
                    .ok_or_else(|| Error::Inconsistent {
                        table: s.name.clone(),
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

    /// How many rows `condition` selects on `index`: entries are counted,
    /// no row is read and no value decoded; on a settled index family an
    /// exact, prefix or range count is two trie seeks (key ranks), however
    /// many rows it counts.
    pub fn count(&self, index: &str, condition: &Condition) -> Result<u64> {
        let snap = self.db.snapshot();
        let walk = self.walk(index)?;
        let mut n = 0;
        match self.span(&walk, index, condition)? {
            Span::Empty => {}
            Span::Point(key) => {
                n = u64::from(self.db.get_cf_at(walk.family, &snap, &key)?.is_some())
            }
            Span::Range(from, to) => {
                // Two trie ranks when the family is settled, else a walk.
                n = self.db.count_range_cf_at(
                    walk.family,
                    &snap,
                    from.as_deref(),
                    to.as_deref(),
                )?;
            }
            Span::Regex(whole, exact) => {
                for k in self
                    .db
                    .search_from_cf_at(walk.family, &snap, &whole, b"")?
                    .keys()
                {
                    n += u64::from(regex_hit(&k?, &exact));
                }
            }
        }
        Ok(n)
    }

    /// Where `condition`'s entries lie in `walk`'s family.
    fn span(&self, walk: &Walk<'_>, index: &str, condition: &Condition) -> Result<Span> {
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
            self.check_index_values(walk, index, values)?;
            Ok(keycode::encode_all(values, &walk.types))
        };
        Ok(match condition {
            Condition::Regex(pattern) => {
                if walk.types.first() != Some(&ColumnType::String) {
                    return Err(error(
                        "a regex query needs a string as the index's first column".into(),
                    ));
                }
                let exact = regex::Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| error(format!("regex: {e}")))?;
                Span::Regex(
                    format!("(?-u:\\x01)(?:{pattern})(?s-u:\\x00\\x01.*)"),
                    exact,
                )
            }
            Condition::Eq(values) if walk.pk_in_value && values.len() == walk.types.len() => {
                // A unique index's whole value: one point read.
                Span::Point(prefix_of(values)?)
            }
            Condition::Eq(values) | Condition::Prefix(values) => {
                let p = prefix_of(values)?;
                let end = pith_enc::prefix::successor(&p);
                Span::Range(Some(p), end)
            }
            Condition::Range(lo, hi) => {
                let from = match lo {
                    KeyBound::Unbounded => None,
                    KeyBound::Included(v) => Some(prefix_of(v)?),
                    KeyBound::Excluded(v) => match pith_enc::prefix::successor(&prefix_of(v)?) {
                        Some(s) => Some(s),
                        None => return Ok(Span::Empty),
                    },
                };
                let to = match hi {
                    KeyBound::Unbounded => None,
                    KeyBound::Included(v) => pith_enc::prefix::successor(&prefix_of(v)?),
                    KeyBound::Excluded(v) => Some(prefix_of(v)?),
                };
                Span::Range(from, to)
            }
        })
    }

    /// The entries (index key, primary key) in `span`, in index order
    /// (backward when `reverse`), at most `limit`.
    fn entries(
        &self,
        snap: &Snapshot,
        walk: &Walk<'_>,
        index: &str,
        span: Span,
        limit: Option<usize>,
        reverse: bool,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let limit = limit.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        match span {
            Span::Empty => {}
            Span::Point(key) => {
                if let Some(v) = self.db.get_cf_at(walk.family, snap, &key)? {
                    let pk = self.pk_of(walk, index, &key, v)?;
                    out.push((key, pk));
                }
            }
            Span::Range(from, to) => {
                let scan =
                    self.db
                        .range_cf_at(walk.family, snap, from.as_deref(), to.as_deref())?;
                let mut take = |kv: pith::Result<(Vec<u8>, Vec<u8>)>| -> Result<bool> {
                    let (k, v) = kv?;
                    let pk = self.pk_of(walk, index, &k, v)?;
                    out.push((k, pk));
                    Ok(out.len() < limit)
                };
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
            }
            Span::Regex(whole, exact) => {
                for kv in self.db.search_from_cf_at(walk.family, snap, &whole, b"")? {
                    let (k, v) = kv?;
                    if !regex_hit(&k, &exact) {
                        continue;
                    }
                    let pk = self.pk_of(walk, index, &k, v)?;
                    out.push((k, pk));
                    if !reverse && out.len() >= limit {
                        break;
                    }
                }
                if reverse {
                    out.reverse();
                    out.truncate(limit);
                }
            }
        }
        Ok(out)
    }

    /// The values of `columns` (index or primary key columns) from an
    /// entry's key and primary key.
    fn entry_values(
        &self,
        walk: &Walk<'_>,
        index: &str,
        columns: &[usize],
        key: &[u8],
        pk: &[u8],
    ) -> Result<Vec<Value>> {
        let s = &self.schema;
        // Only the index columns asked for are decoded.
        let mut index_values = Vec::with_capacity(walk.types.len());
        let mut rest = key;
        for (&c, &ty) in walk.columns.iter().zip(&walk.types) {
            let bad = || self.corrupt(&format!("index {index}"), key);
            if columns.contains(&c) {
                index_values.push(keycode::decode(&mut rest, ty).ok_or_else(bad)?);
            } else {
                keycode::skip(&mut rest, ty).ok_or_else(bad)?;
                index_values.push(Value::Null);
            }
        }
        let mut rest = pk;
        let pk_values = keycode::decode_all(&mut rest, &self.pk_types())
            .ok_or_else(|| self.corrupt("primary key", pk))?;
        Ok(columns
            .iter()
            .map(|c| match walk.columns.iter().position(|x| x == c) {
                Some(i) => index_values[i].clone(),
                None => s
                    .primary_key
                    .iter()
                    .position(|x| x == c)
                    .map_or(Value::Null, |i| pk_values[i].clone()),
            })
            .collect())
    }

    /// The index named `index` (or the primary key) as a walk.
    fn walk(&self, index: &str) -> Result<Walk<'_>> {
        if index == PRIMARY {
            return Ok(Walk {
                family: &self.groups[0],
                columns: self.schema.primary_key.clone(),
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
            columns: self.schema.indexes[i].columns.clone(),
            types: self.index_types(i),
            pk_in_value: self.schema.indexes[i].unique,
            pk_is_key: false,
        })
    }

    /// The primary key an entry names.
    fn pk_of(&self, walk: &Walk<'_>, index: &str, key: &[u8], value: Vec<u8>) -> Result<Vec<u8>> {
        if walk.pk_is_key {
            return Ok(key.to_vec());
        }
        if walk.pk_in_value {
            return Ok(value);
        }
        let mut rest = key;
        for &ty in &walk.types {
            keycode::skip(&mut rest, ty)
                .ok_or_else(|| self.corrupt(&format!("index {index}"), key))?;
        }
        Ok(rest.to_vec())
    }

    fn check_index_values(&self, walk: &Walk<'_>, index: &str, values: &[Value]) -> Result<()> {
        let s = &self.schema;
        for (v, &c) in values.iter().zip(&walk.columns) {
            v.check(&s.columns[c]).map_err(|detail| Error::Query {
                table: s.name.clone(),
                index: index.into(),
                detail: format!("column {}: {detail}", s.columns[c].name),
            })?;
        }
        Ok(())
    }
}
