//! String commands: GET, SET and its relatives, ranges, counters.
//!
//! Every key holds a string (the engine's value), so WRONGTYPE never
//! arises. Expiry options (EX, PX, EXAT, PXAT, KEEPTTL) are refused with
//! an error naming them: keys with deadlines need engine support that is
//! not built yet, and silently storing a key without its deadline would
//! keep data a client asked to expire.

use super::{engine, int, syntax, CmdResult, Ctx};
use crate::resp::{format_double, Reply};

/// Largest string a command may build (Redis's `proto-max-bulk-len`
/// default, which bounds SETRANGE and APPEND there too).
const MAX_STRING: usize = 512 << 20;

fn expiry_unsupported(option: &[u8]) -> Reply {
    Reply::err(format_args!(
        "'{}': keys with expiry are not supported by this server yet",
        String::from_utf8_lossy(option).to_ascii_uppercase()
    ))
}

pub fn get(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    Ok(match ctx.txn.get(&args[1]).map_err(engine)? {
        Some(v) => Reply::Bulk(v),
        None => Reply::Nil,
    })
}

pub fn set(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let (mut nx, mut xx, mut get) = (false, false, false);
    for a in &args[3..] {
        match a.to_ascii_uppercase().as_slice() {
            b"NX" if !xx => nx = true,
            b"XX" if !nx => xx = true,
            b"GET" => get = true,
            b"EX" | b"PX" | b"EXAT" | b"PXAT" | b"KEEPTTL" => return Err(expiry_unsupported(a)),
            _ => return Err(syntax()),
        }
    }
    let (key, value) = (&args[1], &args[2]);
    let old = match nx || xx || get {
        true => ctx.txn.get(key).map_err(engine)?,
        false => None,
    };
    let blocked = (nx && old.is_some()) || (xx && old.is_none());
    if !blocked {
        ctx.txn.put(key, value.clone());
    }
    Ok(match (get, blocked) {
        (true, _) => old.map_or(Reply::Nil, Reply::Bulk),
        (false, true) => Reply::Nil,
        (false, false) => Reply::Simple("OK"),
    })
}

pub fn setnx(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    if ctx.txn.get(&args[1]).map_err(engine)?.is_some() {
        return Ok(Reply::Int(0));
    }
    ctx.txn.put(&args[1], args[2].clone());
    Ok(Reply::Int(1))
}

pub fn getset(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let old = ctx.txn.get(&args[1]).map_err(engine)?;
    ctx.txn.put(&args[1], args[2].clone());
    Ok(old.map_or(Reply::Nil, Reply::Bulk))
}

pub fn getdel(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let old = ctx.txn.get(&args[1]).map_err(engine)?;
    if old.is_some() {
        ctx.txn.delete(&args[1]);
    }
    Ok(old.map_or(Reply::Nil, Reply::Bulk))
}

pub fn mget(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let mut out = Vec::with_capacity(args.len() - 1);
    for k in &args[1..] {
        out.push(
            ctx.txn
                .get(k)
                .map_err(engine)?
                .map_or(Reply::Nil, Reply::Bulk),
        );
    }
    Ok(Reply::Array(out))
}

fn pairs(args: &[Vec<u8>], name: &str) -> Result<(), Reply> {
    match (args.len() - 1) % 2 {
        0 => Ok(()),
        _ => Err(super::wrong_arity(name)),
    }
}

pub fn mset(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    pairs(args, "mset")?;
    for kv in args[1..].chunks(2) {
        ctx.txn.put(&kv[0], kv[1].clone());
    }
    Ok(Reply::Simple("OK"))
}

pub fn msetnx(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    pairs(args, "msetnx")?;
    for kv in args[1..].chunks(2) {
        if ctx.txn.get(&kv[0]).map_err(engine)?.is_some() {
            return Ok(Reply::Int(0));
        }
    }
    for kv in args[1..].chunks(2) {
        ctx.txn.put(&kv[0], kv[1].clone());
    }
    Ok(Reply::Int(1))
}

