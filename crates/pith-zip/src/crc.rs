//! CRC-32C of a read's checksum group, the value `crc32c::crc32c` gives,
//! computed in three interleaved streams.
//!
//! A read checks its record's group (a few hundred bytes) before decoding
//! it. The CPU's crc32 instruction takes 8 bytes a step, but each step
//! waits on the one before (three cycles), so one stream over 256 bytes is
//! a chain of 32 steps. The `crc32c` crate interleaves three streams only
//! in chunks of 768 bytes or more, so a group is always one chain. Here
//! the bytes are cut into three blocks of equal length, summed as three
//! chains at once, and the three sums joined: the sum of `a` followed by
//! `b` is the sum of `a` shifted by `b`'s length (a product with `x^(8 *
//! len(b))` modulo the polynomial: one carry-less multiplication and one
//! crc32 step) plus the sum of `b` from zero. The shift's factors, one per
//! block length in steps of 8 bytes, are computed once, on first use.
//!
//! Measured on the 2-core VM (best of 20 passes over 1 MiB of distinct
//! strings, so the sums overlap as a read's do not): 19.6 ns for 250
//! bytes against the crate's 34.2, 31.6 against 57.9 for 500, 13.6
//! against 16.9 for 128, the same for 64. On the Debian table's 100-row
//! range query of every column, of which the group checksums were 4-5%,
//! about 1% less time (median of ten in-process comparisons, 0.93-1.01).
//!
//! Invariants: [`crc32c`] equals `crc32c::crc32c` for every input (tested
//! for every length up to a few blocks' worth); it is `crc32c::crc32c`
//! itself for inputs shorter than three blocks of [`MIN_WORDS`] words or
//! longer than three of [`MAX_WORDS`] (plus a tail of under 24 bytes), on
//! CPUs without SSE 4.2 or PCLMULQDQ, on other architectures and under
//! Miri.

/// Block length, in 8-byte words, below which one chain is as fast (at
/// 64 bytes, two-word blocks, the two measured the same).
#[cfg_attr(not(all(target_arch = "x86_64", not(miri))), allow(dead_code))]
const MIN_WORDS: usize = 4;

/// Longest block, in 8-byte words, with a precomputed shift factor:
/// longer inputs (rare: groups hold a few hundred bytes, records of more
/// are each a group of one) go to the `crc32c` crate, which interleaves
/// those itself.
#[cfg_attr(not(all(target_arch = "x86_64", not(miri))), allow(dead_code))]
const MAX_WORDS: usize = 512;

