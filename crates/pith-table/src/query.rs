//! Index queries: exact, prefix of a composite index, range with
//! inclusive or exclusive bounds, and regex over an index's first column
//! (a string) walked through the index family's tries; forward or
//! backward, with a limit; each at one snapshot. The primary key is an
//! index too, named [`PRIMARY`].
//!
//! A condition's values are a prefix of the index's columns (all of them
//! for [`Condition::Eq`] on a unique index: a point read, or, with a null
//! among them, a walk of the prefix). Keys encode
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

use std::borrow::Cow;

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
    columns: &'a [usize],
    types: &'a [ColumnType],
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

/// What `each_entry` calls with an entry's index key and primary key;
/// `false` stops the walk.
type EntryVisit<'a> = dyn FnMut(&[u8], &[u8]) -> Result<bool> + 'a;

/// Where a condition's entries lie in the index family: a key range, or a
/// regex search, or one point (a unique index's whole value).
enum Span {
    /// Keys in `[from, to)`; `pk_at` is set when every key in it starts
    /// with the same values of all the index's columns, this many bytes
    /// long: the primary key of a non-unique entry starts there.
    Range {
        from: Option<Vec<u8>>,
        to: Option<Vec<u8>>,
        pk_at: Option<usize>,
    },
    Point(Vec<u8>),
    Regex(String, regex::Regex),
    Empty,
}

impl Table {
    /// Rows selected by `q`: the columns asked for, in index order. When
    /// every column asked for is in the index entry (its columns and the
    /// primary key), no row is read (a covering index).
    pub fn query(&self, q: &Query) -> Result<Vec<Vec<Value>>> {
        let mut out = Vec::with_capacity(q.limit.unwrap_or(0).min(1024));
        self.query_rows(q, &mut |row| {
            out.push(row.into_owned());
            true
        })?;
        Ok(out)
    }

    /// [`Table::query`] without collecting: `visit` is called with each
    /// row in index order (a buffer reused from row to row when the index
    /// covers the columns), so a large result never sits in memory whole;
    /// when it returns `false` the query stops. Returns how many rows were
    /// visited.
    pub fn query_each(&self, q: &Query, mut visit: impl FnMut(&[Value]) -> bool) -> Result<u64> {
        let mut n = 0;
        self.query_rows(q, &mut |row| {
            n += 1;
            visit(&row)
        })?;
        Ok(n)
    }

    /// Runs `q`, lending each row (borrowed from a reused buffer when the
    /// index covers the columns, owned when it was read from the groups)
    /// until `visit` returns `false`.
    fn query_rows(&self, q: &Query, visit: &mut dyn FnMut(Cow<'_, [Value]>) -> bool) -> Result<()> {
        self.check_columns(&q.columns)?;
        let snap = self.db.snapshot();
        let walk = self.walk(&q.index)?;
        let span = self.span(&walk, &q.index, &q.condition)?;
        let s = &self.schema;
        let in_entry = |c: &usize| walk.columns.contains(c) || s.primary_key.contains(c);
        if q.columns.iter().all(in_entry) {
            let plan = EntryPlan::new(&walk, &s.primary_key, &q.columns);
            let mut row = Vec::with_capacity(q.columns.len());
            return self.each_entry(
                &snap,
                &walk,
                &q.index,
                span,
                q.limit,
                q.reverse,
                &mut |key, pk| {
                    plan.values_into(self, &walk, &q.index, key, pk, &mut row)?;
                    Ok(visit(Cow::Borrowed(&row)))
                },
            );
        }
        // Rows are read a chunk of entries at a time (one multi-get each,
        // all at the query's snapshot), so a large result is never read
        // whole and a stop saves the rest: a chunk's groups are all read
        // before its first row is handed out. Without a limit the first
        // chunk is small, for a caller that stops early, and they double.
        const CHUNK: usize = 1024;
        let mut chunk = q.limit.map_or(64, |l| l.clamp(1, CHUNK));
        // The chunk's primary keys, end to end, and where each ends.
        let (mut pk_bytes, mut pk_ends): (Vec<u8>, Vec<usize>) = (Vec::new(), Vec::new());
        let mut go_on = true;
        let mut read_chunk = |pk_bytes: &mut Vec<u8>, pk_ends: &mut Vec<usize>| -> Result<bool> {
            let mut go_on = true;
            let pks: Vec<&[u8]> = pk_ends
                .iter()
                .scan(0, |start, &end| {
                    let pk = &pk_bytes[*start..end];
                    *start = end;
                    Some(pk)
                })
                .collect();
            self.rows_each(&snap, &pks, &q.columns, &mut |r, row| {
                let row = row.ok_or_else(|| Error::Inconsistent {
                    table: s.name.clone(),
                    index: q.index.clone(),
                    detail: format!(
                        "an entry names row {}, which does not exist",
                        crate::table::escape(pks[r])
                    ),
                })?;
                go_on = visit(Cow::Borrowed(row));
                Ok(go_on)
            })?;
            pk_bytes.clear();
            pk_ends.clear();
            Ok(go_on)
        };
        self.each_entry(
            &snap,
            &walk,
            &q.index,
            span,
            q.limit,
            q.reverse,
            &mut |_, pk| {
                pk_bytes.extend_from_slice(pk);
                pk_ends.push(pk_bytes.len());
                if pk_ends.len() == chunk {
                    go_on = read_chunk(&mut pk_bytes, &mut pk_ends)?;
                    chunk = (chunk * 2).min(CHUNK);
                }
                Ok(go_on)
            },
        )?;
        if go_on {
            read_chunk(&mut pk_bytes, &mut pk_ends)?;
        }
        Ok(())
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
            Span::Range { from, to, .. } => {
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
            Ok(keycode::encode_all(values, walk.types))
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
            Condition::Eq(values)
                if walk.pk_in_value
                    && values.len() == walk.types.len()
                    && !values.contains(&Value::Null) =>
            {
                // A unique index's whole value: one point read. (With a
                // null, any number of rows: their keys end with their
                // primary keys, and the prefix walk below finds them.)
                Span::Point(prefix_of(values)?)
            }
            Condition::Eq(values) | Condition::Prefix(values) => {
                let p = prefix_of(values)?;
                let pk_at = (values.len() == walk.types.len()).then_some(p.len());
                Span::Range {
                    to: pith_enc::prefix::successor(&p),
                    from: Some(p),
                    pk_at,
                }
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
                Span::Range {
                    from,
                    to,
                    pk_at: None,
                }
            }
        })
    }

