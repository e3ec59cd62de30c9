//! `pith-enc`: the low-level encodings every PithDB crate shares.
//!
//! The bottom of the crate graph: it depends on nothing but `std`, and the
//! trie, the record store and the engine build their formats from it, so
//! each encoding is written (and tested) once:
//!
//! * [`le`]: little-endian integer reads (checked, or from fixed-size
//!   headers) and appends;
//! * [`packed`]: fixed-width unsigned integers bit-packed into `u64` words,
//!   readable in place;
//! * [`varint`]: LEB128 unsigned varints;
//! * [`prefix`]: the successor of a key prefix and the common prefix length
//!   of two byte strings.
//!
//! Each module only encodes and decodes; framing (counts, widths, padding,
//! checksums) and error reporting stay with the format that uses it. No
//! function here keeps state, so everything is safe to call from any thread.
//!
//! # Example
//!
//! ```
//! use pith_enc::{le, packed, prefix, varint};
//!
//! let mut bytes = Vec::new();
//! le::put_u32(&mut bytes, 7);
//! varint::put(&mut bytes, 300);
//! assert_eq!(le::u32_at(&bytes, 0), Some(7));
//! assert_eq!(varint::get(&bytes[4..]), Some((300, &[][..])));
//!
//! let values = [3u64, 0, 7, 5];
//! let width = packed::bits_for(7);
//! let words = packed::pack(&values, width);
//! let p = packed::Packed::new(&words, values.len(), width).expect("enough words");
//! assert_eq!(p.get(2), 7);
//!
//! assert_eq!(prefix::successor(b"ab\xff").as_deref(), Some(&b"ac"[..]));
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(any(test, feature = "golden"))]
pub mod golden;
pub mod le;
pub mod packed;
pub mod prefix;
pub mod varint;
