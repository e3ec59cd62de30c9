//! Little-endian bit streams: the writer packs values LSB-first into bytes,
//! the reader takes them back in the same order.
//!
//! Invariants: the writer's accumulator holds fewer than 32 pending bits
//! between calls; the reader never reads outside its slice: past its end
//! it reads zero bits, as many as asked (a refill always tops up to 56
//! bits), and counts them, so a stream that is consumed past its end
//! (truncated or crafted) is detected by [`BitReader::finish`] rather
//! than by a panic or a check on every read.

use pith_enc::le;

/// Packs bit fields into bytes, least significant bit first.
#[derive(Default)]
pub(crate) struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    bits: u32,
}

impl BitWriter {
    /// A writer appending to `out` (what [`BitWriter::finish`] returns):
    /// a caller reusing one buffer from stream to stream allocates
    /// nothing once it is large enough.
    pub(crate) fn appending(out: Vec<u8>) -> Self {
        BitWriter {
            out,
            acc: 0,
            bits: 0,
        }
    }

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
    /// Next byte to load into `buf`; past `data.len()` when zero bits past
    /// the end have been loaded.
    pos: usize,
    buf: u64,
    /// Bits of `buf` loaded and not yet consumed (at most 63).
    bits: u32,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        let mut r = BitReader {
            data,
            pos: 0,
            buf: 0,
            bits: 0,
        };
        r.refill();
        r
    }

    /// Tops `buf` up to at least 56 bits (zero bits past the end of the
    /// input).
    ///
    /// Away from the end of the input this is one unaligned 8-byte load
    /// and no branch on the bit count (the zstd/FSE way): the whole bytes
    /// that fit are kept, and the bits of a partly fitting byte above them
    /// are loaded again, the same, by the next refill.
    #[inline]
    pub(crate) fn refill(&mut self) {
        let word = match le::u64_at(self.data, self.pos) {
            Some(word) => word,
            None => tail_word(self.data, self.pos),
        };
        self.buf |= word << self.bits;
        // `bits <= 63`: the whole bytes that fit are `7 - bits / 8`, after
        // which `bits` is `56 + bits % 8`.
        self.pos += (63 - self.bits as usize) >> 3;
        self.bits |= 56;
    }

    /// The next `n` bits (`n <= 56`) without consuming them.
    #[inline]
    pub(crate) fn peek(&self, n: u32) -> u64 {
        self.buf & ((1u64 << n) - 1)
    }

    /// Drops `n` bits, which must be loaded (`n <=`
    /// [`available`](Self::available)): callers refill before each field
    /// or check what is left.
    #[inline]
    pub(crate) fn consume(&mut self, n: u32) {
        debug_assert!(n <= self.bits, "{n} bits consumed, {} loaded", self.bits);
        self.buf >>= n;
        self.bits = self.bits.saturating_sub(n);
    }

    /// Reads `n <= 56` bits; call [`refill`](Self::refill) first.
    #[inline]
    pub(crate) fn read(&mut self, n: u32) -> u64 {
        let v = self.peek(n);
        self.consume(n);
        v
    }

    /// Bits loaded: at least this many can be peeked or read without a
    /// refill.
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

    // Inlined, rare as it is: a call taking `&mut self` would keep the
    // reader in memory rather than in registers in the whole decode loop.
    #[inline(always)]
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

    /// True when the stream was consumed exactly: no bit past its end,
    /// and nothing but the zero padding of the last byte left over.
    pub(crate) fn finish(&self) -> bool {
        // Bits consumed; `pos * 8 >= bits` as every loaded bit was counted
        // in `pos`.
        let consumed = (self.pos as u64 * 8).saturating_sub(u64::from(self.bits));
        let total = self.data.len() as u64 * 8;
        consumed <= total && consumed + 8 > total && self.buf == 0
    }
}

/// The bytes of `data` from `pos` on, within its last 8, zero-padded
/// (not a method: a call taking the reader by reference would keep it in
/// memory rather than in registers in decode loops).
#[inline(never)]
fn tail_word(data: &[u8], pos: usize) -> u64 {
    // The input's last 8 bytes shifted down to start at `pos` (no copy of
    // a variable length: short records refill here often), when it has
    // 8 bytes and `pos` is within them.
    let last = data.len().checked_sub(8).and_then(|start| {
        let skip = pos.checked_sub(start).filter(|&n| n < 8)?;
        Some(le::u64_at(data, start)? >> (8 * skip))
    });
    match last {
        Some(word) => word,
        None => le::u64_padded(data.get(pos..).unwrap_or_default()),
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
    fn tail_words_are_the_bytes_left_zero_padded() {
        let data: Vec<u8> = (1..=17).collect();
        for len in 0..=data.len() {
            let d = &data[..len];
            for pos in 0..len + 10 {
                let want = le::u64_padded(d.get(pos..).unwrap_or_default());
                assert_eq!(tail_word(d, pos), want, "{len} bytes, from {pos}");
            }
        }
    }

    #[test]
    fn bits_past_the_end_read_as_zero_and_are_counted() {
        let mut r = BitReader::new(&[0xAB]);
        assert_eq!(r.read(8), 0xAB);
        // Refills past the end load zeros; reading them is an overrun.
        r.refill();
        assert_eq!(r.available(), 56);
        assert_eq!(r.read(16), 0);
        assert!(!r.finish());
        assert!(BitReader::new(&[]).finish());
        // One bit of two bytes read: a whole byte is left over.
        let mut r = BitReader::new(&[1, 0]);
        assert_eq!(r.read(1), 1);
        assert!(!r.finish());
        // One bit of one byte: the rest is the zero padding.
        let mut r = BitReader::new(&[1]);
        assert_eq!(r.read(1), 1);
        assert!(r.finish());
        // Padding that is not zero is not padding.
        let mut r = BitReader::new(&[3]);
        assert_eq!(r.read(1), 1);
        assert!(!r.finish());
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
