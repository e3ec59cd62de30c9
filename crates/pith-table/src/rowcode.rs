//! A column group's part of a row, as its family's value: no column
//! names (the schema has them), fixed-width columns packed.
//!
//! ```text
//! count varint            columns written (the group's, when written)
//! null bitmap             one bit per nullable column among them, LSB first,
//!                         ceil(nullable / 8) bytes; a set bit is a null
//! values                  each non-null column in group order:
//!                         fixed width: little-endian, the type's width
//!                         (signed: two's complement; f64: IEEE bits;
//!                         bool: 0 or 1; decimal: i128, 16 bytes);
//!                         string, bytes: length varint | bytes
//! ```
//!
//! A column added to the group later (nullable, at the end) is past
//! `count` in rows written before: it reads as null, so adding one needs
//! no rewrite. Decoding never panics; bytes that do not decode give
//! `None`. A string's bytes are checked to be UTF-8; when all are ASCII
//! (checked a word at a time) they are taken as they are, the crate's only
//! unsafe code: the standard UTF-8 check walks short strings a byte at a
//! time, 5% of a 100-row range of the Debian table's every column.

use std::borrow::Borrow;

use pith_enc::varint;

use crate::keycode::split;
use crate::schema::{Column, ColumnType};
use crate::value::Value;

/// Encodes one group's values (`values[i]` of `columns[i]`, in group
/// order), checked against their columns already.
pub fn encode<C: Borrow<Column>>(values: &[&Value], columns: &[C]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_with(&mut out, values.len(), |i| values[i], columns);
    out
}

/// [`encode`] of the values of `row` at `at` (column `at[i]` of the row is
/// `columns[i]` of the group), without gathering them first, appended to
/// `out`: a bulk load writes each row's groups straight into its
/// families' buffers.
pub fn encode_columns_into<C: Borrow<Column>>(
    out: &mut Vec<u8>,
    row: &[Value],
    at: &[usize],
    columns: &[C],
) {
    encode_with(out, at.len(), |i| &row[at[i]], columns)
}

/// Appends the encoding of `count` values, the `i`th `value(i)`, of
/// `columns` to `out`, reserving room for them at once.
fn encode_with<'v, C: Borrow<Column>>(
    out: &mut Vec<u8>,
    count: usize,
    value: impl Fn(usize) -> &'v Value,
    columns: &[C],
) {
    let n = count.min(columns.len());
    let ty = |i: usize| Borrow::<Column>::borrow(&columns[i]).ty;
    let nullable = |i: usize| Borrow::<Column>::borrow(&columns[i]).nullable;
    let nullables = (0..n).filter(|&i| nullable(i)).count();
    let size =
        10 + nullables.div_ceil(8) + (0..n).map(|i| encoded_len(value(i), ty(i))).sum::<usize>();
    out.reserve(size);
    varint::put(out, count as u64);
    let bitmap = out.len();
    out.resize(bitmap + nullables.div_ceil(8), 0);
    for (k, i) in (0..n).filter(|&i| nullable(i)).enumerate() {
        if matches!(value(i), Value::Null) {
            out[bitmap + k / 8] |= 1 << (k % 8);
        }
    }
    for i in 0..n {
        put(out, value(i), ty(i));
    }
}

/// Bytes [`put`] writes for `v` (at most: a varint is counted at its
/// longest).
fn encoded_len(v: &Value, ty: ColumnType) -> usize {
    let width = ty.fixed_width().unwrap_or(0);
    match v {
        Value::Null => 0,
        Value::Int(_) | Value::UInt(_) => width.min(8),
        Value::Float(_) => 8,
        Value::Bool(_) => 1,
        Value::Decimal(_) => 16,
        Value::Text(s) => 10 + s.len(),
        Value::Bytes(b) => 10 + b.len(),
    }
}

