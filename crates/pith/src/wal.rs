//! The write-ahead log: one file per memtable, append-only.
//!
//! Layout (little-endian; `docs/format.md`, "WAL"):
//!
//! ```text
//! header: "PITHWAL\0" | version u32 (1) | crc32c of the previous 12 bytes u32
//! record: crc32c u32 | len u32 | payload (len bytes, a write batch)
//! ```
//!
//! The record checksum covers the four `len` bytes and the payload. Each
//! group commit appends its batches as records with one `write` call, then
//! one `fdatasync` when any of them asked for `sync`.
//!
//! Recovery reads records in order and stops at a *torn tail*: a record
//! whose header or payload runs past the end of the file, or whose checksum
//! fails while nothing but zeros (or nothing at all) follows it. Those are
//! what a crash during an append leaves. A bad record with an intact
//! record after it (whole, checksum matching: a damaged length field that
//! seems to run past the end is checked this way too) is corruption,
//! reported with the file and offset, never silently skipped.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::batch;
use crate::error::{Error, Result};

pub(crate) const MAGIC: &[u8; 8] = b"PITHWAL\0";
pub(crate) const VERSION: u32 = 1;
pub(crate) const HEADER: usize = 16;
/// Sequence numbers stay below this (they share a 64-bit tag with a kind).
pub(crate) const MAX_SEQ: u64 = 1 << 56;
/// Largest payload a record may claim (a batch of up to 1 GiB).
pub(crate) const MAX_RECORD: usize = 1 << 30;

/// Appends records to one log file.
pub(crate) struct WalWriter {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    /// Bytes written so far, header included.
    pub(crate) len: u64,
}

pub(crate) fn header() -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    let crc = crc32c::crc32c(&h[..12]);
    h[12..].copy_from_slice(&crc.to_le_bytes());
    h
}

impl WalWriter {
    /// Creates a new log at `path` (which must not exist) and syncs its header.
    pub(crate) fn create(path: &Path) -> Result<Self> {
        let io = |e| Error::io(path, e);
        let mut file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(io)?;
        file.write_all(&header()).map_err(io)?;
        file.sync_data().map_err(io)?;
        Ok(WalWriter {
            file,
            path: path.to_path_buf(),
            buf: Vec::new(),
            len: HEADER as u64,
        })
    }

    /// Adds one record to the pending buffer.
    pub(crate) fn add(&mut self, payload: &[u8]) -> Result<()> {
        if payload.len() > MAX_RECORD {
            return Err(Error::InvalidArgument(format!(
                "write batch of {} bytes exceeds the {} byte limit",
                payload.len(),
                MAX_RECORD
            )));
        }
        let len = (payload.len() as u32).to_le_bytes();
        let crc = crc32c::crc32c_append(crc32c::crc32c(&len), payload);
        self.buf.extend_from_slice(&crc.to_le_bytes());
        self.buf.extend_from_slice(&len);
        self.buf.extend_from_slice(payload);
        Ok(())
    }

    /// Writes the pending records in one call, then syncs if asked.
    pub(crate) fn commit(&mut self, sync: bool) -> Result<()> {
        let io = |e| Error::io(&self.path, e);
        let result = self.file.write_all(&self.buf);
        self.len += self.buf.len() as u64;
        self.buf.clear();
        result.map_err(io)?;
        if sync {
            self.file.sync_data().map_err(io)?;
        }
        Ok(())
    }

    /// fsyncs what was written.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }
}

/// What recovery found in one log.
#[derive(Debug, Default)]
pub(crate) struct Recovered {
    /// Records replayed.
    pub records: u64,
    /// Bytes dropped as a torn tail (0 when the log ended cleanly).
    pub torn_bytes: u64,
    /// Highest sequence number used by a replayed batch.
    pub last_seq: u64,
}

