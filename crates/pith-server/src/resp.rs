//! The Redis serialization protocol: parsing requests, encoding replies.
//!
//! Requests come as RESP arrays of bulk strings (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`,
//! what every client library sends) or as *inline* commands, one line of
//! space-separated words with Redis's quoting (`"a b"`, `'c'`, `\x41`), so
//! `telnet` and `nc` work. [`parse`] takes the bytes received so far and
//! returns one whole request and the bytes it used, `None` when more bytes
//! are needed, or a [`ProtocolError`] after which the connection must be
//! closed (its bytes can no longer be framed). Every length is checked
//! against [`Limits`] before anything is allocated for it, so a request
//! cannot make the server hold more than its limits.
//!
//! Replies ([`Reply`]) are encoded for the connection's protocol version:
//! RESP2, or RESP3 after `HELLO 3` (maps, doubles, booleans, sets and a
//! null of their own, each falling back to its RESP2 form).

use std::fmt::Write as _;

/// The Redis version whose commands and replies this server follows
/// (HELLO and INFO report it: clients pick features by it).
pub const REDIS_VERSION: &str = "7.0.0";

/// Bounds on what one request may hold.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Longest bulk string (`proto-max-bulk-len`, 512 MB by default).
    pub max_bulk: usize,
    /// Most arguments of one request (Redis: 1,048,576... as an int bound;
    /// we use the same).
    pub max_args: usize,
    /// Longest inline command line, and longest `*`/`$` header line.
    pub max_inline: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk: 512 << 20,
            max_args: 1 << 20,
            max_inline: 64 << 10,
        }
    }
}

/// Bytes that cannot be a request; the connection is closed after the
/// error is sent. Messages are Redis's own, as clients log them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Protocol error: {0}")]
pub struct ProtocolError(pub String);

fn protocol(detail: impl Into<String>) -> ProtocolError {
    ProtocolError(detail.into())
}

/// One parsed request: its arguments (the first is the command name).
pub type Request = Vec<Vec<u8>>;

/// Parses one request from the front of `buf`: `Ok(Some((args, used)))`,
/// `Ok(None)` when `buf` holds only part of one, or an error. An empty
/// request (a blank inline line, `*0`) parses as no arguments.
pub fn parse(buf: &[u8], limits: &Limits) -> Result<Option<(Request, usize)>, ProtocolError> {
    match buf.first() {
        None => Ok(None),
        Some(b'*') => parse_multibulk(buf, limits),
        Some(_) => parse_inline(buf, limits),
    }
}

/// The line at `buf[from..]` up to `\r\n`: `(line, index after \r\n)`.
fn line<'b>(
    buf: &'b [u8],
    from: usize,
    max: usize,
    what: &str,
) -> Result<Option<(&'b [u8], usize)>, ProtocolError> {
    let rest = buf.get(from..).unwrap_or_default();
    match rest.iter().position(|&b| b == b'\r') {
        Some(i) if i > max => Err(protocol(format!("too big {what} string"))),
        Some(i) => match rest.get(i + 1) {
            None => Ok(None),
            Some(b'\n') => Ok(Some((&rest[..i], from + i + 2))),
            Some(_) => Err(protocol(format!("invalid {what} string (\\r without \\n)"))),
        },
        None if rest.len() > max => Err(protocol(format!("too big {what} string"))),
        None => Ok(None),
    }
}

