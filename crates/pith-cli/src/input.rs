//! Reading load and benchmark inputs, strictly.
//!
//! An input is JSON Lines unless the caller names another [`Format`]; the
//! format is never guessed from the data. Compression is recognized by its
//! magic bytes, not the file name: zstd is decoded as it streams, and
//! gzip, xz, bzip2, lz4 and zip are refused by name (PithDB does not read
//! them; decompress first). A UTF-8 byte-order mark at the start is
//! skipped. `-` is standard input. Inputs are streamed line by line;
//! nothing here holds a whole file.
//!
//! JSON Lines: one object per line, `{"key": "..", "value": ".."}` for
//! UTF-8 text, or `"key_base64"` / `"value_base64"` (standard alphabet,
//! padded) for arbitrary bytes, as `pith dump` writes them. Other fields,
//! a key or value given twice, or a line that is not such an object are
//! errors naming the file and line. Blank lines are skipped.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::CliError;

/// What an input file holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// JSON Lines: `{"key": .., "value": ..}` per line (or `key_base64`,
    /// `value_base64` for bytes).
    #[default]
    Jsonl,
    /// One key per line (a trailing `\r` is dropped); values are empty.
    Keys,
}

/// Compressed formats recognized by magic, and whether PithDB reads them.
const MAGICS: &[(&[u8], &str)] = &[
    (&[0x28, 0xb5, 0x2f, 0xfd], "zstd"),
    (&[0x1f, 0x8b], "gzip"),
    (&[0xfd, b'7', b'z', b'X', b'Z', 0x00], "xz"),
    (b"BZh", "bzip2"),
    (&[0x04, 0x22, 0x4d, 0x18], "lz4"),
    (b"PK\x03\x04", "zip"),
];

const ARRAY_HINT: &str =
    " (a JSON array? JSON Lines holds one object per line: `jq -c '.[]' FILE` converts)";

const BOM: &[u8] = b"\xef\xbb\xbf";

/// The input's display name: the path, or `<stdin>` for `-`.
pub fn display_name(path: &Path) -> PathBuf {
    if path == Path::new("-") {
        PathBuf::from("<stdin>")
    } else {
        path.to_path_buf()
    }
}

fn open(path: &Path) -> Result<Box<dyn BufRead>, CliError> {
    let name = display_name(path);
    let io = |source| CliError::Io {
        path: name.clone(),
        source,
    };
    let raw: Box<dyn Read> = if path == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(File::open(path).map_err(io)?)
    };
    let mut raw = BufReader::with_capacity(1 << 20, raw);
    let head = raw.fill_buf().map_err(io)?;
    let compression = MAGICS
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|&(_, name)| name);
    let named_zst = path.extension().is_some_and(|e| e == "zst");
    let mut reader: Box<dyn BufRead> = match compression {
        Some("zstd") => Box::new(BufReader::with_capacity(
            1 << 20,
            zstd::Decoder::with_buffer(raw).map_err(io)?,
        )),
        Some(other) => {
            let decompress = match other {
                "zip" => "unzip -p FILE".to_string(),
                tool => format!("{tool} -dc FILE"),
            };
            return Err(CliError::Usage(format!(
                "{}: this is {other}-compressed data, which pith does not read (it reads plain text and zstd): decompress it first, e.g. `{decompress} | pith load --db DIR -`",
                name.display(),
            )));
        }
        None if named_zst && !head.is_empty() => {
            return Err(CliError::Usage(format!(
                "{}: the name ends in .zst but the data is not zstd (no zstd magic bytes)",
                name.display()
            )))
        }
        None => Box::new(raw),
    };
    let head = reader.fill_buf().map_err(io)?;
    if head.starts_with(BOM) {
        reader.consume(BOM.len());
    }
    Ok(reader)
}

/// Streams `(key, value)` records, with the line each came from.
pub struct Records {
    reader: Box<dyn BufRead>,
    path: PathBuf,
    format: Format,
    line: u64,
    buf: Vec<u8>,
}

impl Records {
    /// Opens `path` (`-`: standard input) as JSON Lines.
    pub fn open(path: &Path) -> Result<Self, CliError> {
        Self::open_as(path, Format::Jsonl)
    }

    /// Opens `path` (`-`: standard input) as `format`.
    pub fn open_as(path: &Path, format: Format) -> Result<Self, CliError> {
        Ok(Records {
            reader: open(path)?,
            path: display_name(path),
            format,
            line: 0,
            buf: Vec::new(),
        })
    }

    /// The line of the record returned last (one-based; 0 before any).
    pub fn line(&self) -> u64 {
        self.line
    }

    fn bad(&self, detail: String) -> CliError {
        CliError::BadRecord {
            path: self.path.clone(),
            line: self.line,
            detail,
        }
    }