/// Replays the log at `path`, calling `apply(seq, op)` for every operation
/// of every intact record in order.
pub(crate) fn replay(path: &Path, mut apply: impl FnMut(u64, &batch::Op<'_>)) -> Result<Recovered> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    replay_bytes(path, &bytes, &mut apply)
}

pub(crate) fn replay_bytes(
    path: &Path,
    bytes: &[u8],
    apply: &mut dyn FnMut(u64, &batch::Op<'_>),
) -> Result<Recovered> {
    let mut out = Recovered::default();
    let zeros = |b: &[u8]| b.iter().all(|&x| x == 0);
    if bytes.len() < HEADER {
        // A crash between creating the file and syncing its header.
        if zeros(bytes) || MAGIC.starts_with(&bytes[..bytes.len().min(8)]) {
            out.torn_bytes = bytes.len() as u64;
            return Ok(out);
        }
        return Err(Error::corrupt(
            path,
            0,
            "WAL header is truncated and not a torn write",
        ));
    }
    if &bytes[..8] != MAGIC {
        if zeros(&bytes[..HEADER]) && zeros(bytes) {
            out.torn_bytes = bytes.len() as u64;
            return Ok(out);
        }
        return Err(Error::corrupt(
            path,
            0,
            "bad WAL magic (expected \"PITHWAL\\0\")",
        ));
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    let stored = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
    if crc32c::crc32c(&bytes[..12]) != stored {
        return Err(Error::corrupt(path, 12, "WAL header checksum mismatch"));
    }
    if version != VERSION {
        return Err(Error::UnsupportedVersion {
            path: path.to_path_buf(),
            expected: VERSION,
            found: version,
        });
    }
    let mut pos = HEADER;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        let torn = |out: &mut Recovered| {
            out.torn_bytes = rest.len() as u64;
        };
        if rest.len() < 8 {
            torn(&mut out);
            break;
        }
        let crc = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let len = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]) as usize;
        if 8 + len > rest.len() {
            // The record runs past the end: the append was cut short --
            // unless an intact record follows, in which case the length
            // itself is damaged and dropping the rest would lose writes.
            if let Some(at) = intact_record_within(&rest[8..], out.last_seq) {
                return Err(Error::corrupt(
                    path,
                    pos as u64,
                    format!("WAL record claims {len} bytes, past the end of the log, but an intact record starts at offset {}", pos + 8 + at),
                ));
            }
            torn(&mut out);
            break;
        }
        let end = 8 + len;
        let computed = crc32c::crc32c(&rest[4..end]);
        if computed != crc {
            if end == rest.len() || zeros(rest) || zeros(&rest[end..]) {
                torn(&mut out);
                break;
            }
            return Err(Error::corrupt(
                path,
                pos as u64,
                format!("WAL record checksum mismatch (stored {crc:#010x}, computed {computed:#010x}) with intact records after it"),
            ));
        }
        let Some(parsed) = batch::parse(&rest[8..end]) else {
            return Err(Error::corrupt(
                path,
                pos as u64,
                "WAL record has a valid checksum but is not a well-formed write batch",
            ));
        };
        let last = parsed.seq.checked_add(parsed.ops.len() as u64);
        if parsed.seq == 0 || last.is_none_or(|l| l > MAX_SEQ) {
            return Err(Error::corrupt(
                path,
                pos as u64,
                format!(
                    "WAL record has an impossible sequence number {}",
                    parsed.seq
                ),
            ));
        }
        for (i, op) in parsed.ops.iter().enumerate() {
            apply(parsed.seq + i as u64, op);
        }
        if !parsed.ops.is_empty() {
            out.last_seq = out.last_seq.max(parsed.seq + parsed.ops.len() as u64 - 1);
        }
        out.records += 1;
        pos += end;
    }
    Ok(out)
}