fn number(digits: &[u8]) -> Option<i64> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn parse_multibulk(buf: &[u8], limits: &Limits) -> Result<Option<(Request, usize)>, ProtocolError> {
    let Some((head, mut at)) = line(buf, 1, 32, "mbulk count")? else {
        return Ok(None);
    };
    let count = number(head).ok_or_else(|| protocol("invalid multibulk length"))?;
    if count <= 0 {
        return Ok(Some((Vec::new(), at)));
    }
    if count as u64 > limits.max_args as u64 {
        return Err(protocol("invalid multibulk length"));
    }
    // Reserve for what is already received, not for what is claimed.
    let mut args = Vec::with_capacity((count as usize).min(buf.len() / 4 + 1));
    for _ in 0..count {
        match buf.get(at) {
            None => return Ok(None),
            Some(b'$') => {}
            Some(&other) => {
                return Err(protocol(format!(
                    "expected '$', got '{}'",
                    char::from(other)
                )))
            }
        }
        let Some((digits, start)) = line(buf, at + 1, 32, "bulk length")? else {
            return Ok(None);
        };
        let len = number(digits)
            .filter(|&n| n >= 0 && n as u64 <= limits.max_bulk as u64)
            .ok_or_else(|| protocol("invalid bulk length"))? as usize;
        let end = start + len;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Err(protocol("bulk string not followed by \\r\\n"));
        }
        args.push(buf[start..end].to_vec());
        at = end + 2;
    }
    Ok(Some((args, at)))
}

fn parse_inline(buf: &[u8], limits: &Limits) -> Result<Option<(Request, usize)>, ProtocolError> {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        return match buf.len() > limits.max_inline {
            true => Err(protocol("too big inline request")),
            false => Ok(None),
        };
    };
    if nl > limits.max_inline {
        return Err(protocol("too big inline request"));
    }
    let text = buf[..nl].strip_suffix(b"\r").unwrap_or(&buf[..nl]);
    let args = split_args(text).ok_or_else(|| protocol("unbalanced quotes in request"))?;
    if args.len() > limits.max_args {
        return Err(protocol("too many arguments in an inline request"));
    }
    Ok(Some((args, nl + 1)))
}

/// Splits an inline command as Redis does: words separated by blanks,
/// `"..."` with `\n \r \t \b \a \\ \" \xHH` escapes, `'...'` with `\'`.
/// A closing quote must be followed by a blank or the end. `None`:
/// unbalanced quotes.
pub fn split_args(text: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    // A closing quote must be followed by a blank or the end.
    let closed = |i: usize| match text.get(i) {
        Some(&b) if !blank(b) => None,
        _ => Some(()),
    };
    loop {
        while text.get(i).is_some_and(|&b| blank(b)) {
            i += 1;
        }
        let Some(&first) = text.get(i) else {
            return Some(args);
        };
        let mut word = Vec::new();
        match first {
            quote @ (b'"' | b'\'') => {
                let double = quote == b'"';
                i += 1;
                loop {
                    match *text.get(i)? {
                        b'\\'
                            if double
                                && text.get(i + 1) == Some(&b'x')
                                && hex(text.get(i + 2)).is_some()
                                && hex(text.get(i + 3)).is_some() =>
                        {
                            word.push(hex(text.get(i + 2))? << 4 | hex(text.get(i + 3))?);
                            i += 4;
                        }
                        b'\\' if double => {
                            let c = *text.get(i + 1)?;
                            word.push(match c {
                                b'n' => b'\n',
                                b'r' => b'\r',
                                b't' => b'\t',
                                b'b' => 8,
                                b'a' => 7,
                                other => other,
                            });
                            i += 2;
                        }
                        b'\\' if text.get(i + 1) == Some(&b'\'') => {
                            word.push(b'\'');
                            i += 2;
                        }
                        b if b == quote => {
                            i += 1;
                            closed(i)?;
                            break;
                        }
                        b => {
                            word.push(b);
                            i += 1;
                        }
                    }
                }
            }
            _ => {
                while let Some(&b) = text.get(i).filter(|&&b| !blank(b)) {
                    word.push(b);
                    i += 1;
                }
            }
        }
        args.push(word);
    }
}

fn hex(b: Option<&u8>) -> Option<u8> {
    char::from(*b?).to_digit(16).map(|d| d as u8)
}