    fn parse_json(&self, line: &[u8]) -> Result<(Vec<u8>, Vec<u8>), CliError> {
        let v: serde_json::Value = serde_json::from_slice(line).map_err(|e| {
            let hint = match line.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'[') => ARRAY_HINT,
                Some(b'{') => "",
                _ => " (JSON Lines expected; for one key per line, use --format keys)",
            };
            self.bad(format!("not a JSON object: {e}{hint}"))
        })?;
        let serde_json::Value::Object(fields) = v else {
            let hint = if v.is_array() { ARRAY_HINT } else { "" };
            return Err(self.bad(format!(
                "a JSON {} where a record object {{\"key\": .., \"value\": ..}} belongs{hint}",
                json_kind(&v)
            )));
        };
        let mut key = None;
        let mut value = None;
        for (name, v) in &fields {
            let (slot, base64) = match name.as_str() {
                "key" => (&mut key, false),
                "key_base64" => (&mut key, true),
                "value" => (&mut value, false),
                "value_base64" => (&mut value, true),
                other => {
                    return Err(self.bad(format!(
                        "unknown field \"{other}\" (a record has \"key\" or \"key_base64\", and \"value\" or \"value_base64\")"
                    )))
                }
            };
            let serde_json::Value::String(s) = v else {
                return Err(self.bad(format!(
                    "field \"{name}\" is a JSON {}, not a string",
                    json_kind(v)
                )));
            };
            let bytes = if base64 {
                base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|e| self.bad(format!("field \"{name}\" is not base64: {e}")))?
            } else {
                s.as_bytes().to_vec()
            };
            if slot.replace(bytes).is_some() {
                let what = name.trim_end_matches("_base64");
                return Err(self.bad(format!("both \"{what}\" and \"{what}_base64\" are given")));
            }
        }
        match (key, value) {
            (Some(k), Some(v)) => Ok((k, v)),
            (None, _) => Err(self.bad("missing field \"key\" (or \"key_base64\")".into())),
            (_, None) => Err(self.bad("missing field \"value\" (or \"value_base64\")".into())),
        }
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

impl Iterator for Records {
    type Item = Result<(Vec<u8>, Vec<u8>), CliError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Err(e) = next_line(&mut self.reader, &mut self.buf, &mut self.line, &self.path)?
            {
                return Some(Err(e));
            }
            let mut line = self.buf.as_slice();
            if let Some(stripped) = line.strip_suffix(b"\n") {
                line = stripped.strip_suffix(b"\r").unwrap_or(stripped);
            }
            return Some(match self.format {
                Format::Keys => Ok((line.to_vec(), Vec::new())),
                Format::Jsonl if line.iter().all(u8::is_ascii_whitespace) => continue,
                Format::Jsonl => self.parse_json(line),
            });
        }
    }
}

/// Reads the next line (with its end) into `buf`, counting it in `line`;
/// `None` at the end of the input.
fn next_line(
    reader: &mut Box<dyn BufRead>,
    buf: &mut Vec<u8>,
    line: &mut u64,
    path: &Path,
) -> Option<Result<(), CliError>> {
    buf.clear();
    match reader.read_until(b'\n', buf) {
        Ok(0) => None,
        Ok(_) => {
            *line += 1;
            Some(Ok(()))
        }
        Err(source) => Some(Err(CliError::Io {
            path: path.to_path_buf(),
            source,
        })),
    }
}

/// Streams the JSON objects of a JSON Lines file (table rows), each with
/// its line number; a line that is not an object is an error naming the
/// file and line. Blank lines are skipped.
pub struct Objects {
    reader: Box<dyn BufRead>,
    path: PathBuf,
    line: u64,
    buf: Vec<u8>,
}

/// One JSON object of a line.
pub type Object = serde_json::Map<String, serde_json::Value>;

impl Objects {
    /// Opens `path` (`-`: standard input; zstd ok).
    pub fn open(path: &Path) -> Result<Self, CliError> {
        Ok(Objects {
            reader: open(path)?,
            path: display_name(path),
            line: 0,
            buf: Vec::new(),
        })
    }
}

impl Iterator for Objects {
    type Item = Result<(u64, Object), CliError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Err(e) = next_line(&mut self.reader, &mut self.buf, &mut self.line, &self.path)?
            {
                return Some(Err(e));
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let bad = |detail: String| CliError::BadRecord {
                path: self.path.clone(),
                line: self.line,
                detail,
            };
            return Some(match serde_json::from_slice(&self.buf) {
                Ok(serde_json::Value::Object(o)) => Ok((self.line, o)),
                Ok(v) => Err(bad(format!(
                    "a JSON {} where a row object belongs",
                    json_kind(&v)
                ))),
                Err(e) => Err(bad(format!("not a JSON object: {e}"))),
            });
        }
    }
}

