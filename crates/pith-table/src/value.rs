//! Typed values, and their JSON form: what a row holds in memory, checked
//! against its column's type on the way in.
//!
//! JSON forms: integers and `f64` as JSON numbers (NaN has none; a float
//! outside an integer column is refused, never rounded); `bool`; `string`
//! as a string; `bytes` and `fixed_bytes` as lowercase hex strings;
//! `timestamp` as microseconds since the Unix epoch (a number) or RFC 3339
//! text in, RFC 3339 text in UTC out; `uuid` as `8-4-4-4-12` hex;
//! `decimal` as text (`"-12.50"`) or an integer in, text out, never a JSON
//! float (which would already have lost digits); `null`.

use serde_json::Value as Json;

use crate::schema::{Column, ColumnType};

/// One value of a column.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// No value (a nullable column).
    Null,
    /// Any signed integer column, and timestamps (microseconds).
    Int(i64),
    /// Any unsigned integer column.
    UInt(u64),
    /// `f64` (never NaN).
    Float(f64),
    /// `bool`.
    Bool(bool),
    /// `string`.
    Text(String),
    /// `bytes`, `fixed_bytes` and `uuid`.
    Bytes(Vec<u8>),
    /// `decimal`: the value times 10^scale.
    Decimal(i128),
}

impl Value {
    /// Reads `json` as a value of `column`; `Err` says what is wrong.
    pub fn from_json(json: &Json, column: &Column) -> Result<Value, String> {
        if json.is_null() {
            return match column.nullable {
                true => Ok(Value::Null),
                false => Err("null in a column that is not nullable".into()),
            };
        }
        let ty = column.ty;
        let want = |what: &str| format!("expected {what} for type {}, got {json}", ty.name());
        match ty {
            ColumnType::I8 | ColumnType::I16 | ColumnType::I32 | ColumnType::I64 => {
                let n = json.as_i64().ok_or_else(|| want("an integer"))?;
                let (lo, hi) = match ty {
                    ColumnType::I8 => (i64::from(i8::MIN), i64::from(i8::MAX)),
                    ColumnType::I16 => (i64::from(i16::MIN), i64::from(i16::MAX)),
                    ColumnType::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
                    _ => (i64::MIN, i64::MAX),
                };
                if n < lo || n > hi {
                    return Err(format!("{n} is out of range for {}", ty.name()));
                }
                Ok(Value::Int(n))
            }
            ColumnType::U8 | ColumnType::U16 | ColumnType::U32 | ColumnType::U64 => {
                let n = json
                    .as_u64()
                    .ok_or_else(|| want("a non-negative integer"))?;
                let hi = match ty {
                    ColumnType::U8 => u64::from(u8::MAX),
                    ColumnType::U16 => u64::from(u16::MAX),
                    ColumnType::U32 => u64::from(u32::MAX),
                    _ => u64::MAX,
                };
                if n > hi {
                    return Err(format!("{n} is out of range for {}", ty.name()));
                }
                Ok(Value::UInt(n))
            }
            ColumnType::F64 => json
                .as_f64()
                .map(Value::Float)
                .ok_or_else(|| want("a number")),
            ColumnType::Bool => json
                .as_bool()
                .map(Value::Bool)
                .ok_or_else(|| want("true or false")),
            ColumnType::String => json
                .as_str()
                .map(|s| Value::Text(s.into()))
                .ok_or_else(|| want("a string")),
            ColumnType::Bytes | ColumnType::FixedBytes(_) => {
                let s = json.as_str().ok_or_else(|| want("a hex string"))?;
                let b = from_hex(s).ok_or_else(|| want("a hex string"))?;
                if let ColumnType::FixedBytes(n) = ty {
                    if b.len() != usize::from(n) {
                        return Err(format!(
                            "{} bytes where the column holds exactly {n}",
                            b.len()
                        ));
                    }
                }
                Ok(Value::Bytes(b))
            }
            ColumnType::Timestamp => match json {
                Json::Number(_) => json
                    .as_i64()
                    .map(Value::Int)
                    .ok_or_else(|| want("integer microseconds since the Unix epoch")),
                Json::String(s) => parse_rfc3339(s)
                    .map(Value::Int)
                    .ok_or_else(|| want("RFC 3339 text such as 2024-05-01T12:00:00Z")),
                _ => Err(want("microseconds or RFC 3339 text")),
            },
            ColumnType::Uuid => {
                let s = json.as_str().ok_or_else(|| want("a UUID string"))?;
                parse_uuid(s)
                    .map(Value::Bytes)
                    .ok_or_else(|| want("a UUID such as 67e55044-10b1-426f-9247-bb680e5fe0c8"))
            }
            ColumnType::Decimal { precision, scale } => {
                let text = match json {
                    Json::String(s) => s.clone(),
                    Json::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
                    Json::Number(_) => {
                        return Err(
                            "a decimal given as a JSON float may have lost digits already: write it as a string"
                                .into(),
                        )
                    }
                    _ => return Err(want("decimal text")),
                };
                parse_decimal(&text, precision, scale).map(Value::Decimal)
            }
        }
    }