/// The offset of the first place in `bytes` where a whole record starts
/// whose checksum matches and whose batch parses with a sequence number
/// past `last_seq` (the records replayed so far), if any. Used only on the
/// rare torn path: most offsets are rejected by their length field alone,
/// so the scan costs about one pass over the tail. The sequence check keeps
/// a user value that happens to hold a record's bytes, inside a genuinely
/// torn record, from being taken for a record after it.
fn intact_record_within(bytes: &[u8], last_seq: u64) -> Option<usize> {
    (0..bytes.len().saturating_sub(7)).find(|&q| {
        let h = &bytes[q..];
        let len = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
        len > 0
            && 8 + len <= h.len()
            && crc32c::crc32c(&h[4..8 + len]) == u32::from_le_bytes([h[0], h[1], h[2], h[3]])
            && batch::parse(&h[8..8 + len]).is_some_and(|b| b.seq > last_seq.saturating_add(1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::WriteBatch;

    /// Appends one record framing `payload`, independently of `WalWriter`.
    fn frame(bytes: &mut Vec<u8>, payload: &[u8]) {
        let len = (payload.len() as u32).to_le_bytes();
        let crc = crc32c::crc32c_append(crc32c::crc32c(&len), payload);
        bytes.extend_from_slice(&crc.to_le_bytes());
        bytes.extend_from_slice(&len);
        bytes.extend_from_slice(payload);
    }

    fn log_with(n: usize) -> Vec<u8> {
        let mut bytes = header().to_vec();
        for i in 0..n {
            let mut b = WriteBatch::new();
            b.put(format!("k{i}"), format!("v{i}"));
            frame(&mut bytes, b.encode_with_seq(i as u64 + 1));
        }
        bytes
    }

    fn count(bytes: &[u8]) -> Result<Recovered> {
        replay_bytes(Path::new("test.wal"), bytes, &mut |_, _| {})
    }

    #[test]
    fn every_truncation_is_a_clean_torn_tail() {
        let full = log_with(5);
        let full_n = count(&full).expect("intact").records;
        assert_eq!(full_n, 5);
        let mut last = 0;
        for cut in 0..full.len() {
            let r = count(&full[..cut]).expect("a truncated log is a torn tail");
            assert!(r.records >= last && r.records <= 5);
            last = r.records;
        }
    }

    #[test]
    fn zero_filled_tail_is_torn() {
        let mut bytes = log_with(3);
        bytes.extend_from_slice(&[0u8; 100]);
        let r = count(&bytes).expect("zeros are a torn tail");
        assert_eq!((r.records, r.torn_bytes), (3, 100));
    }

    #[test]
    fn a_length_flipped_past_the_end_is_corruption_not_a_tear() {
        let bytes = log_with(5);
        let mut f = bytes.clone();
        // The first record's length, high byte: now it runs past the end.
        f[HEADER + 7] ^= 0x10;
        let e = count(&f).expect_err("records after the damaged one must not be dropped");
        assert!(e.is_corruption(), "{e}");
        // A real tear (the last record cut short) is still a tear.
        let r = count(&bytes[..bytes.len() - 3]).expect("a cut last record is torn");
        assert_eq!(r.records, 4);
    }

    #[test]
    fn a_record_framed_inside_a_torn_value_is_not_taken_for_a_later_one() {
        // A value holding the bytes of a valid record (seq 1), inside a last
        // record (seq 3) cut short: still a tear.
        let inner = log_with(1)[HEADER..].to_vec();
        let mut bytes = log_with(2);
        let mut b = WriteBatch::new();
        b.put("x", &inner);
        frame(&mut bytes, b.encode_with_seq(3));
        bytes.pop();
        let r = count(&bytes).expect("a cut last record is torn");
        assert_eq!(r.records, 2);
    }

    #[test]
    fn flip_in_the_middle_is_corruption() {
        let bytes = log_with(5);
        let mut f = bytes.clone();
        f[HEADER + 10] ^= 0x40;
        let e = count(&f).expect_err("a mid-log flip must be reported");
        assert!(e.is_corruption(), "{e}");
        // Any single flip gives an error or at most the intact prefix.
        for i in 0..bytes.len() {
            let mut f = bytes.clone();
            f[i] ^= 0x01;
            if let Ok(r) = count(&f) {
                assert!(r.records <= 5);
            }
        }
    }
}
