//! Keys with a time to live: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with
//! NX, XX, GT, LT), TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST, and the
//! expiry options SET, SETEX, PSETEX and GETEX share.
//!
//! A deadline is the engine's (`pith::WriteBatch::put_expiring`): stored
//! with the value, judged against the database's clock, and no timer runs
//! per key. Setting or removing a deadline rewrites the value with the
//! new one. Times and errors follow Redis 7: relative times are added to
//! the transaction's clock reading, an expiry at or before it deletes the
//! key, and a time that overflows 64-bit milliseconds is "invalid expire
//! time in '<command>' command".

use super::{engine, int, syntax, CmdResult, Ctx};
use crate::resp::Reply;

/// The unit and base of a time argument.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds from now (EX, EXPIRE, SETEX).
    Seconds,
    /// Milliseconds from now (PX, PEXPIRE, PSETEX).
    Millis,
    /// A Unix time in seconds (EXAT, EXPIREAT).
    UnixSeconds,
    /// A Unix time in milliseconds (PXAT, PEXPIREAT).
    UnixMillis,
}

/// Redis's error for a time that cannot be a deadline.
pub fn invalid_time(command: &str) -> Reply {
    Reply::err(format_args!("invalid expire time in '{command}' command"))
}

/// The deadline (milliseconds since the Unix epoch, possibly in the past)
/// that `arg`, in `unit`, names at `now`; `positive` refuses zero and
/// negative numbers (SET's options and SETEX do, EXPIRE does not).
pub fn deadline(
    arg: &[u8],
    unit: Unit,
    now: u64,
    positive: bool,
    command: &str,
) -> Result<i64, Reply> {
    let n = int(arg)?;
    if positive && n <= 0 {
        return Err(invalid_time(command));
    }
    let ms = match unit {
        Unit::Seconds | Unit::UnixSeconds => n.checked_mul(1000),
        Unit::Millis | Unit::UnixMillis => Some(n),
    }
    .ok_or_else(|| invalid_time(command))?;
    match unit {
        Unit::Seconds | Unit::Millis => ms
            .checked_add(now as i64)
            .ok_or_else(|| invalid_time(command)),
        Unit::UnixSeconds | Unit::UnixMillis => Ok(ms),
    }
}

/// A deadline as the store keeps it: a time at or before the epoch is
/// simply past.
pub fn stored(deadline: i64) -> u64 {
    u64::try_from(deadline).unwrap_or(0)
}

/// The unit an option of SET or GETEX names, if it is one.
fn option_unit(option: &[u8]) -> Option<Unit> {
    match option.to_ascii_uppercase().as_slice() {
        b"EX" => Some(Unit::Seconds),
        b"PX" => Some(Unit::Millis),
        b"EXAT" => Some(Unit::UnixSeconds),
        b"PXAT" => Some(Unit::UnixMillis),
        _ => None,
    }
}

/// The options of SET (NX, XX, GET, KEEPTTL and a time) or of GETEX
/// (PERSIST and a time), as Redis 7 reads them: an option may repeat (the
/// last time given wins), two different time options or a time with
/// KEEPTTL or PERSIST are a syntax error, and so are NX with XX, an
/// option of the other command, and a time option without its value.
/// The time is read later: SET checks it before the key, GETEX after.
#[derive(Default)]
pub struct StringOptions<'a> {
    pub nx: bool,
    pub xx: bool,
    pub get: bool,
    pub keepttl: bool,
    pub persist: bool,
    pub time: Option<(Unit, &'a [u8])>,
}

