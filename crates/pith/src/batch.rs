//! Write batches: a group of puts and deletes applied atomically.
//!
//! A batch keeps its operations already encoded, in the byte form the
//! write-ahead log stores (see `docs/format.md`, "WAL"):
//!
//! ```text
//! seq u64 | count u32 | count x op
//! op: 0 | key_len varint | key                                          a delete
//!     1 | key_len varint | key | value_len varint | value                 a put
//!     2 | key_len varint | key | deadline u64 | value_len varint | value  a put that expires
//!     3 | family varint | op (0, 1 or 2)                                 an op in a column family
//! ```
//!
//! The first byte of an operation says what it is: 1 is a put, 2 a put
//! with a deadline (milliseconds since the Unix epoch, little-endian; see
//! `clock.rs`), 0 a delete, each in the default family; 3 puts the
//! operation that follows in column family `family` (never 0, at most
//! `u32::MAX`). Logs written before expiry or families existed hold no 2
//! or 3, and a batch of the default family only is written as before, so
//! they read unchanged. The
//! batch's operations get sequence numbers `seq, seq + 1, ...` in order, so
//! a later operation on the same key wins. Parsing never panics: malformed
//! bytes give `None` from [`parse`].

use pith_enc::{le, varint};

use crate::dbformat::{Kind, NO_DEADLINE};
use crate::family::{ColumnFamily, DEFAULT};

pub(crate) const HEADER: usize = 12;

/// The first byte of a put with a deadline in the log.
const PUT_EXPIRING: u8 = 2;
/// The first byte of an operation in a column family other than the
/// default.
const IN_FAMILY: u8 = 3;