    /// Calls `visit` with each entry (index key, primary key) in `span`,
    /// in index order (backward when `reverse`), at most `limit`. A range's
    /// entries are lent by the engine's walk, not copied.
    #[allow(clippy::too_many_arguments)]
    fn each_entry(
        &self,
        snap: &Snapshot,
        walk: &Walk<'_>,
        index: &str,
        span: Span,
        limit: Option<usize>,
        reverse: bool,
        visit: &mut EntryVisit<'_>,
    ) -> Result<()> {
        let limit = limit.unwrap_or(usize::MAX);
        if limit == 0 {
            return Ok(());
        }
        match span {
            Span::Empty => {}
            Span::Point(key) => {
                if let Some(v) = self.db.get_cf_at(walk.family, snap, &key)? {
                    // One entry: whether to go on does not matter.
                    let _ = visit(&key, self.pk_of(walk, index, &key, &v)?)?;
                }
            }
            Span::Range { from, to, pk_at } => {
                let (mut n, mut failed) = (0, None);
                let mut each = |key: &[u8], value: &[u8]| {
                    let pk = match pk_at {
                        // Past the values every key here starts with.
                        Some(at) if !walk.pk_is_key && !walk.pk_in_value => {
                            Ok(key.get(at..).unwrap_or_default())
                        }
                        _ => self.pk_of(walk, index, key, value),
                    };
                    match pk.and_then(|pk| visit(key, pk)) {
                        Ok(true) => {}
                        Ok(false) => return false,
                        Err(e) => {
                            failed = Some(e);
                            return false;
                        }
                    }
                    n += 1;
                    n < limit
                };
                let (from, to) = (from.as_deref(), to.as_deref());
                match walk.pk_in_value {
                    // A unique index: the value is the primary key.
                    true => {
                        self.db
                            .for_each_cf_at(walk.family, snap, from, to, reverse, &mut each)?
                    }
                    // The keys hold everything: walked without values,
                    // straight from the trie when the family is settled.
                    false => self.db.for_each_key_cf_at(
                        walk.family,
                        snap,
                        from,
                        to,
                        reverse,
                        &mut |key| each(key, &[]),
                    )?,
                }
                if let Some(e) = failed {
                    return Err(e);
                }
            }
            Span::Regex(whole, exact) => {
                // Backward: every match is walked (forward), then visited
                // from the last.
                let mut hits = Vec::new();
                let mut n = 0;
                for kv in self.db.search_from_cf_at(walk.family, snap, &whole, b"")? {
                    let (k, v) = kv?;
                    if !regex_hit(&k, &exact) {
                        continue;
                    }
                    if reverse {
                        hits.push((k, v));
                        continue;
                    }
                    n += 1;
                    if !visit(&k, self.pk_of(walk, index, &k, &v)?)? || n >= limit {
                        return Ok(());
                    }
                }
                if reverse {
                    for (k, v) in hits.iter().rev().take(limit) {
                        if !visit(k, self.pk_of(walk, index, k, v)?)? {
                            break;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The index named `index` (or the primary key) as a walk.
    fn walk(&self, index: &str) -> Result<Walk<'_>> {
        if index == PRIMARY {
            return Ok(Walk {
                family: &self.groups[0],
                columns: &self.schema.primary_key,
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
        if let Some(b) = &self.build {
            b.check(index)?;
        }
        Ok(Walk {
            family: &self.indexes[i],
            columns: &self.schema.indexes[i].columns,
            types: self.index_types(i),
            pk_in_value: self.schema.indexes[i].unique,
            pk_is_key: false,
        })
    }

    /// The primary key an entry (its key and value) names.
    fn pk_of<'k>(
        &self,
        walk: &Walk<'_>,
        index: &str,
        key: &'k [u8],
        value: &'k [u8],
    ) -> Result<&'k [u8]> {
        if walk.pk_is_key {
            return Ok(key);
        }
        if walk.pk_in_value {
            return Ok(value);
        }
        let mut rest = key;
        for &ty in walk.types {
            keycode::skip(&mut rest, ty)
                .ok_or_else(|| self.corrupt(&format!("index {index}"), key))?;
        }
        Ok(rest)
    }

    fn check_index_values(&self, walk: &Walk<'_>, index: &str, values: &[Value]) -> Result<()> {
        let s = &self.schema;
        for (v, &c) in values.iter().zip(walk.columns) {
            v.check(&s.columns[c]).map_err(|detail| Error::Query {
                table: s.name.clone(),
                index: index.into(),
                detail: format!("column {}: {detail}", s.columns[c].name),
            })?;
        }
        Ok(())
    }
}

/// Where a covering query's columns come from in an index entry: for
/// each of the index's key columns and each primary key column, the
/// output positions it fills (none: skipped, not decoded).
struct EntryPlan {
    from_index: Vec<Vec<usize>>,
    from_pk: Vec<Vec<usize>>,
    width: usize,
    /// The values decoded, in entry order, are the columns asked for, in
    /// order, each once (as for the primary key of an index entry): they
    /// are pushed as they come.
    in_order: bool,
}

impl EntryPlan {
    fn new(walk: &Walk<'_>, primary_key: &[usize], columns: &[usize]) -> EntryPlan {
        let mut from_index = vec![Vec::new(); walk.columns.len()];
        let mut from_pk = vec![Vec::new(); primary_key.len()];
        for (at, c) in columns.iter().enumerate() {
            // A column of both is taken from the index part.
            if let Some(i) = walk.columns.iter().position(|x| x == c) {
                from_index[i].push(at);
            } else if let Some(i) = primary_key.iter().position(|x| x == c) {
                from_pk[i].push(at);
            }
        }
        // Nothing past the last column wanted is decoded.
        for v in [&mut from_index, &mut from_pk] {
            let wanted = v.iter().rposition(|t| !t.is_empty()).map_or(0, |i| i + 1);
            v.truncate(wanted);
        }
        let order: Vec<&Vec<usize>> = from_index.iter().chain(&from_pk).collect();
        let mut next = 0;
        let in_order = order.iter().all(|to| match to.as_slice() {
            [] => true,
            [at] if *at == next => {
                next += 1;
                true
            }
            _ => false,
        }) && next == columns.len();
        EntryPlan {
            from_index,
            from_pk,
            width: columns.len(),
            in_order,
        }
    }

    /// The columns asked for, from an entry's key and primary key, into
    /// `out` (what it held is replaced).
    fn values_into(
        &self,
        t: &Table,
        walk: &Walk<'_>,
        index: &str,
        key: &[u8],
        pk: &[u8],
        out: &mut Vec<Value>,
    ) -> Result<()> {
        out.clear();
        if !self.in_order {
            out.resize(self.width, Value::Null);
        }
        let parts = [
            (&self.from_index, walk.types, key, true),
            (&self.from_pk, t.pk_types(), pk, false),
        ];
        for (targets, types, bytes, in_index) in parts {
            let mut rest = bytes;
            for (to, &ty) in targets.iter().zip(types) {
                let bad = || match in_index {
                    true => t.corrupt(&format!("index {index}"), bytes),
                    false => t.corrupt("primary key", bytes),
                };
                let Some((&last, others)) = to.split_last() else {
                    keycode::skip(&mut rest, ty).ok_or_else(bad)?;
                    continue;
                };
                let v = keycode::decode(&mut rest, ty).ok_or_else(bad)?;
                if self.in_order {
                    out.push(v);
                    continue;
                }
                for &at in others {
                    out[at] = v.clone();
                }
                out[last] = v;
            }
        }
        Ok(())
    }
}
