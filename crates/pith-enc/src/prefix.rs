//! Byte-string prefixes: the successor of a prefix, common prefix lengths.
//!
//! Order is the lexicographic order of unsigned bytes (`<[u8]>::cmp`), the
//! key order of every PithDB structure. [`successor`] turns "keys starting
//! with `p`" into the half-open range `p .. successor(p)`, unbounded above
//! when it returns `None`. Pure functions, safe from any thread.

/// The smallest byte string greater than every string starting with
/// `prefix`, or `None` when there is none (`prefix` is empty or all `0xFF`).
///
/// Trailing `0xFF` bytes are dropped and the last other byte incremented:
/// `successor(b"ab\xff") == Some(b"ac")`.
pub fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut next = prefix[..=keep].to_vec();
    next[keep] += 1;
    Some(next)
}

/// Length of the longest common prefix of `a` and `b`, compared eight bytes
/// at a time.
#[inline]
pub fn common_len(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while let (Some(x), Some(y)) = (
        a.get(i..n).and_then(<[u8]>::first_chunk::<8>),
        b.get(i..n).and_then(<[u8]>::first_chunk::<8>),
    ) {
        let diff = u64::from_le_bytes(*x) ^ u64::from_le_bytes(*y);
        if diff != 0 {
            return i + (diff.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn successor_examples() {
        assert_eq!(successor(b""), None);
        assert_eq!(successor(b"\xff\xff"), None);
        assert_eq!(successor(b"a").as_deref(), Some(&b"b"[..]));
        assert_eq!(successor(b"ab\xff\xff").as_deref(), Some(&b"ac"[..]));
        assert_eq!(successor(b"\x00\xff").as_deref(), Some(&b"\x01"[..]));
        assert_eq!(successor(b"a\xfeb").as_deref(), Some(&b"a\xfec"[..]));
    }

    #[test]
    fn common_len_examples() {
        assert_eq!(common_len(b"abcdefghijk", b"abcdefghijx"), 10);
        assert_eq!(common_len(b"abc", b"abcdef"), 3);
        assert_eq!(common_len(b"", b"a"), 0);
        assert_eq!(common_len(b"abcdefgh", b"abcdefgh"), 8);
        assert_eq!(common_len(b"xbcdefgh", b"abcdefgh"), 0);
    }

    proptest! {
        /// Every string with the prefix sorts below the successor, and the
        /// successor is the least such: anything below it either has the
        /// prefix or sorts below the prefix.
        #[test]
        fn successor_bounds_the_prefix(
            prefix in proptest::collection::vec(prop_oneof![Just(0xFFu8), any::<u8>()], 0..6),
            tail in proptest::collection::vec(prop_oneof![Just(0xFFu8), any::<u8>()], 0..6),
            other in proptest::collection::vec(prop_oneof![Just(0xFFu8), any::<u8>()], 0..8),
        ) {
            let with: Vec<u8> = prefix.iter().chain(&tail).copied().collect();
            match successor(&prefix) {
                None => prop_assert!(prefix.iter().all(|&b| b == 0xFF)),
                Some(end) => {
                    prop_assert!(with < end);
                    if other < end {
                        prop_assert!(other.starts_with(&prefix) || other < prefix);
                    }
                }
            }
        }

        #[test]
        fn common_len_matches_bytewise(
            a in proptest::collection::vec(0u8..3, 0..40),
            b in proptest::collection::vec(0u8..3, 0..40),
        ) {
            let want = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            prop_assert_eq!(common_len(&a, &b), want);
            prop_assert_eq!(common_len(&a, &a), a.len());
        }
    }
}
