//! Per-record tags (sequence number and kind), bit-packed.
//!
//! Section layout: `width u64 | words u64...`. Record `r`'s entry is the
//! `width`-bit little-endian field at bit `r * width` of the words:
//! `(seq - min_seq) << 1 | kind`, kind 1 for a put and 0 for a delete.
//! `width` is the fewest bits that hold the largest entry (at most 57),
//! and 0 when every record is a put at `min_seq` (every entry 1): a
//! bulk-loaded segment, whose records share one sequence number, spends
//! nothing per record, nor does a build that will be the oldest segment
//! while no snapshot is older than its newest version (it writes every
//! record at `min_seq`: see `merge::forgets_seqs`); a flush above other
//! segments about `log2(writes)` bits.
//! (Width 0 is read since record store version 3; see `docs/format.md`.)

use pith_enc::packed::{self, Packed};

use crate::dbformat::{tag, tag_kind, tag_seq, Kind};

/// Packs `tags` (full tags) relative to `min_seq`.
pub(crate) fn pack(tags: &[u64], min_seq: u64) -> Vec<u64> {
    let entry = |t: u64| (tag_seq(t) - min_seq) << 1 | (tag_kind(t) == Kind::Put) as u64;
    let max = tags.iter().map(|&t| entry(t)).max().unwrap_or(0);
    let all_puts_at_min = tags.iter().all(|&t| entry(t) == 1);
    let width = if all_puts_at_min {
        0
    } else {
        packed::bits_for(max).max(1)
    };
    let mut words = vec![u64::from(width)];
    packed::pack_into(&mut words, tags.iter().map(|&t| entry(t)), width);
    words
}

/// A validated view of a tags section.
#[derive(Clone, Copy)]
pub(crate) struct Tags<'a> {
    values: Packed<'a>,
    len: u64,
    min_seq: u64,
    /// Or-ed into every entry: 1 at width 0 (every record a put at
    /// `min_seq`), else 0.
    fill: u64,
}

impl<'a> Tags<'a> {
    /// Checks the geometry for `len` records.
    pub(crate) fn open(section: &'a [u64], len: u64, min_seq: u64) -> Result<Self, String> {
        let (&width, words) = section.split_first().ok_or("tags section is empty")?;
        if width > 57 {
            return Err(format!("tag width {width} is outside 0..=57"));
        }
        let count = usize::try_from(len).map_err(|_| "tag count overflows".to_string())?;
        let need = packed::words_for(count, width as u32).ok_or("tag bits overflow")?;
        let values = Packed::new(words, count, width as u32)
            .filter(|_| need == words.len())
            .ok_or_else(|| {
                format!(
                    "{} tag words for {len} records of {width} bits",
                    words.len()
                )
            })?;
        Ok(Tags {
            values,
            len,
            min_seq,
            fill: u64::from(width == 0),
        })
    }

    /// Bits of each record's entry: 0 when every record is a put at
    /// `min_seq`.
    pub(crate) fn width(&self) -> u32 {
        self.values.width()
    }

    /// Record `r`'s full tag (0 when out of range).
    pub(crate) fn get(&self, r: u64) -> u64 {
        if r >= self.len {
            return 0;
        }
        let v = self.values.get(r as usize) | self.fill;
        let kind = if v & 1 == 1 { Kind::Put } else { Kind::Delete };
        tag(self.min_seq + (v >> 1), kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_at_every_width() {
        for spread in [0u64, 1, 2, 1000, 1 << 40] {
            let tags: Vec<u64> = (0..500u64)
                .map(|i| {
                    tag(
                        7 + (i * 7919) % (spread + 1),
                        if i % 3 == 0 { Kind::Delete } else { Kind::Put },
                    )
                })
                .collect();
            let words = pack(&tags, 7);
            let t = Tags::open(&words, tags.len() as u64, 7).expect("valid");
            for (i, &want) in tags.iter().enumerate() {
                assert_eq!(t.get(i as u64), want, "spread {spread}, record {i}");
            }
        }
    }

    #[test]
    fn puts_at_one_sequence_number_take_no_bits() {
        let tags: Vec<u64> = (0..1000).map(|_| tag(7, Kind::Put)).collect();
        let words = pack(&tags, 7);
        assert_eq!(words, [0]);
        let t = Tags::open(&words, 1000, 7).expect("valid");
        assert!((0..1000).all(|r| t.get(r) == tag(7, Kind::Put)));
        assert_eq!(t.get(1000), 0);
        // One delete, or one put at another sequence number, needs bits.
        for odd in [tag(7, Kind::Delete), tag(8, Kind::Put)] {
            let mut tags = tags.clone();
            tags[500] = odd;
            let words = pack(&tags, 7);
            assert_eq!(words[0], if odd == tag(8, Kind::Put) { 2 } else { 1 });
            let t = Tags::open(&words, 1000, 7).expect("valid");
            assert_eq!(t.get(500), odd);
            assert_eq!(t.get(499), tag(7, Kind::Put));
        }
        // Width 0 with words left over is malformed.
        assert!(Tags::open(&[0, 0], 1000, 7).is_err());
    }
}
