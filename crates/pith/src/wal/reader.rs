//! Replays a log at recovery, telling a torn tail from corruption.
//!
//! A crash during an append leaves the log *shortened*: the last records
//! are missing or cut short (the file system keeps a prefix of unsynced
//! writes, possibly cut at a sector boundary), or the unwritten sectors
//! read as zeros. It does not leave a whole record with wrong bytes. So:
//!
//! * a record whose header or payload runs past the end of the file is a
//!   torn tail, unless an intact record that continues the sequence
//!   follows it (then its length field is damaged: corruption);
//! * a whole record whose checksum fails is a torn tail only when the
//!   file ends in zeros from a sector boundary inside that record
//!   (unwritten sectors); otherwise it is corruption, reported with the
//!   file and offset, never silently skipped.
//!
//! "Continues the sequence": a follower's first sequence number must be
//! exactly the torn record's (read from its own payload header) plus its
//! operation count, when that header is plausible (above the floor: the
//! last sequence number before this log); otherwise any sequence number
//! above the floor that the remaining bytes could reach. The search first
//! compares eight bytes at each offset and checksums only candidates, and
//! gives up with a corruption error past a budget of checksummed bytes, so
//! crafted logs cannot make recovery quadratic.

use std::path::Path;

use pith_enc::le;

use crate::batch;
use crate::dbformat::MAX_SEQ;
use crate::env::Fs;
use crate::error::{Error, Result};
use crate::wal::{HEADER, MAGIC, RECORD_HEADER, VERSION};

/// Sector size: unwritten sectors after a crash read as zeros from a
/// multiple of it.
const SECTOR: usize = 512;

/// What recovery found in one log.
#[derive(Debug, Default)]
pub(crate) struct Recovered {
    /// Records replayed.
    pub records: u64,
    /// Bytes dropped as a torn tail (0 when the log ended cleanly).
    pub torn_bytes: u64,
    /// Highest sequence number used by a replayed batch (0: none).
    pub last_seq: u64,
}

