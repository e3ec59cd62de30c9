//! The fixed codec: records of one length whose bytes at some positions
//! are the same in every record. Those positions are held once, in the
//! store's section (the template); each record stores only its varying
//! bytes, so a record still decodes alone, by two copies.
//!
//! Where it pays: values that are fixed-width fields, some of them
//! constant or nearly so (a table row of random hashes behind a one-byte
//! column count; an index's primary keys, whose tag and high bytes are
//! the same for millions of rows). Plain storage would keep every
//! constant byte once per record; a general-purpose codec would spend
//! its entropy coder on the random bytes and gain nothing.
//!
//! Section layout (little-endian, `docs/format.md`, "Record store"):
//!
//! ```text
//! 0   length u32     bytes of every record
//! 4   stored u32     bytes each record stores: the varying positions
//! 8   mask           ceil(length / 8) bytes; bit p (LSB first) set when
//!                    position p varies
//! ..  template       length bytes: each constant position's byte, 0 at
//!                    the varying ones
//! ```
//!
//! Invariants of an opened [`Layout`]: `stored` is the number of set mask
//! bits; the runs of varying positions lie inside `length` and together
//! take exactly `stored` bytes; the template's varying positions are 0
//! (so a section has one encoding).

use pith_enc::le;

/// What pass one of a build learns of the records: whether they share a
/// length, and which positions differ between them.
#[derive(Default)]
pub(crate) struct Survey {
    records: u64,
    first: Vec<u8>,
    /// `first[p] ^ r[p]` or-ed over every record `r`: non-zero where
    /// position `p` varies.
    diff: Vec<u8>,
    /// Records of more than one length were seen.
    mixed: bool,
}

impl Survey {
    pub(crate) fn add(&mut self, r: &[u8]) {
        self.records += 1;
        if self.mixed {
            return;
        }
        if self.records == 1 {
            self.first = r.to_vec();
            self.diff = vec![0; r.len()];
        } else if r.len() != self.first.len() {
            self.mixed = true;
            self.first = Vec::new();
            self.diff = Vec::new();
        } else {
            for (d, (a, b)) in self.diff.iter_mut().zip(r.iter().zip(&self.first)) {
                *d |= a ^ b;
            }
        }
    }

    /// The layout for the records seen, when they are of one non-zero
    /// length and the fixed codec stores fewer bytes than plain, its
    /// section included (a few records of many bytes would pay more for
    /// the mask and template than their constant bytes save).
    pub(crate) fn layout(&self) -> Option<Layout> {
        if self.mixed || self.first.is_empty() {
            return None;
        }
        let varies: Vec<bool> = self.diff.iter().map(|&d| d != 0).collect();
        let length = varies.len() as u64;
        let stored = varies.iter().filter(|&&v| v).count() as u64;
        let fixed = self.records.saturating_mul(stored) + 8 + length.div_ceil(8) + length;
        if fixed >= self.records.saturating_mul(length) {
            return None;
        }
        let template = self
            .first
            .iter()
            .zip(&varies)
            .map(|(&b, &v)| if v { 0 } else { b })
            .collect();
        Some(Layout::new(template, &varies))
    }
}

/// A run of varying positions: `start..start + len` of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    start: usize,
    len: usize,
}

/// A fixed-codec layout: the template and where the varying bytes go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    template: Vec<u8>,
    runs: Vec<Run>,
    stored: usize,
    section: Vec<u8>,
}

impl Layout {
    fn new(template: Vec<u8>, varies: &[bool]) -> Layout {
        let mut runs: Vec<Run> = Vec::new();
        for (p, _) in varies.iter().enumerate().filter(|(_, &v)| v) {
            match runs.last_mut() {
                Some(r) if r.start + r.len == p => r.len += 1,
                _ => runs.push(Run { start: p, len: 1 }),
            }
        }
        let stored = runs.iter().map(|r| r.len).sum();
        let mut section = Vec::with_capacity(8 + template.len() * 9 / 8 + 1);
        le::put_u32(&mut section, template.len() as u32);
        le::put_u32(&mut section, stored as u32);
        let mut mask = vec![0u8; template.len().div_ceil(8)];
        for (p, _) in varies.iter().enumerate().filter(|(_, &v)| v) {
            mask[p / 8] |= 1 << (p % 8);
        }
        section.extend_from_slice(&mask);
        section.extend_from_slice(&template);
        Layout {
            template,
            runs,
            stored,
            section,
        }
    }

