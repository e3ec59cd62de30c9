//! The command table and what every command shares: arity checks, argument
//! parsing and Redis's error messages.
//!
//! A command runs against a [`Ctx`]: the transaction it reads and writes
//! through (a writer holding the lock for commands flagged `write`, a
//! reader otherwise; EXEC's one writer for a queued transaction), the
//! server, and the calling session. Commands of the session itself (AUTH,
//! HELLO, MULTI, ...) are in `session`, not here.

mod expiry;
mod keys;
mod server;
mod strings;

use crate::resp::Reply;
use crate::server::{Server, SessionInfo};
use crate::store::Txn;

/// What a command runs with.
pub struct Ctx<'a, 't> {
    /// Reads and writes.
    pub txn: &'a mut Txn<'t>,
    /// The server.
    pub server: &'a Server,
    /// The calling session.
    pub session: &'a mut SessionInfo,
}

/// A command's outcome when it is not a reply: an error reply to send.
pub type CmdResult = Result<Reply, Reply>;

/// One entry of the command table.
pub struct Spec {
    /// Lower-case name.
    pub name: &'static str,
    /// Redis's arity: `n` exactly n arguments (name included), `-n` at
    /// least n.
    pub arity: i32,
    /// Writes: runs in a writer transaction.
    pub write: bool,
    /// The implementation.
    pub run: fn(&mut Ctx<'_, '_>, &[Vec<u8>]) -> CmdResult,
    /// Redis's command flags, for COMMAND INFO.
    pub flags: &'static [&'static str],
    /// First key, last key (-1: the last argument), step; 0 0 0: no keys.
    pub keys: (i32, i32, i32),
}

const RO: &[&str] = &["readonly", "fast"];
const WR: &[&str] = &["write", "denyoom"];
const ADMIN: &[&str] = &["admin", "noscript"];
const FAST: &[&str] = &["fast"];
const WF: &[&str] = &["write", "fast"];

macro_rules! spec {
    ($name:literal, $arity:expr, $write:expr, $run:path, $flags:expr, $keys:expr) => {
        Spec {
            name: $name,
            arity: $arity,
            write: $write,
            run: $run,
            flags: $flags,
            keys: $keys,
        }
    };
}

/// Every command this module runs, sorted by name.
pub static COMMANDS: &[Spec] = &[
    spec!("append", 3, true, strings::append, WR, (1, 1, 1)),
    spec!("bgsave", -1, false, server::save, ADMIN, (0, 0, 0)),
    spec!("client", -2, false, server::client, ADMIN, (0, 0, 0)),
    spec!(
        "command",
        -1,
        false,
        server::command,
        &["loading", "stale"],
        (0, 0, 0)
    ),
    spec!("config", -2, false, server::config, ADMIN, (0, 0, 0)),
    spec!("dbsize", 1, false, keys::dbsize, RO, (0, 0, 0)),
    spec!("decr", 2, true, strings::decr, WR, (1, 1, 1)),
    spec!("decrby", 3, true, strings::decrby, WR, (1, 1, 1)),
    spec!("del", -2, true, keys::del, &["write"], (1, -1, 1)),
    spec!("echo", 2, false, server::echo, FAST, (0, 0, 0)),
    spec!("exists", -2, false, keys::exists, RO, (1, -1, 1)),
    spec!("expire", -3, true, expiry::expire, WF, (1, 1, 1)),
    spec!("expireat", -3, true, expiry::expireat, WF, (1, 1, 1)),
    spec!("expiretime", 2, false, expiry::expiretime, RO, (1, 1, 1)),
    spec!("flushall", -1, true, keys::flushdb, &["write"], (0, 0, 0)),
    spec!("flushdb", -1, true, keys::flushdb, &["write"], (0, 0, 0)),
    spec!("get", 2, false, strings::get, RO, (1, 1, 1)),
    spec!(
        "getdel",
        2,
        true,
        strings::getdel,
        &["write", "fast"],
        (1, 1, 1)
    ),
    spec!("getex", -2, true, expiry::getex, WF, (1, 1, 1)),
    spec!(
        "getrange",
        4,
        false,
        strings::getrange,
        &["readonly"],
        (1, 1, 1)
    ),
    spec!("getset", 3, true, strings::getset, WR, (1, 1, 1)),
    spec!("incr", 2, true, strings::incr, WR, (1, 1, 1)),
    spec!("incrby", 3, true, strings::incrby, WR, (1, 1, 1)),
    spec!("incrbyfloat", 3, true, strings::incrbyfloat, WR, (1, 1, 1)),
    spec!(
        "info",
        -1,
        false,
        server::info,
        &["loading", "stale"],
        (0, 0, 0)
    ),
    spec!("keys", 2, false, keys::keys, &["readonly"], (0, 0, 0)),
    spec!("mget", -2, false, strings::mget, RO, (1, -1, 1)),
    spec!("mset", -3, true, strings::mset, WR, (1, -1, 2)),
    spec!("msetnx", -3, true, strings::msetnx, WR, (1, -1, 2)),
    spec!("persist", 2, true, expiry::persist, WF, (1, 1, 1)),
    spec!("pexpire", -3, true, expiry::pexpire, WF, (1, 1, 1)),
    spec!("pexpireat", -3, true, expiry::pexpireat, WF, (1, 1, 1)),
    spec!("pexpiretime", 2, false, expiry::pexpiretime, RO, (1, 1, 1)),
    spec!("ping", -1, false, server::ping, FAST, (0, 0, 0)),
    spec!(
        "pith.search",
        -2,
        false,
        keys::pith_search,
        &["readonly"],
        (0, 0, 0)
    ),
    spec!(
        "pith.stats",
        1,
        false,
        server::pith_stats,
        &["readonly"],
        (0, 0, 0)
    ),
    spec!("psetex", 4, true, expiry::psetex, WR, (1, 1, 1)),
    spec!("pttl", 2, false, expiry::pttl, RO, (1, 1, 1)),
    spec!(
        "randomkey",
        1,
        false,
        keys::randomkey,
        &["readonly"],
        (0, 0, 0)
    ),
    spec!("rename", 3, true, keys::rename, &["write"], (1, 2, 1)),
    spec!(
        "renamenx",
        3,
        true,
        keys::renamenx,
        &["write", "fast"],
        (1, 2, 1)
    ),
    spec!("save", 1, false, server::save, ADMIN, (0, 0, 0)),
    spec!("scan", -2, false, keys::scan, &["readonly"], (0, 0, 0)),
    spec!("set", -3, true, strings::set, WR, (1, 1, 1)),
    spec!("setex", 4, true, expiry::setex, WR, (1, 1, 1)),
    spec!(
        "setnx",
        3,
        true,
        strings::setnx,
        &["write", "denyoom", "fast"],
        (1, 1, 1)
    ),
    spec!("setrange", 4, true, strings::setrange, WR, (1, 1, 1)),
    spec!("strlen", 2, false, strings::strlen, RO, (1, 1, 1)),
    spec!("ttl", 2, false, expiry::ttl, RO, (1, 1, 1)),
    spec!("type", 2, false, keys::type_, RO, (1, 1, 1)),
    spec!(
        "unlink",
        -2,
        true,
        keys::del,
        &["write", "fast"],
        (1, -1, 1)
    ),
];