fn put(out: &mut Vec<u8>, v: &Value, ty: ColumnType) {
    let width = ty.fixed_width().unwrap_or(0);
    match v {
        Value::Null => {}
        Value::Int(n) => out.extend_from_slice(&n.to_le_bytes()[..width.min(8)]),
        Value::UInt(n) => out.extend_from_slice(&n.to_le_bytes()[..width.min(8)]),
        Value::Float(f) => out.extend_from_slice(&f.to_bits().to_le_bytes()),
        Value::Bool(b) => out.push(u8::from(*b)),
        Value::Decimal(d) => out.extend_from_slice(&d.to_le_bytes()),
        Value::Text(s) => {
            varint::put(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bytes(b) => {
            if ty.fixed_width().is_none() {
                varint::put(out, b.len() as u64);
            }
            out.extend_from_slice(b);
        }
    }
}

/// Decodes a group's values for its current `columns`; columns past the
/// stored count are null.
pub fn decode<C: Borrow<Column>>(b: &[u8], columns: &[C]) -> Option<Vec<Value>> {
    let mut out = vec![Value::Null; columns.len()];
    decode_each(b, columns, |i, v| out[i] = v)?;
    Some(out)
}

/// Decodes a group's values for its current `columns`, handing each
/// non-null one to `put` with its position in the group (no vector of
/// them is made); `None` when `b` is not a valid encoding, after which
/// some values may have been handed out already.
pub fn decode_each<C: Borrow<Column>>(
    b: &[u8],
    columns: &[C],
    put: impl FnMut(usize, Value),
) -> Option<()> {
    decode_some(b, columns, |_| true, put)
}

/// [`decode_each`] of only the columns `want` says yes to (by position in
/// the group): the others are stepped over, not decoded.
pub fn decode_some<C: Borrow<Column>>(
    b: &[u8],
    columns: &[C],
    want: impl Fn(usize) -> bool,
    mut put: impl FnMut(usize, Value),
) -> Option<()> {
    walk(b, columns, |i, ty, null, rest| match (null, want(i)) {
        (true, _) => Some(()),
        (false, true) => take(rest, ty).map(|v| put(i, v)),
        (false, false) => step(rest, ty),
    })
}

/// [`decode_some`] into values the caller keeps from row to row: each
/// column `i` of the group that `at(i)` places is written to
/// `row[at(i)]`, a null (or a column the encoding predates) as
/// [`Value::Null`], and a string or bytes value into the slot's own
/// buffer when it holds one, so a reused row allocates only where a value
/// outgrows the one before (a query's rows were two thirds allocation and
/// freeing, one string per column per row). `None` when `b` is not a
/// valid encoding, after which some slots may have been written.
pub fn decode_some_into<C: Borrow<Column>>(
    b: &[u8],
    columns: &[C],
    at: impl Fn(usize) -> Option<usize>,
    row: &mut [Value],
) -> Option<()> {
    walk(b, columns, |i, ty, null, rest| match (at(i), null) {
        (Some(p), true) => row.get_mut(p).map(|v| *v = Value::Null),
        (Some(p), false) => take_into(rest, ty, row.get_mut(p)?),
        (None, true) => Some(()),
        (None, false) => step(rest, ty),
    })
}

/// Calls `visit(i, type, null, rest)` for every column `i` of the group,
/// in order: `null` for a null and for a column the encoding predates,
/// else `rest` starts with its value, which `visit` must take or step
/// over. `None` when `b` is not a valid encoding or `visit` says so.
fn walk<C: Borrow<Column>>(
    b: &[u8],
    columns: &[C],
    mut visit: impl FnMut(usize, ColumnType, bool, &mut &[u8]) -> Option<()>,
) -> Option<()> {
    let (count, mut rest) = varint::get(b)?;
    let count = usize::try_from(count)
        .ok()
        .filter(|&n| n <= columns.len())?;
    let nullable = columns[..count]
        .iter()
        .filter(|c| Borrow::<Column>::borrow(*c).nullable)
        .count();
    let bitmap = rest.get(..nullable.div_ceil(8))?;
    rest = rest.get(nullable.div_ceil(8)..)?;
    let mut bit = 0;
    for (i, c) in columns.iter().enumerate() {
        let c = c.borrow();
        let mut null = i >= count;
        if !null && c.nullable {
            null = bitmap[bit / 8] >> (bit % 8) & 1 == 1;
            bit += 1;
        }
        visit(i, c.ty, null, &mut rest)?;
    }
    rest.is_empty().then_some(())
}

/// [`take`] into `slot`, reusing its string or bytes buffer.
fn take_into(b: &mut &[u8], ty: ColumnType, slot: &mut Value) -> Option<()> {
    match (ty, &mut *slot) {
        (ColumnType::String, Value::Text(text)) => {
            let raw = take_raw(b)?;
            let valid = if raw.is_ascii() {
                // SAFETY: bytes that are all ASCII are valid UTF-8.
                unsafe { std::str::from_utf8_unchecked(raw) }
            } else {
                std::str::from_utf8(raw).ok()?
            };
            text.clear();
            text.push_str(valid);
        }
        (ColumnType::Bytes, Value::Bytes(bytes)) => {
            let raw = take_raw(b)?;
            bytes.clear();
            bytes.extend_from_slice(raw);
        }
        (ColumnType::FixedBytes(_) | ColumnType::Uuid, Value::Bytes(bytes)) => {
            let raw = split(b, ty.fixed_width()?)?;
            bytes.clear();
            bytes.extend_from_slice(raw);
        }
        _ => *slot = take(b, ty)?,
    }
    Some(())
}

/// The bytes of a length-prefixed value at the front of `b`.
fn take_raw<'b>(b: &mut &'b [u8]) -> Option<&'b [u8]> {
    let (len, rest) = varint::get(b)?;
    *b = rest;
    split(b, usize::try_from(len).ok()?)
}

