//! Little-endian integer reads and appends.
//!
//! Every PithDB format is little-endian; this module is the one place that
//! turns bytes into integers and back.
//!
//! * `*_at(bytes, at)` reads the integer starting at byte `at` and returns
//!   `None` when it would run past the end (or `at` is past the end), so
//!   decoders of untrusted bytes never panic.
//! * `*_in(array, at)` reads from a fixed-size array, for headers and
//!   footers whose length the caller has already checked (for example with
//!   `slice::first_chunk`). It panics if the integer runs past the array,
//!   which with a constant `at` is a bug in the caller's constants (and
//!   the check then typically compiles away).
//! * [`u64_padded`] loads up to eight bytes, zero-filling the missing high
//!   bytes: short tails, hashes of a prefix, variable-width fields.
//! * `put_*` append to a `Vec<u8>`.
//!
//! All functions are pure; they are safe to call from any thread.

macro_rules! le_int {
    ($ty:ty, $n:literal, $at:ident, $in_:ident, $put:ident) => {
        #[doc = concat!("The `", stringify!($ty), "` at byte `at` of `bytes`, or `None` when fewer than ", stringify!($n), " bytes remain there.")]
        #[inline]
        pub fn $at(bytes: &[u8], at: usize) -> Option<$ty> {
            let chunk = bytes.get(at..)?.first_chunk::<$n>()?;
            Some(<$ty>::from_le_bytes(*chunk))
        }

        #[doc = concat!("The `", stringify!($ty), "` at byte `at` of a fixed-size array.")]
        ///
        /// # Panics
        ///
        #[doc = concat!("If `at + ", stringify!($n), " > N`.")]
        #[inline]
        pub fn $in_<const N: usize>(bytes: &[u8; N], at: usize) -> $ty {
            let mut w = [0u8; $n];
            w.copy_from_slice(&bytes[at..at + $n]);
            <$ty>::from_le_bytes(w)
        }

        #[doc = concat!("Appends `v` as ", stringify!($n), " little-endian bytes.")]
        #[inline]
        pub fn $put(out: &mut Vec<u8>, v: $ty) {
            out.extend_from_slice(&v.to_le_bytes());
        }
    };
}

le_int!(u16, 2, u16_at, u16_in, put_u16);
le_int!(u32, 4, u32_at, u32_in, put_u32);
le_int!(u64, 8, u64_at, u64_in, put_u64);

/// The first `min(8, bytes.len())` bytes of `bytes` as a little-endian
/// `u64`, missing high bytes read as zero.
#[inline(always)]
pub fn u64_padded(bytes: &[u8]) -> u64 {
    if let Some(chunk) = bytes.first_chunk::<8>() {
        u64::from_le_bytes(*chunk)
    } else {
        let mut w = [0u8; 8];
        w[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_are_little_endian() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(u16_at(&b, 0), Some(0x0201));
        assert_eq!(u32_at(&b, 1), Some(0x0504_0302));
        assert_eq!(u64_at(&b, 1), Some(0x0908_0706_0504_0302));
        assert_eq!(u16_in(&b, 7), 0x0908);
        assert_eq!(u32_in(&b, 0), 0x0403_0201);
        assert_eq!(u64_in(&b, 0), 0x0807_0605_0403_0201);
    }

    #[test]
    fn checked_reads_past_the_end_are_none() {
        let b = [0u8; 8];
        assert_eq!(u64_at(&b, 0), Some(0));
        assert_eq!(u64_at(&b, 1), None);
        assert_eq!(u32_at(&b, 5), None);
        assert_eq!(u16_at(&b, 7), None);
        assert_eq!(u16_at(&b, 8), None);
        assert_eq!(u16_at(&b, usize::MAX), None);
        assert_eq!(u64_at(&[], 0), None);
    }

    #[test]
    #[should_panic]
    fn fixed_read_past_the_array_panics() {
        let _ = u32_in(&[0u8; 6], 3);
    }

    #[test]
    fn padded_loads_zero_fill() {
        assert_eq!(u64_padded(&[]), 0);
        assert_eq!(u64_padded(&[0xAB]), 0xAB);
        assert_eq!(u64_padded(&[1, 2, 3]), 0x0003_0201);
        assert_eq!(
            u64_padded(&[1, 2, 3, 4, 5, 6, 7, 8, 9]),
            0x0807_0605_0403_0201
        );
    }

    proptest! {
        #[test]
        fn put_then_read_round_trips(a: u16, b: u32, c: u64, lead in 0usize..9) {
            let mut out = vec![0xEE; lead];
            put_u16(&mut out, a);
            put_u32(&mut out, b);
            put_u64(&mut out, c);
            prop_assert_eq!(out.len(), lead + 14);
            prop_assert_eq!(u16_at(&out, lead), Some(a));
            prop_assert_eq!(u32_at(&out, lead + 2), Some(b));
            prop_assert_eq!(u64_at(&out, lead + 6), Some(c));
            prop_assert_eq!(u64_at(&out, lead + 7), None);
        }

        #[test]
        fn padded_load_matches_bytewise(bytes in proptest::collection::vec(any::<u8>(), 0..12)) {
            let expect = bytes
                .iter()
                .take(8)
                .enumerate()
                .fold(0u64, |v, (i, &b)| v | u64::from(b) << (8 * i));
            prop_assert_eq!(u64_padded(&bytes), expect);
        }
    }
}
