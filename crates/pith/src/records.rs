//! [`Records`]: the records of a bulk load, laid out flat, and their key
//! order.
//!
//! A bulk load holds every record in memory until its segment is built,
//! and a table's load holds a family per index and per column group. As
//! a vector of `(Vec<u8>, Vec<u8>)` that was two allocations per record
//! to make and two to free, per family (measured on the bundled tables'
//! load: freeing them alone took 15-70 ms a family), and sorting moved
//! 48-byte elements and followed two pointers per comparison. Here every
//! key and value is appended to one buffer, and a record is two offsets.
//!
//! Invariants: `ends` holds two offsets per record, non-decreasing, the
//! last equal to `bytes.len()`; record `i`'s key is
//! `bytes[ends[2i - 1]..ends[2i]]` (from 0 for the first record) and its
//! value `bytes[ends[2i]..ends[2i + 1]]`.

/// Records for [`crate::DB::bulk_load_families`]: keys and values in one
/// buffer, in the order they were pushed (any order; the load sorts them,
/// and the last of repeated keys wins).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Records {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Records {
    /// The most records [`Records::key_order`] numbers (in 32 bits).
    pub const MAX_ORDERED: usize = u32::MAX as usize;

    /// No records.
    pub fn new() -> Self {
        Self::default()
    }

    /// No records, with room for `records` records of `bytes` key and
    /// value bytes in all.
    pub fn with_capacity(records: usize, bytes: usize) -> Self {
        Records {
            bytes: Vec::with_capacity(bytes),
            ends: Vec::with_capacity(2 * records),
        }
    }

    /// Appends a record.
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        self.push_with(key, |out| out.extend_from_slice(value));
    }

    /// Appends a record whose value `write_value` appends to the buffer
    /// it is given (the batch's own, so the value is written once, in
    /// place). `write_value` must only append: it panics if the buffer
    /// lost bytes that earlier records hold.
    pub fn push_with(&mut self, key: &[u8], write_value: impl FnOnce(&mut Vec<u8>)) {
        self.bytes.extend_from_slice(key);
        let value_start = self.bytes.len();
        self.ends.push(value_start);
        write_value(&mut self.bytes);
        assert!(
            self.bytes.len() >= value_start,
            "Records::push_with: the value writer removed bytes of earlier records"
        );
        self.ends.push(self.bytes.len());
    }

    /// How many records were pushed.
    pub fn len(&self) -> usize {
        self.ends.len() / 2
    }

    /// Whether no record was pushed.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Key and value bytes of all records.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Record `i`'s key. Panics if `i >= len()`.
    pub fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[2 * i - 1] };
        &self.bytes[start..self.ends[2 * i]]
    }

    /// Record `i`'s value. Panics if `i >= len()`.
    pub fn value(&self, i: usize) -> &[u8] {
        &self.bytes[self.ends[2 * i]..self.ends[2 * i + 1]]
    }

    /// The records in the order they were pushed.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + '_ {
        (0..self.len()).map(|i| (self.key(i), self.value(i)))
    }

    /// Record numbers in key order, records of equal keys in the order
    /// they were pushed (a stable sort). Input that is already in order
    /// (a table's rows in primary key order, say) is found so in one pass
    /// and not sorted. Keys are compared by their first eight bytes first,
    /// held beside the record number, so most comparisons read no key.
    ///
    /// For at most [`Records::MAX_ORDERED`] records (the bulk loads refuse
    /// more); numbers past it would not fit.
    pub fn key_order(&self) -> Vec<u32> {
        let n = self.len();
        debug_assert!(n <= Self::MAX_ORDERED);
        if (1..n).all(|i| self.key(i - 1) <= self.key(i)) {
            return (0..n).map(|i| i as u32).collect();
        }
        let mut keyed: Vec<(u64, u32)> = (0..n).map(|i| (prefix(self.key(i)), i as u32)).collect();
        keyed.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| self.key(a.1 as usize).cmp(self.key(b.1 as usize)))
                .then(a.1.cmp(&b.1))
        });
        keyed.into_iter().map(|(_, i)| i).collect()
    }

    /// [`Records::key_order`] with one record per key, the last pushed.
    pub fn last_of_each_key(&self) -> Vec<u32> {
        let mut order = self.key_order();
        let mut kept = 0;
        for i in 0..order.len() {
            let r = order[i];
            if kept > 0 && self.key(order[kept - 1] as usize) == self.key(r as usize) {
                order[kept - 1] = r;
            } else {
                order[kept] = r;
                kept += 1;
            }
        }
        order.truncate(kept);
        order
    }
}

/// The first eight bytes of `key`, big-endian, zero-padded: ordered as
/// the keys are, except that it cannot tell a key from itself followed by
/// zero bytes (the full comparison does).
fn prefix(key: &[u8]) -> u64 {
    pith_enc::le::u64_padded(key).swap_bytes()
}

impl<K: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(K, V)> for Records {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(records: I) -> Self {
        let mut out = Records::new();
        out.extend(records);
        out
    }
}

impl<K: AsRef<[u8]>, V: AsRef<[u8]>> Extend<(K, V)> for Records {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, records: I) {
        for (k, v) in records {
            self.push(k.as_ref(), v.as_ref());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn records_keep_their_keys_and_values() {
        let mut r = Records::with_capacity(3, 16);
        r.push(b"b", b"2");
        r.push_with(b"", |out| out.extend_from_slice(b"empty key"));
        r.push(b"a", b"");
        assert_eq!(r.len(), 3);
        assert_eq!(r.bytes(), 2 + 9 + 1);
        let got: Vec<(&[u8], &[u8])> = r.iter().collect();
        assert_eq!(
            got,
            vec![
                (&b"b"[..], &b"2"[..]),
                (&b""[..], &b"empty key"[..]),
                (&b"a"[..], &b""[..])
            ]
        );
        assert_eq!(r.key_order(), vec![1, 2, 0]);
    }

    #[test]
    fn sorted_input_keeps_its_order_and_repeats() {
        let r: Records = [("a", "1"), ("a", "2"), ("b", "3")].into_iter().collect();
        assert_eq!(r.key_order(), vec![0, 1, 2]);
        assert_eq!(r.last_of_each_key(), vec![1, 2]);
    }

    #[test]
    fn a_key_and_its_zero_padded_twin_differ() {
        // Equal eight-byte prefixes; the full keys decide.
        let r: Records = [(&b"ab\0"[..], &b"x"[..]), (b"ab", b"y"), (b"ab\0\0", b"z")]
            .into_iter()
            .collect();
        assert_eq!(r.key_order(), vec![1, 0, 2]);
    }

    proptest! {
        #[test]
        fn the_order_is_a_stable_sort_and_the_last_write_wins(
            records in prop::collection::vec(
                (prop::collection::vec(0u8..4, 0..12), prop::collection::vec(any::<u8>(), 0..4)),
                0..200,
            )
        ) {
            let r: Records = records.iter().map(|(k, v)| (k, v)).collect();
            let mut stable: Vec<u32> = (0..records.len() as u32).collect();
            stable.sort_by(|&a, &b| records[a as usize].0.cmp(&records[b as usize].0));
            prop_assert_eq!(r.key_order(), stable);
            let model: BTreeMap<&[u8], &[u8]> =
                records.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            let kept: Vec<(&[u8], &[u8])> = r
                .last_of_each_key()
                .into_iter()
                .map(|i| (r.key(i as usize), r.value(i as usize)))
                .collect();
            prop_assert_eq!(kept, model.into_iter().collect::<Vec<_>>());
        }
    }
}
