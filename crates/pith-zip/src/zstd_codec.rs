//! Per-record zstd frames against a shared dictionary.
//!
//! Frames are written magicless (the 4-byte magic is implied by the store's
//! codec tag), without dictionary id or checksum (the store has its own
//! crc32c per record), but with the content size, which the reader parses
//! from the frame header to size its output exactly. What remains per record
//! is about 2 to 4 bytes of frame header and 3 bytes of block header.
//!
//! Decoding uses a prepared dictionary (`ZSTD_DDict`) shared by all threads
//! and one decompression context per thread, so a `get` allocates nothing.

use std::cell::RefCell;

use zstd::zstd_safe::{self, CParameter, DParameter, FrameFormat};

use pith_enc::le;

use crate::error::{Error, Result};
use crate::format::MAX_EXPANSION;

fn zerr(code: usize) -> Error {
    Error::Zstd(zstd_safe::get_error_name(code).to_string())
}

/// Compresses records one by one against `dict`.
pub(crate) struct Encoder {
    cctx: zstd_safe::CCtx<'static>,
    scratch: Vec<u8>,
}

impl Encoder {
    pub(crate) fn new(dict: &[u8], level: i32) -> Result<Self> {
        let mut cctx = zstd_safe::CCtx::create();
        for p in [
            CParameter::CompressionLevel(level),
            CParameter::Format(FrameFormat::Magicless),
            CParameter::ContentSizeFlag(true),
            CParameter::ChecksumFlag(false),
            CParameter::DictIdFlag(false),
        ] {
            cctx.set_parameter(p).map_err(zerr)?;
        }
        cctx.load_dictionary(dict).map_err(zerr)?;
        Ok(Encoder {
            cctx,
            scratch: Vec::new(),
        })
    }

    /// Appends the frame for `record` to `out`.
    pub(crate) fn encode(&mut self, record: &[u8], out: &mut Vec<u8>) -> Result<()> {
        self.scratch.clear();
        self.scratch
            .reserve(zstd_safe::compress_bound(record.len()));
        self.cctx
            .compress2(&mut self.scratch, record)
            .map_err(zerr)?;
        out.extend_from_slice(&self.scratch);
        Ok(())
    }
}

/// Content size from a magicless frame header, if the header holds one.
pub(crate) fn content_size(frame: &[u8]) -> Option<u64> {
    let fhd = *frame.first()?;
    let fcs_flag = fhd >> 6;
    let single_segment = (fhd >> 5) & 1 == 1;
    let dict_id_len = [0usize, 1, 2, 4][(fhd & 3) as usize];
    let at = 1 + usize::from(!single_segment) + dict_id_len;
    let fcs_len = match (fcs_flag, single_segment) {
        (0, true) => 1,
        (0, false) => return None,
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let field = frame.get(at..at + fcs_len)?;
    let v = le::u64_padded(field);
    Some(if fcs_len == 2 { v + 256 } else { v })
}

/// The prepared dictionary of an opened store.
pub(crate) struct Decoder {
    ddict: zstd_safe::DDict<'static>,
}

thread_local! {
    static DCTX: RefCell<Option<zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
}

impl Decoder {
    /// `None` when zstd rejects the dictionary.
    pub(crate) fn new(dict: &[u8]) -> Option<Self> {
        Some(Decoder {
            ddict: zstd_safe::DDict::try_create(dict)?,
        })
    }

    /// Replaces `out` with the decoded frame; `max` bounds the content size.
    pub(crate) fn decode(&self, frame: &[u8], max: u64, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let size = content_size(frame)
            .ok_or_else(|| Error::Zstd("frame header lacks the content size".into()))?;
        let bound = (frame.len() as u64 + 1).saturating_mul(MAX_EXPANSION);
        if size > bound {
            return Err(Error::Zstd(format!(
                "a {}-byte frame claims {size} bytes",
                frame.len()
            )));
        }
        if size > max {
            return Err(Error::Zstd(format!(
                "frame claims {size} bytes, more than the store's largest record ({max})"
            )));
        }
        // try_reserve: a crafted size must give an error, never an abort.
        let size_usize =
            usize::try_from(size).map_err(|_| Error::Zstd(format!("frame claims {size} bytes")))?;
        out.try_reserve(size_usize)
            .map_err(|_| Error::Zstd(format!("cannot allocate {size} bytes for a record")))?;
        let mut run = |cell: &RefCell<Option<zstd_safe::DCtx<'static>>>| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                let mut d = zstd_safe::DCtx::create();
                d.set_parameter(DParameter::Format(FrameFormat::Magicless))
                    .map_err(zerr)?;
                *slot = Some(d);
            }
            let dctx = slot
                .as_mut()
                .ok_or_else(|| Error::Zstd("no decompression context".into()))?;
            let n = dctx
                .decompress_using_ddict(out, frame, &self.ddict)
                .map_err(zerr)?;
            if n as u64 != size {
                return Err(Error::Zstd(format!(
                    "frame decoded to {n} bytes, header said {size}"
                )));
            }
            Ok(())
        };
        // During thread teardown the thread-local is gone; use a fresh one.
        match DCTX.try_with(|cell| run(cell)) {
            Ok(result) => result,
            Err(_) => run(&RefCell::new(None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_size_follows_the_frame_header() {
        let mut enc = Encoder::new(&[], 3).unwrap();
        for len in [0usize, 1, 255, 256, 300, 65_791, 70_000, 1 << 20] {
            let record = vec![7u8; len];
            let mut frame = Vec::new();
            enc.encode(&record, &mut frame).unwrap();
            assert_eq!(content_size(&frame), Some(len as u64), "len {len}");
            let mut out = Vec::new();
            Decoder::new(&[])
                .unwrap()
                .decode(&frame, len as u64, &mut out)
                .unwrap();
            assert_eq!(out, record);
            if len > 0 {
                // One byte above the store's largest record is rejected.
                assert!(Decoder::new(&[])
                    .unwrap()
                    .decode(&frame, len as u64 - 1, &mut out)
                    .is_err());
            }
        }
    }

    #[test]
    fn absurd_claimed_sizes_are_errors_not_aborts() {
        // Frame header: 8-byte content size, single segment; then garbage.
        for claimed in [u64::MAX, u64::MAX / 2, 1 << 45] {
            let mut frame = vec![0xE0];
            frame.extend_from_slice(&claimed.to_le_bytes());
            frame.extend_from_slice(&[0, 0, 0]);
            let mut out = Vec::new();
            assert!(Decoder::new(&[])
                .unwrap()
                .decode(&frame, u64::MAX, &mut out)
                .is_err());
        }
        assert_eq!(content_size(&[]), None);
        assert_eq!(content_size(&[0xC0]), None);
    }
}
