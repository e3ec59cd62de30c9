//! Write batches: a group of puts and deletes applied atomically.
//!
//! A batch keeps its operations already encoded, in the byte form the
//! write-ahead log stores (see `docs/format.md`, "WAL"):
//!
//! ```text
//! seq u64 | count u32 | count x ( kind u8 | key_len varint | key | [value_len varint | value] )
//! ```
//!
//! `kind` is 1 for a put (followed by the value) and 0 for a delete. The
//! batch's operations get sequence numbers `seq, seq + 1, ...` in order, so
//! a later operation on the same key wins. Parsing never panics: malformed
//! bytes give `None` from [`parse`].

use pith_enc::{le, varint};

use crate::dbformat::Kind;

pub(crate) const HEADER: usize = 12;

/// A group of writes applied atomically by [`crate::DB::write`].
#[derive(Clone, Debug)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER],
            count: 0,
        }
    }

    /// Adds a put of `value` under `key`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.rep.push(Kind::Put as u8);
        varint::put(&mut self.rep, key.len() as u64);
        self.rep.extend_from_slice(key);
        varint::put(&mut self.rep, value.len() as u64);
        self.rep.extend_from_slice(value);
        self.bump();
        self
    }

    /// Adds a delete of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        let key = key.as_ref();
        self.rep.push(Kind::Delete as u8);
        varint::put(&mut self.rep, key.len() as u64);
        self.rep.extend_from_slice(key);
        self.bump();
        self
    }

    fn bump(&mut self) {
        self.count += 1;
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER);
        self.rep.fill(0);
        self.count = 0;
    }

    /// Encoded size in bytes (what the log will store).
    pub fn encoded_len(&self) -> usize {
        self.rep.len()
    }

    /// Sets the first sequence number and returns the log payload.
    pub(crate) fn encode_with_seq(&mut self, seq: u64) -> &[u8] {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
        &self.rep
    }

    /// The operations, in order.
    pub(crate) fn ops(&self) -> Ops<'_> {
        Ops {
            rest: &self.rep[HEADER..],
            left: self.count,
        }
    }
}

/// One operation of a batch.
pub(crate) struct Op<'a> {
    pub kind: Kind,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// Iterator over a batch's operations; yields `None` early on bad bytes,
/// which [`parse`] turns into an error by checking the count.
pub(crate) struct Ops<'a> {
    rest: &'a [u8],
    left: u32,
}

impl<'a> Iterator for Ops<'a> {
    type Item = Op<'a>;

    fn next(&mut self) -> Option<Op<'a>> {
        if self.left == 0 {
            return None;
        }
        let (&k, rest) = self.rest.split_first()?;
        let kind = Kind::from_u8(k)?;
        let (key, rest) = take_prefixed(rest)?;
        let (value, rest) = match kind {
            Kind::Put => take_prefixed(rest)?,
            Kind::Delete => (&[][..], rest),
        };
        self.rest = rest;
        self.left -= 1;
        Some(Op { kind, key, value })
    }
}

/// A parsed log payload: first sequence number and operations.
pub(crate) struct Parsed<'a> {
    pub seq: u64,
    pub ops: Vec<Op<'a>>,
}

/// Parses a log payload; `None` if it is malformed (wrong count, bad kind,
/// lengths past the end, trailing bytes).
pub(crate) fn parse(payload: &[u8]) -> Option<Parsed<'_>> {
    if payload.len() < HEADER {
        return None;
    }
    let seq = le::u64_at(payload, 0)?;
    let count = le::u32_at(payload, 8)?;
    let mut it = Ops {
        rest: &payload[HEADER..],
        left: count,
    };
    let mut ops = Vec::with_capacity(count.min(1 << 16) as usize);
    for op in it.by_ref() {
        ops.push(op);
    }
    if it.left != 0 || !it.rest.is_empty() {
        return None;
    }
    Some(Parsed { seq, ops })
}

fn take_prefixed(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = varint::get(b)?;
    let len = usize::try_from(len).ok()?;
    (len <= rest.len()).then(|| rest.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut b = WriteBatch::new();
        b.put("a", "1").delete("b").put("", vec![7u8; 300]);
        let bytes = b.encode_with_seq(42).to_vec();
        let p = parse(&bytes).expect("parses");
        assert_eq!(p.seq, 42);
        assert_eq!(p.ops.len(), 3);
        assert_eq!(p.ops[0].key, b"a");
        assert_eq!(p.ops[0].value, b"1");
        assert_eq!(p.ops[1].kind, Kind::Delete);
        assert_eq!(p.ops[2].value.len(), 300);
    }

    #[test]
    fn malformed_is_rejected_not_panicking() {
        let mut b = WriteBatch::new();
        b.put("key", "value").delete("k2");
        let bytes = b.encode_with_seq(1).to_vec();
        for cut in 0..bytes.len() {
            assert!(parse(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(parse(&extra).is_none());
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut f = bytes.clone();
                f[i] ^= 1 << bit;
                let _ = parse(&f);
            }
        }
    }
}