/// The entry for `name` (any case).
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    lookup_lower(&String::from_utf8_lossy(name).to_ascii_lowercase())
}

/// The entry for `lower`, a name in lower case.
pub fn lookup_lower(lower: &str) -> Option<&'static Spec> {
    COMMANDS
        .binary_search_by(|s| s.name.cmp(lower))
        .ok()
        .map(|i| &COMMANDS[i])
}

/// Redis's reply to an unknown command.
pub fn unknown(args: &[Vec<u8>]) -> Reply {
    let mut msg = format!(
        "ERR unknown command '{}', with args beginning with: ",
        printable(args.first().map(Vec::as_slice).unwrap_or_default())
    );
    for a in args.iter().skip(1).take(20) {
        msg.push_str(&format!("'{}' ", printable(a)));
    }
    Reply::Error(msg)
}

/// Redis's reply to a wrong argument count.
pub fn wrong_arity(name: &str) -> Reply {
    Reply::err(format_args!(
        "wrong number of arguments for '{name}' command"
    ))
}

/// True when `n` arguments (name included) satisfy `arity`.
pub fn arity_ok(arity: i32, n: usize) -> bool {
    match arity {
        a if a >= 0 => n == a as usize,
        a => n >= a.unsigned_abs() as usize,
    }
}

/// An argument for an error message: lossy UTF-8, at most 128 bytes.
pub fn printable(arg: &[u8]) -> String {
    String::from_utf8_lossy(&arg[..arg.len().min(128)]).replace(['\r', '\n'], " ")
}

/// `-ERR syntax error`.
pub fn syntax() -> Reply {
    Reply::err("syntax error")
}

/// The reply for an engine failure.
pub fn engine(e: pith::Error) -> Reply {
    Reply::err(format_args!("storage engine: {e}"))
}

/// `arg` as a signed 64-bit integer, or Redis's error.
pub fn int(arg: &[u8]) -> Result<i64, Reply> {
    parse_int(arg).ok_or_else(|| Reply::err("value is not an integer or out of range"))
}

/// Redis's strict integer syntax: optional `-`, digits, no leading zeros
/// (but `0`), no `+`, no spaces, within i64.
pub fn parse_int(arg: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(arg).ok()?;
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
        || (s.starts_with('-') && digits == "0")
    {
        return None;
    }
    s.parse().ok()
}

/// Runs `spec` with a context.
pub fn run(spec: &Spec, ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> Reply {
    match (spec.run)(ctx, args) {
        Ok(r) | Err(r) => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_for_lookup() {
        assert!(COMMANDS.windows(2).all(|w| w[0].name < w[1].name));
        assert_eq!(lookup(b"GeT").map(|s| s.name), Some("get"));
        assert!(lookup(b"nope").is_none());
    }

    #[test]
    fn integers_parse_as_redis_does() {
        assert_eq!(parse_int(b"-42"), Some(-42));
        assert_eq!(parse_int(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b"+1"[..],
            b"01",
            b"-0",
            b" 1",
            b"1.0",
            b"",
            b"-",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
    }
}