impl<'a> StringOptions<'a> {
    /// Reads `options`, SET's when `set`, else GETEX's.
    pub fn parse(options: &'a [Vec<u8>], set: bool) -> Result<Self, Reply> {
        let mut o = StringOptions::default();
        let mut rest = options.iter();
        while let Some(a) = rest.next() {
            if let Some(unit) = option_unit(a) {
                let other_time = o.time.is_some_and(|(u, _)| u != unit);
                let time = rest.next().ok_or_else(syntax)?;
                if other_time || o.keepttl || o.persist {
                    return Err(syntax());
                }
                o.time = Some((unit, time));
                continue;
            }
            match a.to_ascii_uppercase().as_slice() {
                b"NX" if set && !o.xx => o.nx = true,
                b"XX" if set && !o.nx => o.xx = true,
                b"GET" if set => o.get = true,
                b"KEEPTTL" if set && o.time.is_none() => o.keepttl = true,
                b"PERSIST" if !set && o.time.is_none() => o.persist = true,
                _ => return Err(syntax()),
            }
        }
        Ok(o)
    }

    /// The deadline the time option names at `now`, if there is one.
    pub fn deadline(&self, now: u64, command: &str) -> Result<Option<u64>, Reply> {
        match self.time {
            Some((unit, t)) => Ok(Some(stored(deadline(t, unit, now, true, command)?))),
            None => Ok(None),
        }
    }
}

/// The NX, XX, GT, LT conditions of the EXPIRE family.
#[derive(Default)]
struct Condition {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Condition {
    fn parse(options: &[Vec<u8>]) -> Result<Condition, Reply> {
        let mut c = Condition::default();
        for o in options {
            match o.to_ascii_uppercase().as_slice() {
                b"NX" => c.nx = true,
                b"XX" => c.xx = true,
                b"GT" => c.gt = true,
                b"LT" => c.lt = true,
                _ => {
                    return Err(Reply::err(format_args!(
                        "Unsupported option {}",
                        super::printable(o)
                    )))
                }
            }
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(Reply::err(
                "NX and XX, GT or LT options at the same time are not compatible",
            ));
        }
        if c.gt && c.lt {
            return Err(Reply::err(
                "GT and LT options at the same time are not compatible",
            ));
        }
        Ok(c)
    }

    /// True when a key whose deadline is `current` may get `new`.
    fn allows(&self, current: Option<u64>, new: i64) -> bool {
        let new = i128::from(new);
        match current {
            // No deadline is an infinite one: never lower (GT), always
            // higher (LT).
            None => !(self.xx || self.gt),
            Some(c) => {
                let c = i128::from(c);
                let refused = self.nx || (self.gt && new <= c) || (self.lt && new >= c);
                !refused
            }
        }
    }
}

fn expire_generic(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], unit: Unit, command: &str) -> CmdResult {
    let condition = Condition::parse(&args[3..])?;
    let when = deadline(&args[2], unit, ctx.txn.now(), false, command)?;
    let Some(entry) = ctx.txn.entry(&args[1]).map_err(engine)? else {
        return Ok(Reply::Int(0));
    };
    if !condition.allows(entry.deadline, when) {
        return Ok(Reply::Int(0));
    }
    ctx.txn
        .put_expiring(&args[1], entry.value, Some(stored(when)));
    Ok(Reply::Int(1))
}

pub fn expire(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(ctx, args, Unit::Seconds, "expire")
}

pub fn pexpire(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(ctx, args, Unit::Millis, "pexpire")
}

pub fn expireat(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(ctx, args, Unit::UnixSeconds, "expireat")
}

pub fn pexpireat(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(ctx, args, Unit::UnixMillis, "pexpireat")
}

/// What the TTL family reports of a key: -2 absent, -1 no deadline, else
/// `shown(deadline)`.
fn report(ctx: &mut Ctx<'_, '_>, key: &[u8], shown: impl Fn(u64, u64) -> u64) -> CmdResult {
    // The deadline alone: no value is decoded.
    Ok(Reply::Int(match ctx.txn.deadline(key).map_err(engine)? {
        None => -2,
        Some(d) => d.map_or(-1, |d| shown(d, ctx.txn.now()) as i64),
    }))
}

pub fn ttl(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    // Redis rounds the remaining milliseconds to the nearest second.
    report(ctx, &args[1], |d, now| (d.saturating_sub(now) + 500) / 1000)
}

