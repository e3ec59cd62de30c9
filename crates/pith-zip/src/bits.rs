//! Little-endian bit streams: the writer packs values LSB-first into bytes,
//! the reader takes them back in the same order.
//!
//! Invariants: the writer's accumulator holds fewer than 32 pending bits
//! between calls; the reader never reads outside its slice (bytes past the
//! end read as zero bits) and flags an overrun if more bits are consumed
//! than the slice holds, so a truncated or crafted stream is detected by
//! [`BitReader::finish`] rather than by a panic.

use pith_enc::le;

/// Packs bit fields into bytes, least significant bit first.
#[derive(Default)]
pub(crate) struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    bits: u32,
}

impl BitWriter {
    /// Appends the low `n` bits of `value` (`n <= 32`, higher bits zero).
    #[inline]
    pub(crate) fn put(&mut self, value: u64, n: u32) {
        debug_assert!(n <= 32 && (n == 32 || value >> n == 0));
        self.acc |= value << self.bits;
        self.bits += n;
        if self.bits >= 32 {
            le::put_u32(&mut self.out, self.acc as u32);
            self.acc >>= 32;
            self.bits -= 32;
        }
    }

    /// Appends the low `n` bits of `value`, any `n <= 64`.
    pub(crate) fn put_wide(&mut self, value: u64, n: u32) {
        if n > 32 {
            self.put(value & 0xFFFF_FFFF, 32);
            self.put(value >> 32, n - 32);
        } else {
            self.put(value, n);
        }
    }

    /// Flushes the last partial byte (zero-padded) and returns the bytes.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        while self.bits > 0 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.bits = self.bits.saturating_sub(8);
        }
        self.out
    }
}

/// Reads bit fields written by [`BitWriter`].
pub(crate) struct BitReader<'a> {
    data: &'a [u8],
    /// Next byte of `data` to load into `buf`.
    pos: usize,
    buf: u64,
    /// Valid bits in `buf`.
    bits: u32,
    overrun: bool,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        let mut r = BitReader {
            data,
            pos: 0,
            buf: 0,
            bits: 0,
            overrun: false,
        };
        r.refill();
        r
    }

    /// Tops `buf` up to at least 56 valid bits while input remains.
    ///
    /// Away from the end of the input this is one unaligned 8-byte load
    /// and no branch on the bit count (the zstd/FSE way): the whole bytes
    /// that fit are kept, and the bits of a partly fitting byte above them
    /// are loaded again, the same, by the next refill.
    #[inline]
    pub(crate) fn refill(&mut self) {
        if let Some(word) = le::u64_at(self.data, self.pos) {
            self.buf |= word << self.bits;
            // `bits <= 63`: the whole bytes that fit are `7 - bits / 8`,
            // after which `bits` is `56 + bits % 8`.
            self.pos += (63 - self.bits as usize) >> 3;
            self.bits |= 56;
        } else {
            self.refill_tail();
        }
    }

    /// [`refill`](Self::refill) within the last 8 bytes of the input.
    #[inline(never)]
    fn refill_tail(&mut self) {
        let rest = self.data.get(self.pos..).unwrap_or_default();
        let take = ((63 - self.bits as usize) >> 3).min(rest.len());
        if let Some(bytes) = rest.get(..take) {
            self.buf |= le::u64_padded(bytes) << self.bits;
            self.pos += take;
            self.bits += 8 * take as u32;
        }
    }

    /// The next `n` bits (`n <= 56`) without consuming them; missing bits
    /// past the end read as zero.
    #[inline]
    pub(crate) fn peek(&self, n: u32) -> u64 {
        self.buf & ((1u64 << n) - 1)
    }

    /// Drops `n` bits; consuming more than were loaded marks an overrun.
    #[inline]
    pub(crate) fn consume(&mut self, n: u32) {
        if n > self.bits {
            self.overrun = true;
            self.buf = 0;
            self.bits = 0;
        } else {
            self.buf >>= n;
            self.bits -= n;
        }
    }

    /// Reads `n <= 56` bits; call [`refill`](Self::refill) first.
    #[inline]
    pub(crate) fn read(&mut self, n: u32) -> u64 {
        let v = self.peek(n);
        self.consume(n);
        v
    }

    /// Valid bits loaded: at least this many can be peeked or read
    /// without a refill.
    #[inline]
    pub(crate) fn available(&self) -> u32 {
        self.bits
    }

    /// Reads `n <= 64` bits, refilling as needed.
    #[inline]
    pub(crate) fn read_wide(&mut self, n: u32) -> u64 {
        if n <= self.bits && n < 64 {
            return self.read(n);
        }
        self.read_wide_slow(n)
    }

    #[inline(never)]
    fn read_wide_slow(&mut self, n: u32) -> u64 {
        self.refill();
        if n > 32 {
            let lo = self.read(32);
            self.refill();
            lo | self.read(n - 32) << 32
        } else {
            self.read(n)
        }
    }

    /// True when the stream was consumed exactly: no overrun, and nothing
    /// but the zero padding of the last byte left over.
    pub(crate) fn finish(&self) -> bool {
        !self.overrun && self.pos == self.data.len() && self.bits < 8 && self.buf == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn roundtrip(fields in proptest::collection::vec((any::<u64>(), 0u32..=64), 0..200)) {
            let mut w = BitWriter::default();
            for &(v, n) in &fields {
                let v = if n == 64 { v } else { v & ((1u64 << n) - 1) };
                w.put_wide(v, n);
            }
            let bytes = w.finish();
            let mut r = BitReader::new(&bytes);
            for &(v, n) in &fields {
                let v = if n == 64 { v } else { v & ((1u64 << n) - 1) };
                prop_assert_eq!(r.read_wide(n), v);
            }
            r.refill();
            prop_assert!(r.finish());
        }
    }

    #[test]
    fn overrun_is_flagged() {
        let mut r = BitReader::new(&[0xFF]);
        assert_eq!(r.read(8), 0xFF);
        assert!(r.finish());
        r.read(1);
        assert!(!r.finish());
    }
}
