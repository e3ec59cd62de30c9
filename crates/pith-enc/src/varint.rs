//! LEB128 unsigned varints, as in the engine's write batches.
//!
//! A `u64` is written seven bits at a time, least significant group first;
//! every byte but the last has its high bit set, so 0..=127 take one byte
//! and `u64::MAX` takes [`MAX_LEN`] = 10.
//!
//! [`get`] is lenient in exactly the ways the engine's on-disk batches have
//! always been read, so existing logs parse the same: it accepts
//! non-minimal encodings (`0x80 0x00` is 0), and bits of a tenth byte above
//! bit 63 are dropped. It rejects (returns `None`) input that ends inside a
//! varint and varints longer than ten bytes. Pure functions, safe from any
//! thread.

/// The most bytes a varint takes.
pub const MAX_LEN: usize = 10;

/// Appends `v` as a varint.
#[inline]
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint from the front of `bytes`: the value and the bytes after
/// it, or `None` if `bytes` ends inside it or it runs past [`MAX_LEN`] bytes.
#[inline]
pub fn get(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut v = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(MAX_LEN) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((v, &bytes[i + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encode(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put(&mut out, v);
        out
    }

    /// The encoding is a format: pin it.
    #[test]
    fn golden_bytes() {
        assert_eq!(encode(0), [0x00]);
        assert_eq!(encode(127), [0x7F]);
        assert_eq!(encode(128), [0x80, 0x01]);
        assert_eq!(encode(300), [0xAC, 0x02]);
        assert_eq!(
            encode(u64::MAX),
            [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]
        );
    }

    #[test]
    fn lenient_and_strict_cases() {
        assert_eq!(get(&[]), None);
        assert_eq!(get(&[0x80]), None);
        assert_eq!(get(&[0x80, 0x00, 0x05]), Some((0, &[0x05][..])));
        // A tenth byte's bits above bit 63 are dropped.
        let mut ten = vec![0xFF; 9];
        ten.push(0x7F);
        assert_eq!(get(&ten), Some((u64::MAX, &[][..])));
        // An eleventh byte is never read.
        let mut eleven = vec![0x80; 10];
        eleven.push(0x00);
        assert_eq!(get(&eleven), None);
    }

    proptest! {
        #[test]
        fn round_trip(v: u64, tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut bytes = encode(v);
            prop_assert!(bytes.len() <= MAX_LEN);
            let len = bytes.len();
            bytes.extend_from_slice(&tail);
            prop_assert_eq!(get(&bytes), Some((v, &tail[..])));
            prop_assert_eq!(get(&bytes[..len - 1]), None);
        }

        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            if let Some((_, rest)) = get(&bytes) {
                prop_assert!(bytes.len() - rest.len() <= MAX_LEN);
            }
        }
    }
}
