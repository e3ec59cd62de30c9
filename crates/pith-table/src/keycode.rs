//! Order-preserving ("memcomparable") encodings of typed values, for keys:
//! the bytes of two values compare as the values do, so the engine's byte
//! order is the typed order of integers (signed too), floats, decimals,
//! text, and of composite keys column by column.
//!
//! Each value starts with a tag: `0x00` null (so nulls sort first),
//! `0x01` a value, which follows:
//!
//! * unsigned integers: big-endian, the column's width;
//! * signed integers, timestamps and decimals: big-endian two's
//!   complement, the column's width (16 bytes for decimals), sign bit
//!   flipped;
//! * `f64`: the IEEE bits big-endian, all flipped for negatives and only
//!   the sign bit for the rest (`-0.0` is stored as `0.0`);
//! * `bool`: one byte, 0 or 1;
//! * `fixed_bytes` and `uuid`: the bytes;
//! * `string` and `bytes`: the bytes with each `0x00` written `0x00 0xFF`,
//!   then `0x00 0x01`. So a value is self-delimiting and a prefix sorts
//!   first.
//!
//! Decoding never panics: bytes that do not decode give `None`.

use crate::schema::ColumnType;
use crate::value::Value;

const NULL: u8 = 0x00;
const PRESENT: u8 = 0x01;

/// Appends the encoding of `v`, a value of type `ty`, to `out`.
pub fn encode(out: &mut Vec<u8>, v: &Value, ty: ColumnType) {
    // An integer's width: the column's (8 for a type that has none, which
    // a checked value never meets).
    let width = ty
        .fixed_width()
        .filter(|w| (1..=8).contains(w))
        .unwrap_or(8);
    match v {
        Value::Null => out.push(NULL),
        Value::Int(n) => {
            out.push(PRESENT);
            let flipped = (*n as u64) ^ (1 << 63);
            // The low `width` bytes of the sign-flipped value keep the
            // order when the value fits the width: shift the flip down.
            let shifted = match width {
                8 => flipped,
                w => ((*n as u64) ^ (1 << (8 * w - 1))) & ((1u64 << (8 * w)) - 1),
            };
            out.extend_from_slice(&shifted.to_be_bytes()[8 - width..]);
        }
        Value::UInt(n) => {
            out.push(PRESENT);
            out.extend_from_slice(&n.to_be_bytes()[8 - width..]);
        }
        Value::Float(f) => {
            out.push(PRESENT);
            let f = if *f == 0.0 { 0.0 } else { *f };
            let bits = f.to_bits();
            let ordered = if bits >> 63 == 1 {
                !bits
            } else {
                bits ^ (1 << 63)
            };
            out.extend_from_slice(&ordered.to_be_bytes());
        }
        Value::Bool(b) => {
            out.push(PRESENT);
            out.push(u8::from(*b));
        }
        Value::Decimal(d) => {
            out.push(PRESENT);
            out.extend_from_slice(&((*d as u128) ^ (1 << 127)).to_be_bytes());
        }
        Value::Text(_) | Value::Bytes(_) => {
            out.push(PRESENT);
            let bytes = match v {
                Value::Text(s) => s.as_bytes(),
                Value::Bytes(b) => b,
                _ => &[],
            };
            if ty.fixed_width().is_some() {
                out.extend_from_slice(bytes);
                return;
            }
            for &b in bytes {
                out.push(b);
                if b == 0 {
                    out.push(0xFF);
                }
            }
            out.extend_from_slice(&[0x00, 0x01]);
        }
    }
}

/// The first `n` bytes of `b`, advancing it (rows use it too).
pub(crate) fn split<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, rest) = (b.get(..n)?, b.get(n..)?);
    *b = rest;
    Some(head)
}

/// Decodes one value of type `ty` from the front of `b`, advancing it.
pub fn decode(b: &mut &[u8], ty: ColumnType) -> Option<Value> {
    let (&tag, rest) = b.split_first()?;
    *b = rest;
    if tag == NULL {
        return Some(Value::Null);
    }
    if tag != PRESENT {
        return None;
    }
    Some(match ty {
        ColumnType::U8 | ColumnType::U16 | ColumnType::U32 | ColumnType::U64 => {
            let w = ty.fixed_width()?;
            let mut x = [0u8; 8];
            x[8 - w..].copy_from_slice(split(b, w)?);
            Value::UInt(u64::from_be_bytes(x))
        }
        ColumnType::I8
        | ColumnType::I16
        | ColumnType::I32
        | ColumnType::I64
        | ColumnType::Timestamp => {
            let w = ty.fixed_width()?;
            let mut x = [0u8; 8];
            x[8 - w..].copy_from_slice(split(b, w)?);
            let u = u64::from_be_bytes(x) ^ (1 << (8 * w - 1));
            // Sign-extend from the column's width.
            let shift = 64 - 8 * w as u32;
            Value::Int(((u << shift) as i64) >> shift)
        }
        ColumnType::F64 => {
            let x = u64::from_be_bytes(split(b, 8)?.try_into().ok()?);
            let bits = if x >> 63 == 1 { x ^ (1 << 63) } else { !x };
            Value::Float(f64::from_bits(bits))
        }
        ColumnType::Bool => match split(b, 1)?[0] {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            _ => return None,
        },
        ColumnType::Decimal { .. } => {
            let x = u128::from_be_bytes(split(b, 16)?.try_into().ok()?);
            Value::Decimal((x ^ (1 << 127)) as i128)
        }
        ColumnType::FixedBytes(n) => Value::Bytes(split(b, usize::from(n))?.to_vec()),
        ColumnType::Uuid => Value::Bytes(split(b, 16)?.to_vec()),
        ColumnType::String | ColumnType::Bytes => {
            let mut out = Vec::new();
            // Runs between escapes are copied whole.
            loop {
                let zero = b.iter().position(|&c| c == 0)?;
                out.extend_from_slice(split(b, zero)?);
                match split(b, 2)? {
                    [0, 0xFF] => out.push(0),
                    [0, 0x01] => break,
                    _ => return None,
                }
            }
            match ty {
                ColumnType::String => Value::Text(String::from_utf8(out).ok()?),
                _ => Value::Bytes(out),
            }
        }
    })
}

