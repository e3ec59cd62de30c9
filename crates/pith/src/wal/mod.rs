//! The write-ahead log: one file per memtable, append-only.
//!
//! Layout (little-endian; `docs/format.md`, "WAL"):
//!
//! ```text
//! header: "PITHWAL\0" | version u32 (1) | crc32c of the previous 12 bytes u32
//! record: crc32c u32 | len u32 | payload (len bytes, a write batch)
//! ```
//!
//! The record checksum covers the four `len` bytes and the payload. The
//! writer (`writer.rs`) appends a group commit's records with one call and
//! syncs once when any of them asked for `sync`; the reader (`reader.rs`)
//! replays them at recovery and tells a torn tail from corruption.

mod reader;
mod writer;

pub(crate) use reader::{replay, replay_bytes};
pub(crate) use writer::WalWriter;

pub(crate) const MAGIC: &[u8; 8] = b"PITHWAL\0";
pub(crate) const VERSION: u32 = 1;
pub(crate) const HEADER: usize = 16;
/// Bytes before a record's payload: crc32c and length.
pub(crate) const RECORD_HEADER: usize = 8;
/// Largest payload a record may claim (a batch of up to 1 GiB).
pub(crate) const MAX_RECORD: usize = 1 << 30;

/// The file header.
pub(crate) fn header() -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    let crc = crc32c::crc32c(&h[..12]);
    h[12..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Appends one record framing `payload` (at most [`MAX_RECORD`] bytes).
pub(crate) fn frame(out: &mut Vec<u8>, payload: &[u8]) {
    let len = (payload.len() as u32).to_le_bytes();
    let crc = crc32c::crc32c_append(crc32c::crc32c(&len), payload);
    pith_enc::le::put_u32(out, crc);
    out.extend_from_slice(&len);
    out.extend_from_slice(payload);
}