/// The CRC-32C of `bytes`.
pub(crate) fn crc32c(bytes: &[u8]) -> u32 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        let words = bytes.len() / 24;
        if (MIN_WORDS..=MAX_WORDS).contains(&words) {
            if let Some(factors) = hw::factors() {
                // SAFETY: `factors` exists only where the CPU has SSE 4.2
                // and PCLMULQDQ (see `hw::factors`).
                return unsafe { hw::three_way(bytes, words, factors) };
            }
        }
    }
    crc32c::crc32c(bytes)
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod hw {
    use std::arch::x86_64::{
        _mm_clmulepi64_si128, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8, _mm_cvtsi128_si64,
        _mm_set_epi64x, _mm_sll_epi64,
    };
    use std::sync::OnceLock;

    use pith_enc::le;

    use super::MAX_WORDS;

    /// `factors[w]`: `x^(64 w)` modulo the CRC-32C polynomial, in the
    /// crc32 instruction's bit order: what shifts a sum past `w` words.
    pub(super) type Factors = [u32; MAX_WORDS + 1];

    /// The shift factors, when the CPU can use them.
    pub(super) fn factors() -> Option<&'static Factors> {
        static FACTORS: OnceLock<Option<Box<Factors>>> = OnceLock::new();
        FACTORS
            .get_or_init(|| {
                let usable = std::arch::is_x86_feature_detected!("sse4.2")
                    && std::arch::is_x86_feature_detected!("pclmulqdq");
                // SAFETY: the CPU has SSE 4.2, checked just above.
                usable.then(|| unsafe { compute_factors() })
            })
            .as_deref()
    }

    /// `x^0` in the instruction's bit order is the top bit; each word of
    /// zeros the instruction takes multiplies by `x^64`.
    ///
    /// # Safety
    /// The CPU must have SSE 4.2.
    #[target_feature(enable = "sse4.2")]
    unsafe fn compute_factors() -> Box<Factors> {
        let mut factors = Box::new([0u32; MAX_WORDS + 1]);
        let mut power = 0x8000_0000u64;
        for f in factors.iter_mut() {
            *f = power as u32;
            power = _mm_crc32_u64(power, 0);
        }
        factors
    }

    /// `a * b` modulo the polynomial, both in the instruction's bit order.
    ///
    /// # Safety
    /// The CPU must have SSE 4.2 and PCLMULQDQ.
    #[inline]
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    unsafe fn multiply(a: u32, b: u32) -> u32 {
        let product = _mm_clmulepi64_si128(
            _mm_set_epi64x(0, i64::from(a)),
            _mm_set_epi64x(0, i64::from(b)),
            0x00,
        );
        // Reflected operands leave the 63-bit product one bit low.
        let product = _mm_sll_epi64(product, _mm_set_epi64x(0, 1));
        let product = _mm_cvtsi128_si64(product) as u64;
        _mm_crc32_u32(0, product as u32) ^ (product >> 32) as u32
    }

    /// The CRC-32C of `bytes`, as three chains over blocks of `words`
    /// 8-byte words each, then the bytes after them.
    ///
    /// # Safety
    /// The CPU must have SSE 4.2 and PCLMULQDQ. (`3 * 8 * words` must not
    /// exceed `bytes.len()`, nor `words` [`MAX_WORDS`], or this panics.)
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    pub(super) unsafe fn three_way(bytes: &[u8], words: usize, factors: &Factors) -> u32 {
        let block = 8 * words;
        let (a, rest) = bytes.split_at(block);
        let (b, rest) = rest.split_at(block);
        let (c, tail) = rest.split_at(block);
        // The register starts at all ones and ends inverted, as the
        // `crc32c` crate's does; the other two chains start at zero, and
        // the joins add them in.
        let (mut sa, mut sb, mut sc) = (u64::from(u32::MAX), 0u64, 0u64);
        let (wa, wb, wc) = (a.chunks_exact(8), b.chunks_exact(8), c.chunks_exact(8));
        for ((wa, wb), wc) in wa.zip(wb).zip(wc) {
            let (wa, wb, wc) = (le::u64_padded(wa), le::u64_padded(wb), le::u64_padded(wc));
            sa = _mm_crc32_u64(sa, wa);
            sb = _mm_crc32_u64(sb, wb);
            sc = _mm_crc32_u64(sc, wc);
        }
        let shift = factors[words];
        // SAFETY (both): the caller vouched for the CPU.
        let ab = unsafe { multiply(sa as u32, shift) } ^ sb as u32;
        let mut sum = u64::from(unsafe { multiply(ab, shift) } ^ sc as u32);
        let mut words_left = tail.chunks_exact(8);
        for w in &mut words_left {
            sum = _mm_crc32_u64(sum, le::u64_padded(w));
        }
        let mut sum = sum as u32;
        for &byte in words_left.remainder() {
            sum = _mm_crc32_u8(sum, byte);
        }
        !sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length from empty to beyond what three-way sums, on bytes of
    /// every value, against the `crc32c` crate; and the longest blocks.
    #[test]
    fn agrees_with_the_crc32c_crate() {
        let bytes: Vec<u8> = crate::tests::noise(7, 1, 24 * (MAX_WORDS + 2)).remove(0);
        for len in (0..2000).chain([24 * MAX_WORDS - 1, 24 * MAX_WORDS, bytes.len()]) {
            for start in [0, 1, 3] {
                let s = &bytes[start..start + len.min(bytes.len() - start)];
                assert_eq!(crc32c(s), crc32c::crc32c(s), "length {}", s.len());
            }
        }
        assert_eq!(crc32c(&[0xFF; 300]), crc32c::crc32c(&[0xFF; 300]));
    }
}