    /// Checks that this value fits `column` (type, range, length, null,
    /// NaN, decimal digits); `Err` says what is wrong.
    pub fn check(&self, column: &Column) -> Result<(), String> {
        let ty = column.ty;
        let mismatch = || format!("a {} value where the column is {}", self.kind(), ty.name());
        match (self, ty) {
            (Value::Null, _) if column.nullable => Ok(()),
            (Value::Null, _) => Err("null in a column that is not nullable".into()),
            (Value::Int(n), ColumnType::I8 | ColumnType::I16 | ColumnType::I32) => {
                let bits = 8 * ty.fixed_width().unwrap_or(8) as u32;
                let (lo, hi) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
                match (lo..=hi).contains(n) {
                    true => Ok(()),
                    false => Err(format!("{n} is out of range for {}", ty.name())),
                }
            }
            (Value::Int(_), ColumnType::I64 | ColumnType::Timestamp) => Ok(()),
            (
                Value::UInt(n),
                ColumnType::U8 | ColumnType::U16 | ColumnType::U32 | ColumnType::U64,
            ) => {
                let bits = 8 * ty.fixed_width().unwrap_or(8) as u32;
                match bits == 64 || *n < 1u64 << bits {
                    true => Ok(()),
                    false => Err(format!("{n} is out of range for {}", ty.name())),
                }
            }
            (Value::Float(f), ColumnType::F64) if f.is_nan() => {
                Err("NaN has no place in an order".into())
            }
            (Value::Float(_), ColumnType::F64) | (Value::Bool(_), ColumnType::Bool) => Ok(()),
            (Value::Text(_), ColumnType::String) | (Value::Bytes(_), ColumnType::Bytes) => Ok(()),
            (Value::Bytes(b), ColumnType::FixedBytes(_) | ColumnType::Uuid) => {
                let n = ty.fixed_width().unwrap_or(0);
                match b.len() == n {
                    true => Ok(()),
                    false => Err(format!(
                        "{} bytes where the column holds exactly {n}",
                        b.len()
                    )),
                }
            }
            (Value::Decimal(d), ColumnType::Decimal { precision, .. }) => {
                match d.unsigned_abs().checked_ilog10().map_or(1, |l| l + 1) <= u32::from(precision)
                {
                    true => Ok(()),
                    false => Err(format!("{d} (scaled) has more than {precision} digits")),
                }
            }
            _ => Err(mismatch()),
        }
    }

    /// What kind of value this is, for messages.
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Int(_) => "signed integer",
            Value::UInt(_) => "unsigned integer",
            Value::Float(_) => "float",
            Value::Bool(_) => "bool",
            Value::Text(_) => "text",
            Value::Bytes(_) => "bytes",
            Value::Decimal(_) => "decimal",
        }
    }

    /// The JSON form of a value of type `ty`.
    pub fn to_json(&self, ty: ColumnType) -> Json {
        match (self, ty) {
            (Value::Null, _) => Json::Null,
            (Value::Int(n), ColumnType::Timestamp) => Json::from(format_rfc3339(*n)),
            (Value::Int(n), _) => Json::from(*n),
            (Value::UInt(n), _) => Json::from(*n),
            (Value::Float(f), _) => {
                serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number)
            }
            (Value::Bool(b), _) => Json::Bool(*b),
            (Value::Text(s), _) => Json::from(s.clone()),
            (Value::Bytes(b), ColumnType::Uuid) => Json::from(format_uuid(b)),
            (Value::Bytes(b), _) => Json::from(to_hex(b)),
            (Value::Decimal(d), ColumnType::Decimal { scale, .. }) => {
                Json::from(format_decimal(*d, scale))
            }
            (Value::Decimal(d), _) => Json::from(d.to_string()),
        }
    }
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn parse_uuid(s: &str) -> Option<Vec<u8>> {
    let parts: Vec<&str> = s.split('-').collect();
    let lens: Vec<usize> = parts.iter().map(|p| p.len()).collect();
    if lens != [8, 4, 4, 4, 12] {
        return None;
    }
    from_hex(&parts.concat())
}

