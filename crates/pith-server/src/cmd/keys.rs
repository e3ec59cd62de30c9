//! Keyspace commands: DEL, EXISTS, TYPE, RENAME, KEYS, SCAN, RANDOMKEY,
//! DBSIZE, FLUSHDB, and PithDB's PITH.SEARCH.
//!
//! KEYS and SCAN MATCH turn the glob into a whole-key regex searched
//! through the tries (`glob`), so a selective pattern costs what it
//! matches, not the size of the keyspace. SCAN's numeric cursor names the
//! last key returned (kept by the server, see `Cursors`): keys present
//! for the whole iteration are returned exactly once, in key order.

use std::collections::BTreeSet;

use super::{engine, int, syntax, CmdResult, Ctx};
use crate::glob;
use crate::resp::Reply;

pub fn del(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let keys: BTreeSet<&Vec<u8>> = args[1..].iter().collect();
    let mut n = 0;
    for k in keys {
        if ctx.txn.exists(k).map_err(engine)? {
            ctx.txn.delete(k);
            n += 1;
        }
    }
    Ok(Reply::Int(n))
}

pub fn exists(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let mut n = 0;
    for k in &args[1..] {
        n += i64::from(ctx.txn.exists(k).map_err(engine)?);
    }
    Ok(Reply::Int(n))
}

pub fn type_(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    Ok(Reply::Simple(
        match ctx.txn.exists(&args[1]).map_err(engine)? {
            true => "string",
            false => "none",
        },
    ))
}

fn rename_to(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], only_new: bool) -> CmdResult {
    let (from, to) = (&args[1], &args[2]);
    let entry = ctx
        .txn
        .entry(from)
        .map_err(engine)?
        .ok_or_else(|| Reply::err("no such key"))?;
    if only_new && ctx.txn.exists(to).map_err(engine)? {
        return Ok(Reply::Int(0));
    }
    if from != to {
        // The time to live moves with the value, as in Redis.
        ctx.txn.delete(from);
        ctx.txn.put_expiring(to, entry.value, entry.deadline);
    }
    Ok(match only_new {
        true => Reply::Int(i64::from(from != to)),
        false => Reply::Simple("OK"),
    })
}

pub fn rename(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    rename_to(ctx, args, false)
}

pub fn renamenx(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    rename_to(ctx, args, true)
}

pub fn keys(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let re = glob::to_regex(&args[1]);
    let keys = ctx.txn.keys(Some(&re), None, usize::MAX).map_err(engine)?;
    Ok(Reply::Array(keys.into_iter().map(Reply::Bulk).collect()))
}

pub fn pith_search(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let pattern =
        std::str::from_utf8(&args[1]).map_err(|_| Reply::err("the regex is not UTF-8"))?;
    let limit = match &args[2..] {
        [] => usize::MAX,
        [opt, n] if opt.eq_ignore_ascii_case(b"LIMIT") => {
            usize::try_from(int(n)?).map_err(|_| Reply::err("LIMIT must not be negative"))?
        }
        _ => return Err(syntax()),
    };
    let keys = ctx
        .txn
        .keys(Some(pattern), None, limit)
        .map_err(|e| match e {
            pith::Error::Regex(msg) => Reply::err(format_args!("invalid regex: {msg}")),
            other => engine(other),
        })?;
    Ok(Reply::Array(keys.into_iter().map(Reply::Bulk).collect()))
}

pub fn scan(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let cursor: u64 = std::str::from_utf8(&args[1])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Reply::err("invalid cursor"))?;
    let (mut pattern, mut count, mut only_strings) = (None, 10usize, true);
    let mut rest = args[2..].iter();
    while let Some(opt) = rest.next() {
        let value = rest.next().ok_or_else(syntax)?;
        match opt.to_ascii_uppercase().as_slice() {
            b"MATCH" => pattern = Some(glob::to_regex(value)),
            b"COUNT" => {
                count = usize::try_from(int(value)?)
                    .ok()
                    .filter(|&c| c >= 1)
                    .ok_or_else(syntax)?
            }
            b"TYPE" => only_strings = value.eq_ignore_ascii_case(b"string"),
            _ => return Err(syntax()),
        }
    }
    let after = match cursor {
        0 => None,
        c => Some(
            ctx.server
                .cursors
                .resume(c)
                .ok_or_else(|| Reply::err("invalid cursor"))?,
        ),
    };
    if !only_strings {
        // Every key is a string: no key has another type.
        return Ok(Reply::Array(vec![
            Reply::bulk("0"),
            Reply::Array(Vec::new()),
        ]));
    }
    let keys = ctx
        .txn
        .keys(pattern.as_deref(), after.as_deref(), count)
        .map_err(engine)?;
    let next = match keys.last() {
        Some(last) if keys.len() == count => ctx.server.cursors.park(last.clone()),
        _ => 0,
    };
    Ok(Reply::Array(vec![
        Reply::bulk(next.to_string()),
        Reply::Array(keys.into_iter().map(Reply::Bulk).collect()),
    ]))
}

pub fn randomkey(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> CmdResult {
    // Seek to a random byte string and take the key at or after it (the
    // first key when past the end): cheap, if not uniform over keys.
    let probe = ctx.server.random_u64().to_be_bytes();
    let mut found = ctx.txn.keys(None, Some(&probe), 1).map_err(engine)?;
    if found.is_empty() {
        found = ctx.txn.keys(None, None, 1).map_err(engine)?;
    }
    Ok(found.pop().map_or(Reply::Nil, Reply::Bulk))
}

pub fn dbsize(ctx: &mut Ctx<'_, '_>, _args: &[Vec<u8>]) -> CmdResult {
    let n = ctx.txn.count_keys().map_err(engine)?;
    Ok(Reply::Int(n as i64))
}

pub fn flushdb(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    match &args[1..] {
        [] => {}
        [mode] if mode.eq_ignore_ascii_case(b"ASYNC") || mode.eq_ignore_ascii_case(b"SYNC") => {}
        _ => return Err(syntax()),
    }
    ctx.txn.clear();
    Ok(Reply::Simple("OK"))
}
