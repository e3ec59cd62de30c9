//! Per-record deadlines, for the records of a segment that expire.
//!
//! Section layout (segment format version 2; a version 1 file has no
//! deadlines and no such section):
//!
//! ```text
//! count u64 | record_width u64 | base u64 | delta_width u64
//! records: count x record_width bits, packed (pith-enc's `packed`)
//! deltas:  count x delta_width bits, packed
//! ```
//!
//! `records` are the ids of the records with a deadline, strictly
//! increasing; record `records[i]` expires at `base + deltas[i]`
//! (milliseconds since the Unix epoch). Records not listed never expire.
//! Only a put can carry a deadline. A segment without expiring records
//! stores no section at all, so a deadline costs only the records that
//! have one: about `log2(records) + log2(deadline spread)` bits each.
//! A lookup is a binary search of the records: O(log count).
//!
//! Invariants checked by [`Expiry::open`]: widths at most 64, the words
//! exactly fill the section, records strictly increasing and below the
//! segment's record count, `base + delta` never overflows and is never
//! `NO_DEADLINE`.

use pith_enc::packed::{self, Packed};

use crate::dbformat::NO_DEADLINE;

/// Words before the packed arrays.
const FIXED: usize = 4;

/// The section for `deadlines`: (record id, deadline) with ids strictly
/// increasing and no deadline `NO_DEADLINE`. Empty when there are none.
pub(crate) fn pack(deadlines: &[(u64, u64)]) -> Vec<u64> {
    let Some(&(last, _)) = deadlines.last() else {
        return Vec::new();
    };
    let base = deadlines.iter().map(|d| d.1).min().unwrap_or(0);
    let spread = deadlines.iter().map(|d| d.1 - base).max().unwrap_or(0);
    let (record_width, delta_width) = (packed::bits_for(last), packed::bits_for(spread));
    let mut words = vec![
        deadlines.len() as u64,
        u64::from(record_width),
        base,
        u64::from(delta_width),
    ];
    packed::pack_into(&mut words, deadlines.iter().map(|d| d.0), record_width);
    packed::pack_into(
        &mut words,
        deadlines.iter().map(|d| d.1 - base),
        delta_width,
    );
    words
}

/// A validated view of a segment's deadlines (empty for a segment
/// without any).
#[derive(Clone, Copy, Default)]
pub(crate) struct Expiry<'a> {
    records: Option<Packed<'a>>,
    deltas: Option<Packed<'a>>,
    base: u64,
}

impl<'a> Expiry<'a> {
    /// Checks a section for a segment of `records` records; an empty
    /// section means no deadlines.
    pub(crate) fn open(section: &'a [u64], records: u64) -> Result<Self, String> {
        if section.is_empty() {
            return Ok(Expiry::default());
        }
        let Some(&[count, record_width, base, delta_width]) = section.first_chunk::<FIXED>() else {
            return Err(format!(
                "expiry section of {} words is too short",
                section.len()
            ));
        };
        let count = usize::try_from(count)
            .ok()
            .filter(|&c| c > 0 && c as u64 <= records)
            .ok_or_else(|| format!("{count} deadlines for {records} records"))?;
        if record_width > 64 || delta_width > 64 {
            return Err(format!(
                "expiry widths {record_width} and {delta_width} exceed 64 bits"
            ));
        }
        let (rw, dw) = (record_width as u32, delta_width as u32);
        let rest = &section[FIXED..];
        let need_records = packed::words_for(count, rw).ok_or("expiry bits overflow")?;
        let need_deltas = packed::words_for(count, dw).ok_or("expiry bits overflow")?;
        if rest.len() != need_records + need_deltas {
            return Err(format!(
                "{} expiry words for {count} deadlines of {rw} + {dw} bits",
                rest.len()
            ));
        }
        let (r, d) = rest.split_at(need_records);
        let ids = Packed::new(r, count, rw).ok_or("expiry records do not fit")?;
        let deltas = Packed::new(d, count, dw).ok_or("expiry deltas do not fit")?;
        let mut previous = None;
        for i in 0..count {
            let id = ids.get(i);
            if id >= records || previous.is_some_and(|p| p >= id) {
                return Err(format!(
                    "expiring record {id} is out of order or not below the record count {records}"
                ));
            }
            previous = Some(id);
            if base
                .checked_add(deltas.get(i))
                .is_none_or(|d| d == NO_DEADLINE)
            {
                return Err(format!("deadline of record {id} overflows"));
            }
        }
        Ok(Expiry {
            records: Some(ids),
            deltas: Some(deltas),
            base,
        })
    }

    /// Record `r`'s deadline, `NO_DEADLINE` when it has none.
    pub(crate) fn deadline(&self, r: u64) -> u64 {
        let (Some(ids), Some(deltas)) = (self.records, self.deltas) else {
            return NO_DEADLINE;
        };
        let (mut lo, mut hi) = (0, ids.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match ids.get(mid).cmp(&r) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return self.base + deltas.get(mid),
            }
        }
        NO_DEADLINE
    }

    /// Records with a deadline.
    pub(crate) fn len(&self) -> u64 {
        self.records.map_or(0, |r| r.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_records_without_a_deadline() {
        assert!(pack(&[]).is_empty());
        let none = Expiry::open(&[], 10).expect("empty");
        assert_eq!((none.len(), none.deadline(3)), (0, NO_DEADLINE));
        for (spread, step) in [(0u64, 1u64), (1, 3), (86_400_000, 7), (1 << 50, 1000)] {
            let deadlines: Vec<(u64, u64)> = (0..300u64)
                .map(|i| (i * step, 1_700_000_000_000 + (i * 7919) % (spread + 1)))
                .collect();
            let words = pack(&deadlines);
            let records = 300 * step;
            let e = Expiry::open(&words, records).expect("valid");
            assert_eq!(e.len(), 300);
            for &(r, d) in &deadlines {
                assert_eq!(e.deadline(r), d, "record {r}, spread {spread}");
            }
            if step > 1 {
                assert_eq!(e.deadline(1), NO_DEADLINE);
            }
            assert_eq!(e.deadline(records), NO_DEADLINE);
        }
    }

    #[test]
    fn a_few_bytes_per_deadline() {
        // 1,000 expiring records among 100,000, deadlines within a day.
        let deadlines: Vec<(u64, u64)> = (0..1000u64)
            .map(|i| (i * 100, 1_700_000_000_000 + i * 86_400))
            .collect();
        let bytes = 8 * pack(&deadlines).len();
        assert!(bytes <= 32 + 1000 * 6, "{bytes} bytes");
    }

    #[test]
    fn malformed_sections_are_refused() {
        let good = pack(&[(1, 100), (5, 200)]);
        assert!(Expiry::open(&good, 6).is_ok());
        assert!(Expiry::open(&good, 5).is_err(), "record 5 of 5");
        assert!(Expiry::open(&good[..3], 6).is_err(), "truncated");
        let mut long = good.clone();
        long.push(0);
        assert!(Expiry::open(&long, 6).is_err(), "trailing word");
        let mut wide = good.clone();
        wide[1] = 65;
        assert!(Expiry::open(&wide, 6).is_err(), "width");
        let unordered = pack(&[(5, 100), (5, 200)]);
        assert!(Expiry::open(&unordered, 6).is_err(), "repeated record");
        let mut overflow = good.clone();
        overflow[2] = u64::MAX - 50;
        assert!(Expiry::open(&overflow, 6).is_err(), "deadline overflow");
        let mut zero = good;
        zero[0] = 0;
        assert!(Expiry::open(&zero, 6).is_err(), "count 0");
    }
}