/// Advances `b` past one value of type `ty` without decoding it (no
/// allocation); `None` when the bytes do not hold one.
pub fn skip(b: &mut &[u8], ty: ColumnType) -> Option<()> {
    let (&tag, rest) = b.split_first()?;
    *b = rest;
    match tag {
        NULL => return Some(()),
        PRESENT => {}
        _ => return None,
    }
    let width = match ty {
        ColumnType::String | ColumnType::Bytes => loop {
            let zero = b.iter().position(|&c| c == 0)?;
            let escape = b.get(zero + 1)?;
            *b = b.get(zero + 2..)?;
            match escape {
                0xFF => continue,
                0x01 => return Some(()),
                _ => return None,
            }
        },
        ColumnType::Decimal { .. } => 16,
        other => other.fixed_width()?,
    };
    *b = b.get(width..)?;
    Some(())
}

/// The encoding of `values`, of the columns typed `types`, in order.
pub fn encode_all(values: &[Value], types: &[ColumnType]) -> Vec<u8> {
    let mut out = Vec::new();
    for (v, &ty) in values.iter().zip(types) {
        encode(&mut out, v, ty);
    }
    out
}

/// Decodes values of `types` from the front of `b`, advancing it.
pub fn decode_all(b: &mut &[u8], types: &[ColumnType]) -> Option<Vec<Value>> {
    types.iter().map(|&ty| decode(b, ty)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn enc(v: &Value, ty: ColumnType) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&mut out, v, ty);
        out
    }

    fn round_trip(v: &Value, ty: ColumnType) {
        let b = enc(v, ty);
        let mut s = &b[..];
        assert_eq!(decode(&mut s, ty).as_ref(), Some(v), "{ty:?}");
        assert!(s.is_empty());
    }

    proptest! {
        #[test]
        fn signed_order_and_round_trip(a in any::<i64>(), b in any::<i64>(), c in any::<i8>(), d in any::<i8>()) {
            round_trip(&Value::Int(a), ColumnType::I64);
            round_trip(&Value::Int(c.into()), ColumnType::I8);
            prop_assert_eq!(a.cmp(&b), enc(&Value::Int(a), ColumnType::I64).cmp(&enc(&Value::Int(b), ColumnType::I64)));
            prop_assert_eq!(c.cmp(&d), enc(&Value::Int(c.into()), ColumnType::I8).cmp(&enc(&Value::Int(d.into()), ColumnType::I8)));
        }

        #[test]
        fn float_order_and_round_trip(a in any::<f64>(), b in any::<f64>()) {
            prop_assume!(!a.is_nan() && !b.is_nan());
            round_trip(&Value::Float(if a == 0.0 { 0.0 } else { a }), ColumnType::F64);
            let (ea, eb) = (enc(&Value::Float(a), ColumnType::F64), enc(&Value::Float(b), ColumnType::F64));
            prop_assert_eq!(a.partial_cmp(&b), Some(ea.cmp(&eb)));
        }

        #[test]
        fn decimal_and_unsigned_order(a in any::<i128>(), b in any::<i128>(), x in any::<u16>(), y in any::<u16>()) {
            let ty = ColumnType::Decimal { precision: 38, scale: 0 };
            round_trip(&Value::Decimal(a), ty);
            prop_assert_eq!(a.cmp(&b), enc(&Value::Decimal(a), ty).cmp(&enc(&Value::Decimal(b), ty)));
            prop_assert_eq!(x.cmp(&y), enc(&Value::UInt(x.into()), ColumnType::U16).cmp(&enc(&Value::UInt(y.into()), ColumnType::U16)));
        }

        #[test]
        fn composite_string_keys_sort_column_by_column(
            a in prop::collection::vec(0u8..3, 0..4), b in prop::collection::vec(0u8..3, 0..4),
            x in any::<i16>(), y in any::<i16>(),
        ) {
            let types = [ColumnType::Bytes, ColumnType::I16];
            let ka = encode_all(&[Value::Bytes(a.clone()), Value::Int(x.into())], &types);
            let kb = encode_all(&[Value::Bytes(b.clone()), Value::Int(y.into())], &types);
            prop_assert_eq!((a.clone(), x).cmp(&(b, y)), ka.cmp(&kb));
            let mut s = &ka[..];
            prop_assert_eq!(decode_all(&mut s, &types), Some(vec![Value::Bytes(a), Value::Int(x.into())]));
            let mut s = &ka[..];
            prop_assert!(skip(&mut s, types[0]).is_some() && skip(&mut s, types[1]).is_some() && s.is_empty());
        }
    }

    #[test]
    fn nulls_sort_first_and_garbage_does_not_decode() {
        assert!(enc(&Value::Null, ColumnType::I64) < enc(&Value::Int(i64::MIN), ColumnType::I64));
        for bad in [&[2u8][..], &[1, 0, 2], &[1, b'a'], &[1, 0xff, 0xfe, 0, 1]] {
            let mut s = bad;
            assert_eq!(decode(&mut s, ColumnType::String), None, "{bad:?}");
        }
    }
}
