//! The stress test's data model: which key is which, what value every
//! version of a key holds, and whether a value read is allowed.
//!
//! Key `i` (of `0..keys`) is `k` + `i` as eight decimal digits + a suffix
//! of 0-12 bytes that depends on `i` alone, so key order is index order
//! and [`Model::bound`] (the key without its suffix) cuts the key space
//! between two indices. Every write of a key raises its *version* by one;
//! version 0 means "never written". Whether version `v >= 1` of key `i` is
//! a put or a delete, and every byte of a put's value, are functions of
//! `(salt, i, v)`: a read can be checked byte for byte, and a value that
//! belongs to another key or version is recognized as such.
//!
//! A value is `i u32 | v u32 | check u32 | padding` (little-endian), about
//! `value_bytes` long on average, at least 12 bytes.
//!
//! Everything here is pure and `Sync`; threads share one [`Model`].

/// Percentage of versions that are deletes.
const DELETE_PERCENT: u64 = 25;

/// Bytes of a value's header (key index, version, check word).
const VALUE_HEADER: usize = 12;

/// Largest key space: indices are eight decimal digits.
pub const MAX_KEYS: u32 = 100_000_000;

const SUFFIX: &[u8] = b"~pith.stress";

/// SplitMix64's finalizer: a well-mixed 64-bit hash of `x`.
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Keys, values and the put-or-delete choice of every version.
#[derive(Clone, Debug)]
pub struct Model {
    /// Mixed into every choice, fixed when the expected state is created.
    pub salt: u64,
    /// Mean value length.
    pub value_bytes: usize,
    /// Size of the key space.
    pub keys: u32,
}

/// What a read may find for a key, given the versions it can be at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// No value.
    Absent,
    /// The value of this version.
    Version(u32),
}

impl Model {
    fn hash(&self, i: u32, v: u32) -> u64 {
        mix(self.salt ^ mix((u64::from(i) << 32) | u64::from(v)))
    }

    /// The key of index `i`.
    pub fn key(&self, i: u32) -> Vec<u8> {
        let mut k = Self::bound(i);
        let n = (mix(self.salt ^ u64::from(i)) % (SUFFIX.len() as u64 + 1)) as usize;
        k.extend_from_slice(SUFFIX.get(..n).unwrap_or_default());
        k
    }

    /// The smallest byte string at or before key `i` and after key `i - 1`.
    pub fn bound(i: u32) -> Vec<u8> {
        format!("k{i:08}").into_bytes()
    }

    /// The index of `key` when it is exactly one of this model's keys.
    pub fn index_of(&self, key: &[u8]) -> Option<u32> {
        let digits = std::str::from_utf8(key.get(1..9)?).ok()?;
        let i: u32 = digits.parse().ok()?;
        (key.first() == Some(&b'k') && i < self.keys && self.key(i) == key).then_some(i)
    }

    /// True when version `v` of key `i` is a put (version 0 is not).
    pub fn is_put(&self, i: u32, v: u32) -> bool {
        v > 0 && self.hash(i, v) % 100 >= DELETE_PERCENT
    }

    /// The value version `v` of key `i` puts.
    pub fn value(&self, i: u32, v: u32) -> Vec<u8> {
        const ALPHABET: &[u8; 16] = b"etaoinshrdlu .,-";
        let h = self.hash(i, v);
        let mean = self.value_bytes as u64;
        let len = ((mean / 2 + h % (mean + 1)) as usize).max(VALUE_HEADER);
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&i.to_le_bytes());
        out.extend_from_slice(&v.to_le_bytes());
        out.extend_from_slice(&(h as u32).to_le_bytes());
        let mut state = h;
        while out.len() < len {
            state = mix(state);
            for nibble in 0..16 {
                if out.len() == len {
                    break;
                }
                let c = ALPHABET[((state >> (nibble * 4)) & 15) as usize];
                out.push(c);
            }
        }
        out
    }

    /// Which version of key `i` the bytes `value` are; `Err` describes
    /// bytes that are no version of key `i`.
    pub fn decode(&self, i: u32, value: &[u8]) -> Result<u32, String> {
        let word = |at: usize| -> Option<u32> {
            let b = value.get(at..at + 4)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let (Some(ki), Some(v)) = (word(0), word(4)) else {
            return Err(format!("{} bytes, too short to be a value", value.len()));
        };
        if ki != i {
            return Err(format!("a value of key index {ki} (version {v})"));
        }
        if self.value(i, v) != value {
            return Err(format!(
                "{} bytes naming version {v}, but not that version's bytes",
                value.len()
            ));
        }
        if !self.is_put(i, v) {
            return Err(format!("version {v}, which is a delete"));
        }
        Ok(v)
    }

    /// What `read` (`None`: absent) is for key `i`, or a description of
    /// bytes no version of the key holds.
    pub fn classify(&self, i: u32, read: Option<&[u8]>) -> Result<Found, String> {
        match read {
            None => Ok(Found::Absent),
            Some(v) => self.decode(i, v).map(Found::Version),
        }
    }

    /// True when a read of key `i` that began when the key was at version
    /// `before` at the latest and ended before version `after + 1` was
    /// written may find `found`.
    pub fn allowed(&self, i: u32, before: u32, after: u32, found: Found) -> bool {
        match found {
            Found::Version(v) => before <= v && v <= after,
            // Every version in between is a candidate; bounded so a huge
            // window (a stalled reader) cannot cost more than a moment.
            Found::Absent => {
                before == 0
                    || (before..=after).take(4096).any(|v| !self.is_put(i, v))
                    || after - before >= 4096
            }
        }
    }

    /// Human form of what a read of key `i` should find.
    pub fn describe_expected(&self, i: u32, before: u32, after: u32) -> String {
        let one = |v: u32| {
            if v == 0 {
                "absent (never written)".to_string()
            } else if self.is_put(i, v) {
                format!("version {v} (a put)")
            } else {
                format!("absent (version {v} is a delete)")
            }
        };
        if before == after {
            one(before)
        } else {
            format!("{} .. {}", one(before), one(after))
        }
    }

    /// Human form of what a read found.
    pub fn describe_found(&self, i: u32, read: Option<&[u8]>) -> String {
        match self.classify(i, read) {
            Ok(Found::Absent) => "absent".into(),
            Ok(Found::Version(v)) => format!("version {v}"),
            Err(e) => e,
        }
    }
}