fn format_uuid(b: &[u8]) -> String {
    let h = to_hex(b);
    if h.len() != 32 {
        return h;
    }
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Parses decimal text into the value times 10^scale, refusing more
/// digits than `precision` or more fraction digits than `scale` (nothing
/// is rounded).
pub(crate) fn parse_decimal(text: &str, precision: u8, scale: u8) -> Result<i128, String> {
    let bad = || format!("{text:?} is not decimal text such as -12.50");
    let (neg, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    if frac.len() > usize::from(scale) {
        return Err(format!(
            "{text} has {} digits after the point; the column keeps {scale}",
            frac.len()
        ));
    }
    let int = int.trim_start_matches('0');
    if int.len() + usize::from(scale) > usize::from(precision) {
        return Err(format!(
            "{text} needs more than the column's {precision} digits ({scale} after the point)"
        ));
    }
    let mut v: i128 = 0;
    let padded = format!("{frac:0<width$}", width = usize::from(scale));
    for b in int.bytes().chain(padded.bytes()) {
        v = v * 10 + i128::from(b - b'0');
    }
    Ok(if neg { -v } else { v })
}

fn format_decimal(v: i128, scale: u8) -> String {
    let digits = v.unsigned_abs().to_string();
    let scale = usize::from(scale);
    let digits = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = digits.split_at(digits.len() - scale);
    let sign = if v < 0 { "-" } else { "" };
    match scale {
        0 => format!("{sign}{int}"),
        _ => format!("{sign}{int}.{frac}"),
    }
}

/// Days from 1970-01-01 to the civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.ffffff](Z|±HH:MM)` into microseconds since
/// the Unix epoch.
pub(crate) fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let days_in_month = match mo {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => return None,
    };
    if d < 1 || d > days_in_month || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let mut at = 19;
    let mut micros = 0i64;
    if b.get(at) == Some(&b'.') {
        let start = at + 1;
        let end = start + b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
        if end == start || end - start > 9 {
            return None;
        }
        let frac = &s[start..end];
        let six: String = format!("{frac:0<6}").chars().take(6).collect();
        micros = six.parse().ok()?;
        at = end;
    }
    let offset_min = match b.get(at)? {
        b'Z' | b'z' if at + 1 == b.len() => 0,
        c @ (b'+' | b'-') if at + 6 == b.len() && b[at + 3] == b':' => {
            let (oh, om) = (num(at + 1..at + 3)?, num(at + 4..at + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let m = oh * 60 + om;
            if *c == b'-' {
                -m
            } else {
                m
            }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    secs.checked_mul(1_000_000)?.checked_add(micros)
}

/// Formats microseconds since the Unix epoch as RFC 3339 in UTC.
pub(crate) fn format_rfc3339(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    match frac {
        0 => format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"),
        f => format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{f:06}Z"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(ty: ColumnType) -> Column {
        Column {
            name: "c".into(),
            ty,
            nullable: true,
        }
    }

    #[test]
    fn json_values_are_checked_against_their_type() {
        let ok = |ty, j: Json| Value::from_json(&j, &col(ty)).expect("fits");
        let bad = |ty, j: Json| Value::from_json(&j, &col(ty)).expect_err("refused");
        assert_eq!(ok(ColumnType::I8, Json::from(-128)), Value::Int(-128));
        assert!(bad(ColumnType::I8, Json::from(128)).contains("out of range"));
        assert!(bad(ColumnType::U32, Json::from(-1)).contains("non-negative"));
        assert!(bad(ColumnType::U32, Json::from(1.5)).contains("integer"));
        assert_eq!(
            ok(ColumnType::FixedBytes(2), Json::from("0aff")),
            Value::Bytes(vec![10, 255])
        );
        assert!(bad(ColumnType::FixedBytes(3), Json::from("0aff")).contains("exactly 3"));
        assert_eq!(ok(ColumnType::I64, Json::Null), Value::Null);
        let not_null = Column {
            nullable: false,
            ..col(ColumnType::I64)
        };
        assert!(Value::from_json(&Json::Null, &not_null).is_err());
    }

    #[test]
    fn decimals_are_exact_or_refused() {
        let d = ColumnType::Decimal {
            precision: 6,
            scale: 2,
        };
        let c = col(d);
        assert_eq!(
            Value::from_json(&Json::from("-12.5"), &c),
            Ok(Value::Decimal(-1250))
        );
        assert_eq!(
            Value::from_json(&Json::from(42), &c),
            Ok(Value::Decimal(4200))
        );
        assert!(Value::from_json(&Json::from("1.234"), &c).is_err());
        assert!(Value::from_json(&Json::from("12345.6"), &c).is_err());
        assert!(Value::from_json(&Json::from(1.5), &c).is_err());
        assert!(Value::from_json(&Json::from("1e5"), &c).is_err());
        assert_eq!(Value::Decimal(-1250).to_json(d), Json::from("-12.50"));
        assert_eq!(Value::Decimal(5).to_json(d), Json::from("0.05"));
    }

    #[test]
    fn timestamps_and_uuids_round_trip() {
        let t = parse_rfc3339("2024-02-29T23:59:58.5+01:00").expect("parses");
        assert_eq!(format_rfc3339(t), "2024-02-29T22:59:58.500000Z");
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(format_rfc3339(-1), "1969-12-31T23:59:59.999999Z");
        assert_eq!(parse_rfc3339("2023-02-29T00:00:00Z"), None);
        let u = "67e55044-10b1-426f-9247-bb680e5fe0c8";
        let v = Value::from_json(&Json::from(u), &col(ColumnType::Uuid)).expect("uuid");
        assert_eq!(v.to_json(ColumnType::Uuid), Json::from(u));
    }
}