/// Steps over one non-null value of type `ty` at the front of `b`.
fn step(b: &mut &[u8], ty: ColumnType) -> Option<()> {
    match ty.fixed_width() {
        Some(width) => split(b, width).map(|_| ()),
        None => take_raw(b).map(|_| ()),
    }
}

fn take(b: &mut &[u8], ty: ColumnType) -> Option<Value> {
    Some(match ty {
        ColumnType::I8
        | ColumnType::I16
        | ColumnType::I32
        | ColumnType::I64
        | ColumnType::Timestamp => {
            let w = ty.fixed_width()?;
            let mut x = [0u8; 8];
            x[..w].copy_from_slice(split(b, w)?);
            let shift = 64 - 8 * w as u32;
            Value::Int((i64::from_le_bytes(x) << shift) >> shift)
        }
        ColumnType::U8 | ColumnType::U16 | ColumnType::U32 | ColumnType::U64 => {
            let w = ty.fixed_width()?;
            let mut x = [0u8; 8];
            x[..w].copy_from_slice(split(b, w)?);
            Value::UInt(u64::from_le_bytes(x))
        }
        ColumnType::F64 => Value::Float(f64::from_bits(u64::from_le_bytes(
            split(b, 8)?.try_into().ok()?,
        ))),
        ColumnType::Bool => match split(b, 1)?[0] {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            _ => return None,
        },
        ColumnType::Decimal { .. } => {
            Value::Decimal(i128::from_le_bytes(split(b, 16)?.try_into().ok()?))
        }
        ColumnType::FixedBytes(n) => Value::Bytes(split(b, usize::from(n))?.to_vec()),
        ColumnType::Uuid => Value::Bytes(split(b, 16)?.to_vec()),
        ColumnType::String | ColumnType::Bytes => {
            let raw = take_raw(b)?.to_vec();
            match ty {
                ColumnType::String => Value::Text(String::from_utf8(raw).ok()?),
                _ => Value::Bytes(raw),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, ty: ColumnType, nullable: bool) -> Column {
        Column {
            name: name.into(),
            ty,
            nullable,
        }
    }

    #[test]
    fn round_trip_with_nulls_and_a_column_added_later() {
        let cols = [
            col("a", ColumnType::I16, false),
            col("b", ColumnType::String, true),
            col(
                "c",
                ColumnType::Decimal {
                    precision: 20,
                    scale: 2,
                },
                true,
            ),
            col("d", ColumnType::FixedBytes(3), true),
            col("e", ColumnType::F64, false),
        ];
        let refs: Vec<&Column> = cols.iter().collect();
        let values = [
            Value::Int(-300),
            Value::Null,
            Value::Decimal(-12345),
            Value::Bytes(vec![1, 2, 3]),
            Value::Float(2.5),
        ];
        let b = encode(&values.iter().collect::<Vec<_>>(), &refs);
        // count, one bitmap byte, 2 + 16 + 3 + 8 bytes of values: no names.
        assert_eq!(b.len(), 1 + 1 + 2 + 16 + 3 + 8);
        assert_eq!(decode(&b, &refs), Some(values.to_vec()));
        let mut later = cols.to_vec();
        later.push(col("f", ColumnType::U32, true));
        let refs: Vec<&Column> = later.iter().collect();
        let mut expect = values.to_vec();
        expect.push(Value::Null);
        assert_eq!(decode(&b, &refs), Some(expect));
        for cut in 0..b.len() {
            assert_eq!(decode(&b[..cut], &refs[..5]), None, "cut at {cut}");
        }
    }

    /// Decoding into a reused row gives what decoding afresh gives:
    /// strings and bytes overwrite the buffers there (or replace values of
    /// another kind), nulls and columns the encoding predates clear what
    /// the row held, unplaced columns are stepped over and leave their
    /// slots alone, and a bad encoding is refused.
    #[test]
    fn decoding_into_a_reused_row_matches_a_fresh_decode() {
        let cols = vec![
            col("a", ColumnType::String, true),
            col("b", ColumnType::Bytes, false),
            col("c", ColumnType::I32, true),
            col("d", ColumnType::String, false),
            col("e", ColumnType::FixedBytes(3), true),
        ];
        let rows = [
            vec![
                Value::Text("first, and long".into()),
                Value::Bytes(vec![9; 40]),
                Value::Int(7),
                Value::Text("x".into()),
                Value::Bytes(vec![1, 2, 3]),
            ],
            vec![
                Value::Null,
                Value::Bytes(vec![1]),
                Value::Null,
                Value::Text("a longer one than before".into()),
                Value::Bytes(vec![4, 5, 6]),
            ],
            vec![
                Value::Text("é".into()),
                Value::Bytes(Vec::new()),
                Value::Int(-1),
                Value::Text(String::new()),
                Value::Null,
            ],
            vec![
                Value::Text("again".into()),
                Value::Bytes(vec![0; 3]),
                Value::Int(0),
                Value::Text("y".into()),
                Value::Bytes(vec![7, 8, 9]),
            ],
        ];
        // Output positions: column i at 4 - i, and a sixth slot nobody
        // writes.
        let at = |i: usize| Some(4 - i);
        let mut row = vec![Value::UInt(5); 6];
        for values in &rows {
            let b = encode(&values.iter().collect::<Vec<_>>(), &cols);
            decode_some_into(&b, &cols, at, &mut row).expect("decodes");
            let fresh = decode(&b, &cols).expect("decodes");
            let placed: Vec<Value> = (0..5).map(|i| row[4 - i].clone()).collect();
            assert_eq!(placed, fresh);
            assert_eq!(row[5], Value::UInt(5));
            for cut in 0..b.len() {
                assert_eq!(decode_some_into(&b[..cut], &cols, at, &mut row), None);
            }
        }
        // Only column 2 placed; a column added after the encoding is null.
        let b = encode(&rows[0][..3].iter().collect::<Vec<_>>(), &cols[..3]);
        let mut row = vec![Value::Int(0), Value::Text("stale".into())];
        let only = |i: usize| match i {
            2 => Some(0),
            3 => Some(1),
            _ => None,
        };
        decode_some_into(&b, &cols, only, &mut row).expect("decodes");
        assert_eq!(row, vec![Value::Int(7), Value::Null]);
    }

    /// A group's values taken from a whole row in place encode as the
    /// same values gathered first: nulls among nullable and non-nullable
    /// columns, fixed and variable widths, more than eight nullable
    /// columns (a second bitmap byte).
    #[test]
    fn columns_of_a_row_encode_as_the_gathered_values() {
        let mut cols = vec![
            col("a", ColumnType::I64, false),
            col("b", ColumnType::String, true),
            col("c", ColumnType::Bool, true),
            col("d", ColumnType::Bytes, false),
        ];
        for i in 0..9 {
            cols.push(col(&format!("n{i}"), ColumnType::U8, true));
        }
        let row: Vec<Value> = (0..cols.len() + 3)
            .map(|i| match i % 5 {
                0 => Value::Int(i as i64 - 7),
                1 => Value::Text("x".repeat(i * 40)),
                2 => Value::Null,
                3 => Value::Bytes(vec![i as u8; i]),
                _ => Value::UInt(i as u64),
            })
            .collect();
        // The group's columns sit at scattered places in the row.
        let at: Vec<usize> = (0..cols.len()).map(|i| (i * 7 + 3) % row.len()).collect();
        let gathered: Vec<&Value> = at.iter().map(|&c| &row[c]).collect();
        let mut alone = Vec::new();
        encode_columns_into(&mut alone, &row, &at, &cols);
        assert_eq!(alone, encode(&gathered, &cols));
        // Appended after what a buffer holds, the same bytes.
        let mut appended = b"before".to_vec();
        encode_columns_into(&mut appended, &row, &at, &cols);
        assert_eq!(appended[6..], encode(&gathered, &cols)[..]);
    }
}
