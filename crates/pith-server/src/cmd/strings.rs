//! String commands: GET, SET and its relatives, ranges, counters.
//!
//! Every key holds a string (the engine's value), so WRONGTYPE never
//! arises. As in Redis, a command that replaces a value outright (SET
//! without KEEPTTL, GETSET, MSET) drops the key's time to live, and one
//! that changes it in place (APPEND, SETRANGE, INCR and the other
//! counters) keeps it.

use super::expiry::StringOptions;
use super::{engine, int, CmdResult, Ctx};
use crate::resp::{format_double, Reply};
use crate::store::Entry;

/// Largest string a command may build (Redis's `proto-max-bulk-len`
/// default, which bounds SETRANGE and APPEND there too).
const MAX_STRING: usize = 512 << 20;

pub fn get(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    Ok(match ctx.txn.get(&args[1]).map_err(engine)? {
        Some(v) => Reply::Bulk(v),
        None => Reply::Nil,
    })
}

/// SET key value [NX | XX] [GET] [EX s | PX ms | EXAT t | PXAT t | KEEPTTL].
pub fn set(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let options = StringOptions::parse(&args[3..], true)?;
    // Redis reads the time before it looks at the key.
    let deadline = options.deadline(ctx.txn.now(), "set")?;
    let (nx, xx, get, keepttl) = (options.nx, options.xx, options.get, options.keepttl);
    let (key, value) = (&args[1], &args[2]);
    let old = match nx || xx || get || keepttl {
        true => ctx.txn.entry(key).map_err(engine)?,
        false => None,
    };
    let blocked = (nx && old.is_some()) || (xx && old.is_none());
    if !blocked {
        let deadline = match keepttl {
            true => old.as_ref().and_then(|e| e.deadline),
            false => deadline,
        };
        ctx.txn.put_expiring(key, value.clone(), deadline);
    }
    Ok(match (get, blocked) {
        (true, _) => old.map_or(Reply::Nil, |e| Reply::Bulk(e.value)),
        (false, true) => Reply::Nil,
        (false, false) => Reply::Simple("OK"),
    })
}

/// The value and deadline of `key`, or an empty value without one: what
/// the commands that change a value in place start from.
fn current(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<Entry, Reply> {
    Ok(ctx.txn.entry(key).map_err(engine)?.unwrap_or(Entry {
        value: Vec::new(),
        deadline: None,
    }))
}

pub fn setnx(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    if ctx.txn.exists(&args[1]).map_err(engine)? {
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
        if ctx.txn.exists(&kv[0]).map_err(engine)? {
            return Ok(Reply::Int(0));
        }
    }
    for kv in args[1..].chunks(2) {
        ctx.txn.put(&kv[0], kv[1].clone());
    }
    Ok(Reply::Int(1))
}

pub fn append(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let Entry {
        mut value,
        deadline,
    } = current(ctx, &args[1])?;
    if value.len() + args[2].len() > MAX_STRING {
        return Err(Reply::err(
            "string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    value.extend_from_slice(&args[2]);
    let len = value.len() as i64;
    ctx.txn.put_expiring(&args[1], value, deadline);
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
    let old = ctx.txn.entry(&args[1]).map_err(engine)?;
    if value.is_empty() {
        // Nothing to write: the length as it is, no key created.
        return Ok(Reply::Int(old.map_or(0, |e| e.value.len() as i64)));
    }
    let end = offset as usize + value.len();
    if end > MAX_STRING {
        return Err(Reply::err(
            "string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    let deadline = old.as_ref().and_then(|e| e.deadline);
    let mut s = old.map(|e| e.value).unwrap_or_default();
    if s.len() < end {
        s.resize(end, 0);
    }
    s[offset as usize..end].copy_from_slice(value);
    let len = s.len() as i64;
    ctx.txn.put_expiring(&args[1], s, deadline);
    Ok(Reply::Int(len))
}

fn add(ctx: &mut Ctx<'_, '_>, key: &[u8], by: i64) -> CmdResult {
    let (now, deadline) = match ctx.txn.entry(key).map_err(engine)? {
        Some(e) => (
            super::parse_int(&e.value)
                .ok_or_else(|| Reply::err("value is not an integer or out of range"))?,
            e.deadline,
        ),
        None => (0, None),
    };
    let new = now
        .checked_add(by)
        .ok_or_else(|| Reply::err("increment or decrement would overflow"))?;
    ctx.txn
        .put_expiring(key, new.to_string().into_bytes(), deadline);
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
    let (now, deadline) = match ctx.txn.entry(&args[1]).map_err(engine)? {
        Some(e) => (
            parse_float(&e.value).ok_or_else(|| Reply::err("value is not a valid float"))?,
            e.deadline,
        ),
        None => (0.0, None),
    };
    let new = now + by;
    if !new.is_finite() {
        return Err(Reply::err("increment would produce NaN or Infinity"));
    }
    let text = format_double(new);
    ctx.txn
        .put_expiring(&args[1], text.clone().into_bytes(), deadline);
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