/// A group of writes applied atomically by [`crate::DB::write`], in one
/// column family or several.
#[derive(Clone, Debug)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    /// The families other than the default that operations are in, each
    /// once (for the write path's check, and its error's name).
    families: Vec<ColumnFamily>,
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
            families: Vec::new(),
        }
    }

    /// Adds a put of `value` under `key`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.push_put(DEFAULT, key.as_ref(), value.as_ref())
    }

    /// Adds a put of `value` under `key` in column family `cf`.
    pub fn put_cf(
        &mut self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> &mut Self {
        self.note(cf);
        self.push_put(cf.id, key.as_ref(), value.as_ref())
    }

    /// Remembers that an operation is in `cf`.
    fn note(&mut self, cf: &ColumnFamily) {
        if cf.id != DEFAULT && !self.families.iter().any(|f| f.id == cf.id) {
            self.families.push(cf.clone());
        }
    }

    /// Starts an operation of `kind` in `family`: its first bytes, and
    /// the key.
    fn start(&mut self, family: u32, kind: u8, key: &[u8]) {
        if family != DEFAULT {
            self.rep.push(IN_FAMILY);
            varint::put(&mut self.rep, u64::from(family));
        }
        self.rep.push(kind);
        varint::put(&mut self.rep, key.len() as u64);
        self.rep.extend_from_slice(key);
    }

    fn push_put(&mut self, family: u32, key: &[u8], value: &[u8]) -> &mut Self {
        self.start(family, Kind::Put as u8, key);
        varint::put(&mut self.rep, value.len() as u64);
        self.rep.extend_from_slice(value);
        self.bump();
        self
    }

    /// Adds a put of `value` under `key` that expires at `deadline_ms`
    /// (milliseconds since the Unix epoch): from that millisecond on, by
    /// the database's clock ([`crate::Options::clock`]), every read sees
    /// the key as absent, and flushes and merges drop the value. A later
    /// write of the key replaces the deadline with its own (or with none).
    pub fn put_expiring(
        &mut self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        deadline_ms: u64,
    ) -> &mut Self {
        self.push_put_expiring(DEFAULT, key.as_ref(), value.as_ref(), deadline_ms)
    }

    /// [`WriteBatch::put_expiring`] in column family `cf`.
    pub fn put_expiring_cf(
        &mut self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        deadline_ms: u64,
    ) -> &mut Self {
        self.note(cf);
        self.push_put_expiring(cf.id, key.as_ref(), value.as_ref(), deadline_ms)
    }

    fn push_put_expiring(
        &mut self,
        family: u32,
        key: &[u8],
        value: &[u8],
        deadline_ms: u64,
    ) -> &mut Self {
        // u64::MAX is the engine's "no deadline"; a deadline that far away
        // means the same.
        if deadline_ms == NO_DEADLINE {
            return self.push_put(family, key, value);
        }
        self.start(family, PUT_EXPIRING, key);
        self.rep.extend_from_slice(&deadline_ms.to_le_bytes());
        varint::put(&mut self.rep, value.len() as u64);
        self.rep.extend_from_slice(value);
        self.bump();
        self
    }

    /// Adds a delete of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.push_delete(DEFAULT, key.as_ref())
    }

    /// Adds a delete of `key` in column family `cf`.
    pub fn delete_cf(&mut self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> &mut Self {
        self.note(cf);
        self.push_delete(cf.id, key.as_ref())
    }

    fn push_delete(&mut self, family: u32, key: &[u8]) -> &mut Self {
        self.start(family, Kind::Delete as u8, key);
        self.bump();
        self
    }

    fn bump(&mut self) {
        self.count += 1;
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
    }

    /// Appends every operation of `other`, in order (after this batch's
    /// own, so they win over them on the same key).
    pub fn append(&mut self, other: &WriteBatch) -> &mut Self {
        self.rep.extend_from_slice(&other.rep[HEADER..]);
        self.count += other.count;
        for cf in &other.families {
            self.note(cf);
        }
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
        self
    }

    /// The operations, in the order they were added (LevelDB's
    /// `WriteBatch::Iterate`).
    pub fn iter(&self) -> impl Iterator<Item = BatchOp<'_>> + '_ {
        self.ops().map(|op| match op.kind {
            Kind::Put => BatchOp::Put {
                family: op.family,
                key: op.key,
                value: op.value,
                deadline: (op.deadline != NO_DEADLINE).then_some(op.deadline),
            },
            Kind::Delete => BatchOp::Delete {
                family: op.family,
                key: op.key,
            },
        })
    }

    /// The column families the operations are in, other than the
    /// default, each once, in the order first used.
    pub(crate) fn families(&self) -> &[ColumnFamily] {
        &self.families
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
        self.families.clear();
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

/// One operation of a [`WriteBatch`], as [`WriteBatch::iter`] shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// A put of `value` under `key`, expiring at `deadline` (milliseconds
    /// since the Unix epoch) if it has one.
    Put {
        /// The column family's id (0: the default family).
        family: u32,
        /// The key.
        key: &'a [u8],
        /// The value.
        value: &'a [u8],
        /// When the key expires, if it does.
        deadline: Option<u64>,
    },
    /// A delete of `key`.
    Delete {
        /// The column family's id (0: the default family).
        family: u32,
        /// The key.
        key: &'a [u8],
    },
}

/// One operation of a batch.
pub(crate) struct Op<'a> {
    /// The column family's id.
    pub family: u32,
    pub kind: Kind,
    pub key: &'a [u8],
    pub value: &'a [u8],
    /// When a put expires ([`NO_DEADLINE`] for never and for deletes).
    pub deadline: u64,
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
        let (family, k, rest) = match k {
            IN_FAMILY => {
                let (family, rest) = varint::get(rest)?;
                let family = u32::try_from(family).ok().filter(|&f| f != DEFAULT)?;
                let (&k, rest) = rest.split_first()?;
                (family, k, rest)
            }
            k => (DEFAULT, k, rest),
        };
        let (key, rest) = take_prefixed(rest)?;
        let (kind, deadline, rest) = match k {
            PUT_EXPIRING => {
                let deadline = le::u64_at(rest, 0).filter(|&d| d != NO_DEADLINE)?;
                (Kind::Put, deadline, &rest[8..])
            }
            k => (Kind::from_u8(k)?, NO_DEADLINE, rest),
        };
        let (value, rest) = match kind {
            Kind::Put => take_prefixed(rest)?,
            Kind::Delete => (&[][..], rest),
        };
        self.rest = rest;
        self.left -= 1;
        Some(Op {
            family,
            kind,
            key,
            value,
            deadline,
        })
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
    fn a_put_keeps_its_deadline_and_no_deadline_costs_nothing() {
        let mut b = WriteBatch::new();
        b.put_expiring("k", "v", 1_700_000_000_000)
            .put("k", "v")
            .put_expiring("k", "v", NO_DEADLINE);
        let bytes = b.encode_with_seq(1).to_vec();
        // kind, key length, key, deadline, value length, value
        assert_eq!(bytes[HEADER], 2);
        assert_eq!(
            &bytes[HEADER + 3..HEADER + 11],
            &1_700_000_000_000u64.to_le_bytes()
        );
        let p = parse(&bytes).expect("parses");
        let deadlines: Vec<u64> = p.ops.iter().map(|o| o.deadline).collect();
        assert_eq!(deadlines, vec![1_700_000_000_000, NO_DEADLINE, NO_DEADLINE]);
        assert!(p.ops.iter().all(|o| o.kind == Kind::Put && o.value == b"v"));
        // A deadline costs its 8 bytes; a put without one is unchanged.
        assert_eq!(bytes.len(), HEADER + (1 + 2 + 8 + 2) + 2 * (1 + 2 + 2));
    }

    #[test]
    fn iter_and_append_show_the_operations_in_order() {
        let mut a = WriteBatch::new();
        a.put("k", "1").delete("d");
        let mut b = WriteBatch::new();
        b.put_expiring("k", "2", 99);
        a.append(&b).append(&WriteBatch::new());
        let ops: Vec<BatchOp<'_>> = a.iter().collect();
        assert_eq!(
            ops,
            vec![
                BatchOp::Put {
                    family: 0,
                    key: b"k",
                    value: b"1",
                    deadline: None
                },
                BatchOp::Delete {
                    family: 0,
                    key: b"d"
                },
                BatchOp::Put {
                    family: 0,
                    key: b"k",
                    value: b"2",
                    deadline: Some(99)
                },
            ]
        );
        assert_eq!(a.len(), 3);
        let bytes = a.encode_with_seq(5).to_vec();
        assert_eq!(parse(&bytes).map(|p| p.ops.len()), Some(3));
    }

    #[test]
    fn operations_in_families_carry_their_family_and_default_ones_cost_nothing() {
        let rows = ColumnFamily::new(1, "rows".into());
        let index = ColumnFamily::new(300, "index".into());
        let mut plain = WriteBatch::new();
        plain.put("k", "v").delete("d");
        assert!(plain.families().is_empty());
        let mut b = WriteBatch::new();
        b.put("k", "v")
            .put_cf(&rows, "r", "1")
            .delete_cf(&index, "i")
            .put_expiring_cf(&rows, "e", "2", 77);
        let ids = |b: &WriteBatch| b.families().iter().map(|f| f.id).collect::<Vec<_>>();
        assert_eq!(ids(&b), vec![1, 300]);
        let bytes = b.encode_with_seq(9).to_vec();
        // The default family's put is as before; the others start with 3
        // and the family's varint.
        assert_eq!(&bytes[HEADER..HEADER + 5], &[1, 1, b'k', 1, b'v']);
        assert_eq!(&bytes[HEADER + 5..HEADER + 8], &[3, 1, 1]);
        let p = parse(&bytes).expect("parses");
        let got: Vec<(u32, Kind, &[u8], u64)> = p
            .ops
            .iter()
            .map(|o| (o.family, o.kind, o.key, o.deadline))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Kind::Put, &b"k"[..], NO_DEADLINE),
                (1, Kind::Put, &b"r"[..], NO_DEADLINE),
                (300, Kind::Delete, &b"i"[..], NO_DEADLINE),
                (1, Kind::Put, &b"e"[..], 77),
            ]
        );
        let mut appended = plain.clone();
        appended.append(&b);
        assert_eq!(ids(&appended), vec![1, 300]);
        // Family 0 spelled out, a family past u32, and a nested prefix are
        // malformed.
        for bad in [
            &[3u8, 0, 1, 1, b'k', 0][..],
            &[3, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 1, b'k'],
            &[3, 1, 3, 1, 0, 1, b'k'],
        ] {
            let mut payload = vec![0u8; HEADER];
            payload[8] = 1;
            payload.extend_from_slice(bad);
            assert!(parse(&payload).is_none(), "{bad:?}");
        }
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
