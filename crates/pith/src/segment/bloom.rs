//! A segment's Bloom filter over its keys, read in place.
//!
//! Layout: `k u32 | reserved u32 (0) | nbits u64 | nbits/64 words u64`.
//! Probes use double hashing of one 64-bit hash (Kirsch and Mitzenmacher),
//! so a query hashes the key once. With 10 bits per key and k = 7 the false
//! positive rate is about 1%; a miss costs one hash and at most k word
//! loads, far less than a trie lookup that fails deep in the structure.
//! The hash is [`crate::dbformat::key_hash`].

fn probes(h: u64, k: u32, nbits: u64) -> impl Iterator<Item = u64> {
    let h1 = h;
    let h2 = h.rotate_left(32) | 1;
    (0..u64::from(k)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % nbits)
}

/// Builds the filter section from key hashes.
pub(crate) fn build(hashes: &[u64], bits_per_key: u32) -> Vec<u64> {
    if bits_per_key == 0 || hashes.is_empty() {
        return vec![0, 0];
    }
    let k = ((f64::from(bits_per_key) * 0.69) as u32).clamp(1, 30);
    let nbits = (hashes.len() as u64 * u64::from(bits_per_key))
        .max(64)
        .next_multiple_of(64);
    let mut words = vec![0u64; 2 + (nbits / 64) as usize];
    words[0] = u64::from(k);
    words[1] = nbits;
    for &h in hashes {
        for bit in probes(h, k, nbits) {
            words[2 + (bit / 64) as usize] |= 1 << (bit % 64);
        }
    }
    words
}

/// A filter view over a validated section.
#[derive(Clone, Copy)]
pub(crate) struct Bloom<'a> {
    k: u32,
    nbits: u64,
    words: &'a [u64],
}

impl<'a> Bloom<'a> {
    /// Parses a section; `Err` says what is wrong.
    pub(crate) fn open(section: &'a [u64]) -> Result<Self, String> {
        let (&head, rest) = section.split_first().ok_or("bloom section is empty")?;
        let (&nbits, words) = rest.split_first().ok_or("bloom section lacks its size")?;
        let k = (head & 0xffff_ffff) as u32;
        if head >> 32 != 0 {
            return Err("bloom reserved bits are not zero".into());
        }
        if nbits % 64 != 0 || nbits / 64 != words.len() as u64 || (nbits > 0 && k == 0) || k > 30 {
            return Err(format!(
                "bloom geometry is inconsistent (k {k}, {nbits} bits, {} words)",
                words.len()
            ));
        }
        Ok(Bloom { k, nbits, words })
    }

    /// False only when the key is certainly absent.
    pub(crate) fn may_contain(&self, h: u64) -> bool {
        if self.nbits == 0 {
            return true;
        }
        probes(h, self.k, self.nbits).all(|bit| {
            self.words
                .get((bit / 64) as usize)
                .is_some_and(|w| w & (1 << (bit % 64)) != 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbformat::key_hash as hash;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let hashes: Vec<u64> = (0..10_000u32)
            .map(|i| hash(format!("key{i}").as_bytes()))
            .collect();
        let words = build(&hashes, 10);
        let b = Bloom::open(&words).expect("valid");
        assert!(hashes.iter().all(|&h| b.may_contain(h)));
        let fp = (0..10_000u32)
            .filter(|i| b.may_contain(hash(format!("other{i}").as_bytes())))
            .count();
        assert!(fp < 300, "{fp} false positives of 10000");
    }

    #[test]
    fn empty_filter_admits_everything() {
        let words = build(&[], 10);
        let b = Bloom::open(&words).expect("valid");
        assert!(b.may_contain(hash(b"x")));
    }
}