pub fn pttl(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    report(ctx, &args[1], |d, now| d.saturating_sub(now))
}

pub fn expiretime(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    report(ctx, &args[1], |d, _| d / 1000)
}

pub fn pexpiretime(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    report(ctx, &args[1], |d, _| d)
}

pub fn persist(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    match ctx.txn.entry(&args[1]).map_err(engine)? {
        Some(e) if e.deadline.is_some() => {
            ctx.txn.put_expiring(&args[1], e.value, None);
            Ok(Reply::Int(1))
        }
        _ => Ok(Reply::Int(0)),
    }
}

/// GETEX key [EX s | PX ms | EXAT t | PXAT t | PERSIST].
pub fn getex(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    let options = StringOptions::parse(&args[2..], false)?;
    // Redis looks the key up before it reads the time: a missing key is
    // nil whatever the time says.
    let Some(entry) = ctx.txn.entry(&args[1]).map_err(engine)? else {
        return Ok(Reply::Nil);
    };
    let deadline = options.deadline(ctx.txn.now(), "getex")?;
    if deadline.is_some() || (options.persist && entry.deadline.is_some()) {
        ctx.txn
            .put_expiring(&args[1], entry.value.clone(), deadline);
    }
    Ok(Reply::Bulk(entry.value))
}

fn setex_generic(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>], unit: Unit, command: &str) -> CmdResult {
    let when = deadline(&args[2], unit, ctx.txn.now(), true, command)?;
    ctx.txn
        .put_expiring(&args[1], args[3].clone(), Some(stored(when)));
    Ok(Reply::Simple("OK"))
}

pub fn setex(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    setex_generic(ctx, args, Unit::Seconds, "setex")
}

pub fn psetex(ctx: &mut Ctx<'_, '_>, args: &[Vec<u8>]) -> CmdResult {
    setex_generic(ctx, args, Unit::Millis, "psetex")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_convert_and_overflow_as_in_redis() {
        let now = 1_767_225_600_000;
        assert_eq!(
            deadline(b"10", Unit::Seconds, now, true, "set"),
            Ok(now as i64 + 10_000)
        );
        assert_eq!(
            deadline(b"10", Unit::Millis, now, true, "set"),
            Ok(now as i64 + 10)
        );
        assert_eq!(
            deadline(b"5", Unit::UnixSeconds, now, true, "set"),
            Ok(5000)
        );
        assert_eq!(
            deadline(b"-5", Unit::Seconds, now, false, "expire"),
            Ok(now as i64 - 5000)
        );
        let invalid = Err(invalid_time("set"));
        assert_eq!(deadline(b"0", Unit::Seconds, now, true, "set"), invalid);
        assert_eq!(
            deadline(b"9223372036854775807", Unit::Seconds, now, true, "set"),
            invalid
        );
        assert_eq!(
            deadline(b"9223372036854775807", Unit::Millis, now, true, "set"),
            invalid
        );
        assert!(deadline(b"x", Unit::Seconds, now, true, "set").is_err());
        assert_eq!(stored(-5), 0);
    }

    #[test]
    fn conditions_compare_like_redis() {
        let c = |o: &[&str]| {
            Condition::parse(&o.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>())
        };
        assert!(c(&["NX", "GT"]).is_err() && c(&["GT", "LT"]).is_err() && c(&["XY"]).is_err());
        let gt = c(&["gt"]).expect("gt");
        assert!(!gt.allows(None, 5) && gt.allows(Some(4), 5) && !gt.allows(Some(5), 5));
        let lt = c(&["LT"]).expect("lt");
        assert!(lt.allows(None, 5) && lt.allows(Some(6), 5) && !lt.allows(Some(5), 5));
        let nx = c(&["NX"]).expect("nx");
        assert!(nx.allows(None, 5) && !nx.allows(Some(1), 5));
        let xx = c(&["XX"]).expect("xx");
        assert!(!xx.allows(None, 5) && xx.allows(Some(1), 5));
    }
}