/// A reply, encoded for RESP2 or RESP3 by [`Reply::encode`].
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// `+OK`.
    Simple(&'static str),
    /// A simple string built at run time (`+...`, no CR or LF inside).
    Status(String),
    /// `-ERR ...`: the whole message, prefix included.
    Error(String),
    /// `:n`.
    Int(i64),
    /// `$n` bulk string.
    Bulk(Vec<u8>),
    /// The null bulk string (`$-1`; RESP3 `_`).
    Nil,
    /// The null array (`*-1`; RESP3 `_`), as EXEC after a failed WATCH.
    NilArray,
    /// `*n`.
    Array(Vec<Reply>),
    /// A map (RESP3 `%n`; RESP2 a flat array of keys and values).
    Map(Vec<(Reply, Reply)>),
    /// A set (RESP3 `~n`; RESP2 an array).
    Set(Vec<Reply>),
    /// A double (RESP3 `,x`; RESP2 a bulk string).
    Double(f64),
    /// A boolean (RESP3 `#t`/`#f`; RESP2 `:1`/`:0`).
    Bool(bool),
    /// Verbatim text (RESP3 `=n\r\ntxt:...`; RESP2 a bulk string), as INFO.
    Verbatim(String),
}

impl Reply {
    /// `-ERR {msg}`.
    pub fn err(msg: impl std::fmt::Display) -> Reply {
        Reply::Error(format!("ERR {msg}"))
    }

    /// A bulk string of `s`.
    pub fn bulk(s: impl Into<Vec<u8>>) -> Reply {
        Reply::Bulk(s.into())
    }

    /// True for an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Appends the encoding for protocol version `proto` (2 or 3).
    pub fn encode(&self, proto: u8, out: &mut Vec<u8>) {
        let resp3 = proto >= 3;
        let head = |out: &mut Vec<u8>, c: char, n: usize| {
            let _ = write!(Sink(out), "{c}{n}\r\n");
        };
        match self {
            Reply::Simple(s) => line_reply(out, b'+', s),
            Reply::Status(s) => line_reply(out, b'+', s),
            Reply::Error(s) => line_reply(out, b'-', s),
            Reply::Int(n) => {
                let _ = write!(Sink(out), ":{n}\r\n");
            }
            Reply::Bulk(b) => {
                head(out, '$', b.len());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Nil if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
            Reply::NilArray if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::NilArray => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(items) => {
                head(out, '*', items.len());
                for r in items {
                    r.encode(proto, out);
                }
            }
            Reply::Set(items) => {
                head(out, if resp3 { '~' } else { '*' }, items.len());
                for r in items {
                    r.encode(proto, out);
                }
            }
            Reply::Map(pairs) => {
                match resp3 {
                    true => head(out, '%', pairs.len()),
                    false => head(out, '*', 2 * pairs.len()),
                }
                for (k, v) in pairs {
                    k.encode(proto, out);
                    v.encode(proto, out);
                }
            }
            Reply::Double(d) => {
                let text = format_double(*d);
                match resp3 {
                    true => {
                        let _ = write!(Sink(out), ",{text}\r\n");
                    }
                    false => Reply::Bulk(text.into_bytes()).encode(proto, out),
                }
            }
            Reply::Bool(b) => match resp3 {
                true => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
                false => Reply::Int(i64::from(*b)).encode(proto, out),
            },
            Reply::Verbatim(text) => match resp3 {
                true => {
                    head(out, '=', text.len() + 4);
                    out.extend_from_slice(b"txt:");
                    out.extend_from_slice(text.as_bytes());
                    out.extend_from_slice(b"\r\n");
                }
                false => Reply::Bulk(text.as_bytes().to_vec()).encode(proto, out),
            },
        }
    }
}

/// A double as Redis prints one: `inf`, `-inf`, `nan`, or the shortest
/// text that reads back to the same value.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        "nan".into()
    } else if d.is_infinite() {
        if d > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{d}")
    }
}

fn line_reply(out: &mut Vec<u8>, kind: u8, s: &str) {
    out.push(kind);
    // A line reply cannot hold CR or LF: they would end it early.
    out.extend(
        s.bytes()
            .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.extend_from_slice(b"\r\n");
}

/// `fmt::Write` into a byte vector.
struct Sink<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Sink<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
#[path = "resp_tests.rs"]
mod tests;