/// All keys of `path` read as `format`, sorted and without duplicates.
pub fn sorted_keys_as(path: &Path, format: Format) -> Result<Vec<Vec<u8>>, CliError> {
    let mut keys = Vec::new();
    for r in Records::open_as(path, format)? {
        keys.push(r?.0);
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Parsed = Result<(Vec<u8>, Vec<u8>), String>;

    fn records(bytes: &[u8], format: Format) -> Vec<Parsed> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("in");
        std::fs::write(&path, bytes).expect("write");
        match Records::open_as(&path, format) {
            Ok(r) => r.map(|r| r.map_err(|e| e.to_string())).collect(),
            Err(e) => vec![Err(e.to_string())],
        }
    }

    #[test]
    fn json_lines_with_text_and_base64_fields() {
        let got = records(
            b"{\"key\": \"a\", \"value\": \"1\\n2\"}\n\n{\"key_base64\": \"/wA=\", \"value_base64\": \"\"}\r\n",
            Format::Jsonl,
        );
        assert_eq!(
            got,
            vec![
                Ok((b"a".to_vec(), b"1\n2".to_vec())),
                Ok((vec![0xff, 0], Vec::new()))
            ]
        );
    }

    #[test]
    fn a_byte_order_mark_is_skipped() {
        let got = records(
            b"\xef\xbb\xbf{\"key\":\"k\",\"value\":\"v\"}\n",
            Format::Jsonl,
        );
        assert_eq!(got, vec![Ok((b"k".to_vec(), b"v".to_vec()))]);
    }

    #[test]
    fn non_json_lines_are_errors_naming_the_line() {
        for (input, expect) in [
            (&b"key,value\na,1\n"[..], "in:1: not a JSON object"),
            (
                b"\n[{\"key\":\"a\",\"value\":\"b\"}]\n",
                "in:2: a JSON array",
            ),
            (
                b"{\"key\":\"a\",\"value\":\"b\"}\n\"x\"\n",
                "in:2: a JSON string",
            ),
            (b"{\"key\":\"a\"}\n", "missing field \"value\""),
            (
                b"{\"key\":\"a\",\"value\":1}\n",
                "\"value\" is a JSON number",
            ),
            (
                b"{\"key\":\"a\",\"value\":\"b\",\"v\":\"c\"}\n",
                "unknown field \"v\"",
            ),
            (
                b"{\"key\":\"a\",\"key_base64\":\"YQ==\",\"value\":\"\"}\n",
                "both \"key\" and \"key_base64\"",
            ),
            (
                b"{\"key_base64\":\"*\",\"value\":\"\"}\n",
                "\"key_base64\" is not base64",
            ),
        ] {
            let got = records(input, Format::Jsonl);
            let err = got
                .iter()
                .find_map(|r| r.as_ref().err())
                .unwrap_or_else(|| panic!("{input:?} loaded: {got:?}"));
            assert!(err.contains(expect), "{input:?}: {err}");
        }
    }

    #[test]
    fn a_json_array_gets_a_hint() {
        let got = records(b"[{\"key\":\"a\",\"value\":\"b\"}]\n", Format::Jsonl);
        let err = got[0].as_ref().expect_err("an array is not JSON Lines");
        assert!(err.contains("jq -c"), "{err}");
    }

    #[test]
    fn compressed_formats_pith_does_not_read_are_named() {
        for (magic, name) in [
            (&[0x1f, 0x8b, 8, 0][..], "gzip"),
            (&[0xfd, b'7', b'z', b'X', b'Z', 0, 1][..], "xz"),
            (b"BZh91AY", "bzip2"),
            (&[0x04, 0x22, 0x4d, 0x18, 0][..], "lz4"),
            (b"PK\x03\x04xx", "zip"),
        ] {
            let got = records(magic, Format::Jsonl);
            let err = got[0].as_ref().expect_err("refused");
            assert!(err.contains(&format!("{name}-compressed")), "{err}");
        }
    }

    #[test]
    fn zstd_is_read_by_its_magic() {
        let bytes = zstd::encode_all(&b"{\"key\":\"k\",\"value\":\"v\"}\n"[..], 3).expect("zstd");
        assert_eq!(
            records(&bytes, Format::Jsonl),
            vec![Ok((b"k".to_vec(), b"v".to_vec()))]
        );
    }

    #[test]
    fn keys_format_takes_lines_as_they_are() {
        let got = records(b"a\r\n\nb {\n", Format::Keys);
        assert_eq!(
            got,
            vec![
                Ok((b"a".to_vec(), vec![])),
                Ok((vec![], vec![])),
                Ok((b"b {".to_vec(), vec![]))
            ]
        );
    }
}