pub fn append(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let mut v = ctx.txn.get(&args[1]).map_err(engine)?.unwrap_or_default();
    if v.len() + args[2].len() > MAX_STRING {
        return Err(Reply::err(
            "string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    v.extend_from_slice(&args[2]);
    let len = v.len() as i64;
    ctx.txn.put(&args[1], v);
    Ok(Reply::Int(len))
}

pub fn strlen(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let len = ctx
        .txn
        .get(&args[1])
        .map_err(engine)?
        .map_or(0, |v| v.len());
    Ok(Reply::Int(len as i64))
}

pub fn getrange(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let (start, end) = (int(&args[2])?, int(&args[3])?);
    let v = ctx.txn.get(&args[1]).map_err(engine)?.unwrap_or_default();
    let len = v.len() as i64;
    // Redis: both negative and start past end is empty; negatives count
    // from the end, then clamp to the string.
    if (start < 0 && end < 0 && start > end) || len == 0 {
        return Ok(Reply::Bulk(Vec::new()));
    }
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let end = if end < 0 {
        (len + end).max(0)
    } else {
        end.min(len - 1)
    };
    if start > end || start >= len {
        return Ok(Reply::Bulk(Vec::new()));
    }
    Ok(Reply::Bulk(v[start as usize..=end as usize].to_vec()))
}

pub fn setrange(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let offset = int(&args[2])?;
    if offset < 0 {
        return Err(Reply::err("offset is out of range"));
    }
    let value = &args[3];
    let mut v = ctx.txn.get(&args[1]).map_err(engine)?;
    if value.is_empty() {
        // Nothing to write: the length as it is, no key created.
        return Ok(Reply::Int(v.map_or(0, |v| v.len() as i64)));
    }
    let end = offset as usize + value.len();
    if end > MAX_STRING {
        return Err(Reply::err(
            "string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    let s = v.get_or_insert_with(Vec::new);
    if s.len() < end {
        s.resize(end, 0);
    }
    s[offset as usize..end].copy_from_slice(value);
    let len = s.len() as i64;
    ctx.txn.put(&args[1], v.unwrap_or_default());
    Ok(Reply::Int(len))
}

fn add(ctx: &mut Ctx<'_, '_>, key: &[u8], by: i64) -> CmdResult {
    let now = match ctx.txn.get(key).map_err(engine)? {
        Some(v) => super::parse_int(&v)
            .ok_or_else(|| Reply::err("value is not an integer or out of range"))?,
        None => 0,
    };
    let new = now
        .checked_add(by)
        .ok_or_else(|| Reply::err("increment or decrement would overflow"))?;
    ctx.txn.put(key, new.to_string().into_bytes());
    Ok(Reply::Int(new))
}

pub fn incr(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    add(ctx, &args[1], 1)
}

pub fn decr(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    add(ctx, &args[1], -1)
}

pub fn incrby(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let by = int(&args[2])?;
    add(ctx, &args[1], by)
}

pub fn decrby(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let by = int(&args[2])?;
    let by = by
        .checked_neg()
        .ok_or_else(|| Reply::err("decrement would overflow"))?;
    add(ctx, &args[1], by)
}

/// Redis's float syntax for INCRBYFLOAT: a finite decimal, no spaces.
fn parse_float(arg: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(arg).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f)
}

pub fn incrbyfloat(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let by = parse_float(&args[2]).ok_or_else(|| Reply::err("value is not a valid float"))?;
    let now = match ctx.txn.get(&args[1]).map_err(engine)? {
        Some(v) => parse_float(&v).ok_or_else(|| Reply::err("value is not a valid float"))?,
        None => 0.0,
    };
    let new = now + by;
    if !new.is_finite() {
        return Err(Reply::err("increment would produce NaN or Infinity"));
    }
    let text = format_double(new);
    ctx.txn.put(&args[1], text.clone().into_bytes());
    Ok(Reply::Bulk(text.into_bytes()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn floats_parse_strictly() {
        assert_eq!(super::parse_float(b"1.5"), Some(1.5));
        assert_eq!(super::parse_float(b"-3e2"), Some(-300.0));
        for bad in [&b""[..], b" 1", b"abc", b"inf", b"nan"] {
            assert_eq!(super::parse_float(bad), None, "{bad:?}");
        }
    }
}
