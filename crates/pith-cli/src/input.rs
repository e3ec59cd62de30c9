//! Reading benchmark and load inputs.
//!
//! Two formats, told apart by the first non-blank byte: JSON Lines records
//! `{"key": "...", "value": "..."}` (first byte `{`), or plain text with one
//! key per line. Either may be zstd-compressed (name ends in `.zst`). Inputs
//! are streamed line by line; nothing here holds a whole file.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::CliError;

fn open(path: &Path) -> Result<Box<dyn BufRead>, CliError> {
    let io = |source| CliError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "zst") {
        Box::new(zstd::Decoder::new(file).map_err(io)?)
    } else {
        Box::new(file)
    };
    Ok(Box::new(BufReader::with_capacity(1 << 20, reader)))
}

/// Streams `(key, value)` records; plain-text inputs yield empty values.
pub struct Records {
    reader: Box<dyn BufRead>,
    path: PathBuf,
    line: u64,
    json: Option<bool>,
    buf: Vec<u8>,
}

impl Records {
    /// Opens `path`.
    pub fn open(path: &Path) -> Result<Self, CliError> {
        Ok(Records {
            reader: open(path)?,
            path: path.to_path_buf(),
            line: 0,
            json: None,
            buf: Vec::new(),
        })
    }

    fn parse_json(&self, line: &[u8]) -> Result<(Vec<u8>, Vec<u8>), CliError> {
        let bad = |detail: String| CliError::BadRecord {
            path: self.path.clone(),
            line: self.line,
            detail,
        };
        let v: serde_json::Value =
            serde_json::from_slice(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let field = |name: &str| match v.get(name) {
            Some(serde_json::Value::String(s)) => Ok(s.as_bytes().to_vec()),
            Some(_) => Err(bad(format!("field \"{name}\" is not a string"))),
            None => Err(bad(format!("missing field \"{name}\""))),
        };
        Ok((field("key")?, field("value")?))
    }
}

impl Iterator for Records {
    type Item = Result<(Vec<u8>, Vec<u8>), CliError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(source) => {
                    return Some(Err(CliError::Io {
                        path: self.path.clone(),
                        source,
                    }))
                }
            }
            self.line += 1;
            let mut line = self.buf.as_slice();
            if let Some(stripped) = line.strip_suffix(b"\n") {
                line = stripped.strip_suffix(b"\r").unwrap_or(stripped);
            }
            let json = *self.json.get_or_insert_with(|| {
                line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
            });
            if json {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(self.parse_json(line));
            }
            return Some(Ok((line.to_vec(), Vec::new())));
        }
    }
}

/// All keys of `path`, sorted and without duplicates.
pub fn sorted_keys(path: &Path) -> Result<Vec<Vec<u8>>, CliError> {
    let mut keys = Vec::new();
    for r in Records::open(path)? {
        keys.push(r?.0);
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(keys)
}
