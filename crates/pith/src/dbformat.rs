//! Sequence numbers, operation kinds and tags: how the engine names a
//! version of a key, in memory, in logs and in segments.
//!
//! Every write operation gets a sequence number, consecutive within a
//! batch and increasing across batches; 0 is never used (it means "before
//! everything"). A version's *tag* packs its sequence number and kind into
//! one `u64`: `seq << 8 | kind`, so tags of one key order like their
//! sequence numbers. Sequence numbers stay below [`MAX_SEQ`] (2^56) so the
//! shift cannot overflow; logs and segments holding larger ones are
//! corrupt.
//!
//! A put may carry a *deadline* (milliseconds since the Unix epoch, see
//! `clock.rs`); [`NO_DEADLINE`] stands for none, so "has it expired" is one
//! comparison for every version.

/// The deadline of a version that never expires.
pub(crate) const NO_DEADLINE: u64 = u64::MAX;

/// True when a version with `deadline` is gone at `now` (both in
/// milliseconds since the Unix epoch): the deadline is the first
/// millisecond at which the key reads as absent.
pub(crate) fn expired(deadline: u64, now: u64) -> bool {
    deadline <= now
}

/// Sequence numbers stay below this.
pub(crate) const MAX_SEQ: u64 = 1 << 56;

/// Operation kind as stored in logs and segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A tombstone.
    Delete = 0,
    /// A value.
    Put = 1,
}

impl Kind {
    /// The kind stored as byte `b`, if it is one.
    pub(crate) fn from_u8(b: u8) -> Option<Kind> {
        match b {
            0 => Some(Kind::Delete),
            1 => Some(Kind::Put),
            _ => None,
        }
    }
}

/// A version's tag: sequence number and kind.
pub(crate) fn tag(seq: u64, kind: Kind) -> u64 {
    seq << 8 | kind as u64
}

/// The sequence number of a tag.
pub(crate) fn tag_seq(tag: u64) -> u64 {
    tag >> 8
}

/// The kind of a tag; anything but a put reads as a delete.
pub(crate) fn tag_kind(tag: u64) -> Kind {
    if tag & 0xff == Kind::Put as u64 {
        Kind::Put
    } else {
        Kind::Delete
    }
}

/// The largest tag visible at snapshot `seq`.
pub(crate) fn max_tag(seq: u64) -> u64 {
    seq << 8 | 0xff
}

/// A 64-bit hash of a key: 8 bytes at a time, multiply and rotate, with a
/// final avalanche (our own, so the on-disk filter never changes with a
/// dependency's hash). Segments' Bloom filters are built on it (so it is
/// part of the segment format) and memtables index keys by it; a read
/// hashes its key once for both.
pub(crate) fn key_hash(key: &[u8]) -> u64 {
    const M: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (key.len() as u64).wrapping_mul(M) ^ 0x5851_F42D_4C95_7F2D;
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        h = (h ^ pith_enc::le::u64_padded(c))
            .wrapping_mul(M)
            .rotate_left(29);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        h = (h ^ pith_enc::le::u64_padded(rest))
            .wrapping_mul(M)
            .rotate_left(29);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_order_like_sequence_numbers_and_keep_their_kind() {
        let a = tag(5, Kind::Delete);
        let b = tag(6, Kind::Put);
        assert!(a < b && b <= max_tag(6) && max_tag(5) < b);
        assert_eq!((tag_seq(a), tag_kind(a)), (5, Kind::Delete));
        assert_eq!((tag_seq(b), tag_kind(b)), (6, Kind::Put));
        assert_eq!(tag_seq(tag(MAX_SEQ - 1, Kind::Put)), MAX_SEQ - 1);
    }
}