/// Replays the log at `path`, calling `apply(seq, op)` for every operation
/// of every intact record in order. `floor` is the highest sequence number
/// known before this log (its records must be above it to be followers).
pub(crate) fn replay(
    fs: &dyn Fs,
    path: &Path,
    floor: u64,
    mut apply: impl FnMut(u64, &batch::Op<'_>),
) -> Result<Recovered> {
    let bytes = fs.read(path).map_err(|e| Error::io(path, e))?;
    replay_bytes(path, &bytes, floor, &mut apply)
}

fn zeros(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

/// Replays log bytes; see [`replay`].
pub(crate) fn replay_bytes(
    path: &Path,
    bytes: &[u8],
    floor: u64,
    apply: &mut dyn FnMut(u64, &batch::Op<'_>),
) -> Result<Recovered> {
    let mut out = Recovered::default();
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
        if zeros(bytes) {
            out.torn_bytes = bytes.len() as u64;
            return Ok(out);
        }
        return Err(Error::corrupt(
            path,
            0,
            "bad WAL magic (expected \"PITHWAL\\0\")",
        ));
    }
    // At least HEADER bytes, checked above.
    let version = le::u32_at(bytes, 8).unwrap_or(0);
    let stored = le::u32_at(bytes, 12).unwrap_or(0);
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
    // Start of the zero-filled tail, from a sector boundary (len: none).
    let zero_tail = {
        let nonzero_end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        nonzero_end.next_multiple_of(SECTOR).min(bytes.len())
    };
    let mut pos = HEADER;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        let floor_now = floor.max(out.last_seq);
        if rest.len() < RECORD_HEADER {
            out.torn_bytes = rest.len() as u64;
            break;
        }
        // At least RECORD_HEADER bytes, checked above.
        let crc = le::u32_at(rest, 0).unwrap_or(0);
        let len = le::u32_at(rest, 4).unwrap_or(0) as usize;
        let end = RECORD_HEADER.saturating_add(len);
        if end > rest.len() {
            // The record runs past the end: the append was cut short --
            // unless an intact record continuing the sequence follows, in
            // which case the length itself is damaged.
            match follower(rest, floor_now) {
                Follower::None => {}
                Follower::At(at) => {
                    return Err(Error::corrupt(
                        path,
                        pos as u64,
                        format!("WAL record claims {len} bytes, past the end of the log, but an intact record continuing the sequence starts at offset {}", pos + at),
                    ));
                }
                Follower::GaveUp => {
                    return Err(Error::corrupt(
                        path,
                        pos as u64,
                        "WAL record runs past the end of the log and the bytes after it are too ambiguous to call it a torn tail",
                    ));
                }
            }
            out.torn_bytes = rest.len() as u64;
            break;
        }
        let computed = crc32c::crc32c(&rest[4..end]);
        if computed != crc {
            if zero_tail < pos + end && end == rest.len() || zeros(rest) {
                out.torn_bytes = rest.len() as u64;
                break;
            }
            return Err(Error::corrupt(
                path,
                pos as u64,
                format!("WAL record checksum mismatch (stored {crc:#010x}, computed {computed:#010x}); a crash shortens a log, it does not change a whole record"),
            ));
        }
        let Some(parsed) = batch::parse(&rest[RECORD_HEADER..end]) else {
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

enum Follower {
    None,
    At(usize),
    GaveUp,
}

/// Looks in `rest` (a record that runs past the end, and what follows)
/// for an intact record that continues the sequence; see the module docs.
fn follower(rest: &[u8], floor: u64) -> Follower {
    use le::{u32_at, u64_at};
    // The torn record's own payload header, if it is plausible.
    let own = u64_at(rest, RECORD_HEADER)
        .zip(u32_at(rest, RECORD_HEADER + 8))
        .filter(|&(seq, _)| seq > floor && seq < MAX_SEQ);
    // Each operation takes at least two bytes, so no follower's sequence
    // number can be further above the floor than the bytes left.
    let reach = floor.saturating_add(rest.len() as u64);
    let wanted = |seq: u64| match own {
        Some((s, n)) => seq == s + u64::from(n),
        None => seq > floor && seq <= reach,
    };
    let mut budget = 2 * rest.len() + (1 << 20);
    let seq_at = RECORD_HEADER;
    for q in RECORD_HEADER..rest.len().saturating_sub(RECORD_HEADER + batch::HEADER - 1) {
        let h = &rest[q..];
        if !u64_at(h, seq_at).is_some_and(wanted) {
            continue;
        }
        let Some(len) = u32_at(h, 4).map(|l| l as usize) else {
            continue;
        };
        if len < batch::HEADER || RECORD_HEADER + len > h.len() {
            continue;
        }
        if budget < len {
            return Follower::GaveUp;
        }
        budget -= len;
        let whole = &h[..RECORD_HEADER + len];
        let crc_ok = u32_at(whole, 0) == Some(crc32c::crc32c(&whole[4..]));
        if crc_ok && batch::parse(&whole[RECORD_HEADER..]).is_some() {
            return Follower::At(q);
        }
    }
    Follower::None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::WriteBatch;
    use crate::wal::{frame, header};

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
        replay_bytes(Path::new("test.wal"), bytes, 0, &mut |_, _| {})
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

    #[test]
    fn a_flip_in_the_last_record_is_corruption_not_a_tear() {
        // The last record ends exactly at the end of the file: a crash
        // cannot leave it whole with wrong bytes.
        let bytes = log_with(3);
        for i in bytes.len() - 6..bytes.len() {
            let mut f = bytes.clone();
            f[i] ^= 0x04;
            let e = count(&f).expect_err("an acknowledged record must not vanish");
            assert!(e.is_corruption(), "{e}");
        }
    }

    #[test]
    fn unwritten_sectors_at_the_end_are_a_tear() {
        // A last record whose end fell in sectors the disk never wrote.
        let mut bytes = log_with(2);
        let mut b = WriteBatch::new();
        b.put("big", vec![0x55u8; 3000]);
        frame(&mut bytes, b.encode_with_seq(3));
        let from = (bytes.len() - 1500).next_multiple_of(SECTOR);
        bytes[from..].fill(0);
        let r = count(&bytes).expect("zeros from a sector boundary are a tear");
        assert_eq!(r.records, 2);
        assert!(r.torn_bytes > 0);
    }

    #[test]
    fn a_follower_must_continue_the_torn_records_sequence() {
        // A torn record (seq 3) whose value embeds a valid record with a
        // later but not continuing sequence number (seq 9): still a tear.
        let mut embedded = Vec::new();
        let mut e = WriteBatch::new();
        e.put("e", "v");
        frame(&mut embedded, e.encode_with_seq(9));
        let mut bytes = log_with(2);
        let mut b = WriteBatch::new();
        b.put("x", &embedded);
        frame(&mut bytes, b.encode_with_seq(3));
        bytes.pop();
        let r = count(&bytes).expect("not a continuation");
        assert_eq!(r.records, 2);
        // One that does continue it (seq 4, after the torn one-op batch at
        // 3) marks a damaged length: corruption.
        let mut bytes = log_with(4);
        let third = HEADER + (bytes.len() - HEADER) / 4 * 2;
        bytes[third + 7] ^= 0x20;
        let e = count(&bytes).expect_err("damaged length with a continuing follower");
        assert!(e.is_corruption(), "{e}");
    }

    #[test]
    fn the_continuation_floor_carries_over_from_earlier_logs() {
        // A log whose records start at 101 (after an earlier log ended at
        // 100); its first record's length is damaged.
        let mut bytes = header().to_vec();
        for i in 0..3u64 {
            let mut b = WriteBatch::new();
            b.put(format!("k{i}"), "v");
            frame(&mut bytes, b.encode_with_seq(101 + i));
        }
        bytes[HEADER + 7] ^= 0x40;
        let e = replay_bytes(Path::new("t.wal"), &bytes, 100, &mut |_, _| {})
            .expect_err("the follower at 102 continues the torn record at 101");
        assert!(e.is_corruption(), "{e}");
    }

    #[test]
    fn crafted_tails_give_up_instead_of_going_quadratic() {
        // After one record, a torn header with no plausible sequence number,
        // then 4 MiB of record headers that each claim a 1 MiB payload and
        // carry a plausible one: checking every candidate would checksum
        // terabytes. The scan spends its budget and reports corruption.
        let mut bytes = header().to_vec();
        let mut b = WriteBatch::new();
        b.put("k", "v");
        frame(&mut bytes, b.encode_with_seq(1));
        bytes.extend_from_slice(&[0xff; 8]);
        bytes.extend_from_slice(&[0; 12]);
        while bytes.len() < 4 << 20 {
            let mut h = [0u8; 20];
            h[4..8].copy_from_slice(&(1u32 << 20).to_le_bytes());
            h[8..16].copy_from_slice(&2u64.to_le_bytes());
            bytes.extend_from_slice(&h);
        }
        let e = count(&bytes).expect_err("ambiguous tail");
        assert!(e.is_corruption(), "{e}");
    }
}