    /// Parses and checks a section (see the module doc).
    pub(crate) fn read(section: &[u8]) -> Result<Layout, String> {
        let (length, stored) = match (le::u32_at(section, 0), le::u32_at(section, 4)) {
            (Some(l), Some(s)) => (l as usize, s as usize),
            _ => return Err("fixed-codec section shorter than its header".into()),
        };
        let mask_len = length.div_ceil(8);
        if section.len() != 8 + mask_len + length {
            return Err(format!(
                "fixed-codec section of {} bytes for records of {length}",
                section.len()
            ));
        }
        let (mask, template) = section[8..].split_at(mask_len);
        let varies: Vec<bool> = (0..length)
            .map(|p| mask[p / 8] >> (p % 8) & 1 == 1)
            .collect();
        let count = varies.iter().filter(|&&v| v).count();
        if count != stored || mask_len * 8 > length && mask[mask_len - 1] >> (length % 8) != 0 {
            return Err(format!(
                "fixed-codec mask marks {count} varying positions (and none past {length}); the section says {stored}"
            ));
        }
        if template.iter().zip(&varies).any(|(&b, &v)| v && b != 0) {
            return Err("fixed-codec template holds a byte at a varying position".into());
        }
        Ok(Layout::new(template.to_vec(), &varies))
    }

    /// The section's bytes.
    pub(crate) fn section(&self) -> &[u8] {
        &self.section
    }

    /// Bytes of a record.
    pub(crate) fn length(&self) -> usize {
        self.template.len()
    }

    /// Bytes a record stores.
    pub(crate) fn stored(&self) -> usize {
        self.stored
    }

    /// Appends the varying bytes of `record` (of [`Layout::length`]
    /// bytes, whose constant positions hold the template's bytes).
    pub(crate) fn encode(&self, record: &[u8], out: &mut Vec<u8>) {
        debug_assert_eq!(record.len(), self.template.len());
        for r in &self.runs {
            out.extend_from_slice(&record[r.start..r.start + r.len]);
        }
    }

    /// Replaces `out` with the record whose varying bytes are `stored`
    /// (of [`Layout::stored`] bytes: the store checks extents at open).
    pub(crate) fn decode(&self, stored: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        if stored.len() != self.stored {
            return Err(format!(
                "{} stored bytes where the fixed codec stores {}",
                stored.len(),
                self.stored
            ));
        }
        out.clear();
        out.extend_from_slice(&self.template);
        let mut at = 0;
        for r in &self.runs {
            out[r.start..r.start + r.len].copy_from_slice(&stored[at..at + r.len]);
            at += r.len;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn survey(records: &[&[u8]]) -> Survey {
        let mut s = Survey::default();
        for r in records {
            s.add(r);
        }
        s
    }

    #[test]
    fn constant_positions_are_held_once() {
        let records: [&[u8]; 3] = [b"\x01\x00\x00ab", b"\x01\x00\x00cd", b"\x01\x00\x01ab"];
        // Enough records for the saving to pay for the section.
        let many: Vec<&[u8]> = records.iter().cycle().take(30).copied().collect();
        let layout = survey(&many).layout().expect("fixed");
        assert_eq!((layout.length(), layout.stored()), (5, 3));
        let reread = Layout::read(layout.section()).expect("reads");
        assert_eq!(reread, layout);
        let (mut enc, mut dec) = (Vec::new(), Vec::new());
        for r in records {
            enc.clear();
            layout.encode(r, &mut enc);
            assert_eq!(enc.len(), 3);
            reread.decode(&enc, &mut dec).expect("decodes");
            assert_eq!(dec, r);
        }
        // Positions 2, 3 and 4 vary: one run.
        assert_eq!(reread.runs, [Run { start: 2, len: 3 }]);
    }

    #[test]
    fn no_layout_for_mixed_lengths_empty_records_or_nothing_constant() {
        assert!(survey(&[b"ab", b"abc"]).layout().is_none());
        assert!(survey(&[b"", b""]).layout().is_none());
        assert!(survey(&[b"ab", b"ba"]).layout().is_none());
        assert!(survey(&[]).layout().is_none());
        // Too few records to pay for the section.
        assert!(survey(&[b"xyz"]).layout().is_none());
        assert!(survey(&[b"k001", b"k002"]).layout().is_none());
        // Many copies of one record: every position is constant, records
        // store nothing.
        let same = survey(&[&b"xyz"[..]; 20]).layout().expect("fixed");
        assert_eq!(same.stored(), 0);
        let mut out = Vec::new();
        same.decode(&[], &mut out).expect("decodes");
        assert_eq!(out, b"xyz");
    }

    #[test]
    fn malformed_sections_are_refused() {
        let records: Vec<Vec<u8>> = (0..20u8).map(|i| vec![1, b'a', i]).collect();
        let records: Vec<&[u8]> = records.iter().map(|r| &r[..]).collect();
        let good = survey(&records).layout().expect("fixed");
        let s = good.section().to_vec();
        assert!(Layout::read(&s).is_ok());
        let mut short = s.clone();
        short.pop();
        let mut count = s.clone();
        count[4] = 2;
        let mut past = s.clone();
        past[8] |= 0x80;
        let mut template = s.clone();
        *template.last_mut().expect("byte") = 7;
        for (what, bad) in [
            ("short", short),
            ("count", count),
            ("past", past),
            ("template", template),
        ] {
            assert!(Layout::read(&bad).is_err(), "{what}");
        }
        assert!(good.decode(b"ab", &mut Vec::new()).is_err());
    }
}
