//! How the database commands print keys and values: `--format`.
//!
//! * `text` (default): one record per line, key and value separated by a
//!   tab, each escaped as redis-cli does (printable ASCII as is; `\\`,
//!   `\"`, `\n`, `\r`, `\t` and `\xHH` for every other byte), so a line is
//!   always one record and a tab always the separator.
//! * `json`: one JSON object per line, the format `pith load` reads:
//!   `{"key": .., "value": ..}` for UTF-8, `key_base64` / `value_base64`
//!   (standard alphabet, padded) for other bytes. Byte-exact both ways.
//! * `hex`: key and value in lowercase hex, tab separated.
//! * `raw`: the bytes as they are, nothing added: one value (`get`) only.

use std::io::Write;

use base64::Engine as _;

/// `--format` of `get`, `scan`, `search` and `dump`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutFormat {
    /// Escaped text, tab separated, one record per line.
    #[default]
    Text,
    /// JSON Lines that `pith load` reads back byte-exact.
    Json,
    /// Lowercase hex, tab separated.
    Hex,
    /// The value's bytes as they are (`get` only).
    Raw,
}

/// Appends `bytes` escaped as redis-cli prints them (without quotes).
pub fn escape(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x20..=0x7e => out.push(b),
            _ => {
                out.extend_from_slice(b"\\x");
                push_hex(b, out);
            }
        }
    }
}

/// Appends `b` as two lowercase hex digits.
fn push_hex(b: u8, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
}

fn hex(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        push_hex(b, out);
    }
}

/// Adds field `name` (or `name_base64` for bytes that are not UTF-8).
fn json_field(map: &mut serde_json::Map<String, serde_json::Value>, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => map.insert(name.into(), s.into()),
        Err(_) => map.insert(
            format!("{name}_base64"),
            base64::engine::general_purpose::STANDARD
                .encode(bytes)
                .into(),
        ),
    };
}

/// Formats one record (`value: None` for keys only) as one line.
pub fn record(format: OutFormat, key: &[u8], value: Option<&[u8]>, out: &mut Vec<u8>) {
    match format {
        OutFormat::Text | OutFormat::Hex => {
            let put = if format == OutFormat::Text {
                escape
            } else {
                hex
            };
            put(key, out);
            if let Some(v) = value {
                out.push(b'\t');
                put(v, out);
            }
        }
        OutFormat::Json => {
            let mut map = serde_json::Map::new();
            json_field(&mut map, "key", key);
            if let Some(v) = value {
                json_field(&mut map, "value", v);
            }
            out.extend_from_slice(serde_json::Value::Object(map).to_string().as_bytes());
        }
        OutFormat::Raw => {
            out.extend_from_slice(value.unwrap_or(key));
            return;
        }
    }
    out.push(b'\n');
}

/// Buffered standard output, one record at a time. (A closed pipe ends
/// the process, as it does `cat`: `main` restores the default SIGPIPE.)
pub struct Out {
    inner: std::io::BufWriter<std::io::StdoutLock<'static>>,
    line: Vec<u8>,
}

impl Out {
    /// Standard output.
    pub fn stdout() -> Out {
        Out {
            inner: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
            line: Vec::new(),
        }
    }

    /// Writes one record.
    pub fn record(
        &mut self,
        format: OutFormat,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> std::io::Result<()> {
        self.line.clear();
        record(format, key, value, &mut self.line);
        self.inner.write_all(&self.line)
    }

    /// Writes `bytes` as they are.
    pub fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(bytes)
    }

    /// Flushes.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(format: OutFormat, key: &[u8], value: Option<&[u8]>) -> String {
        let mut out = Vec::new();
        record(format, key, value, &mut out);
        String::from_utf8(out).expect("every format but raw is ASCII or UTF-8 JSON")
    }

    #[test]
    fn text_escapes_every_byte_that_could_break_a_line() {
        assert_eq!(
            line(OutFormat::Text, b"a\tb", Some(b"x\ny\\\"\x00\xff\r \x7f~")),
            "a\\tb\tx\\ny\\\\\\\"\\x00\\xff\\r \\x7f~\n"
        );
        assert_eq!(line(OutFormat::Text, "é".as_bytes(), None), "\\xc3\\xa9\n");
    }

    #[test]
    fn json_uses_base64_only_for_bytes_that_are_not_utf8() {
        assert_eq!(
            line(OutFormat::Json, "ké".as_bytes(), Some(b"v\n")),
            "{\"key\":\"ké\",\"value\":\"v\\n\"}\n"
        );
        assert_eq!(
            line(OutFormat::Json, b"\xff", Some(b"")),
            "{\"key_base64\":\"/w==\",\"value\":\"\"}\n"
        );
        assert_eq!(line(OutFormat::Json, b"k", None), "{\"key\":\"k\"}\n");
    }

    #[test]
    fn hex_and_raw() {
        assert_eq!(line(OutFormat::Hex, b"\x01a", Some(b"\xff")), "0161\tff\n");
        let mut out = Vec::new();
        record(OutFormat::Raw, b"k", Some(b"v\n\xff"), &mut out);
        assert_eq!(out, b"v\n\xff");
    }
}
