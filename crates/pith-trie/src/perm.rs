//! A permutation with fast forward and inverse, in `n log n (1 + 1/T)` bits:
//! the key ids of format versions 1 and 2 (version 3 stores the keys' levels
//! instead, [`crate::levels`]; this is kept to read the files written
//! before, and written only by the tests' legacy builder).
//!
//! The trie numbers its terminal nodes breadth-first (LOUDS order), but a key's
//! id must be its rank in sorted order, so that ids, key order and the record
//! store's order agree. `pi[t]` maps breadth-first terminal rank `t` to the
//! key id; the inverse (id -> terminal, needed by id -> key) is computed by
//! walking `pi`'s cycles with shortcuts (Munro, Raman, Raman and Rao,
//! "Succinct representations of permutations"): along every cycle longer than
//! `T`, every `T`-th element `x` stores `back[x] = pi^-T(x)`, so an inverse
//! takes at most `2T + 1` forward steps.
//!
//! Layout: `pi: Packed | sampled: BitVec (n bits) | back: Packed`.
//! [`Perm::read`] checks the parts' lengths and widths in O(1); every
//! accessor is bounds-checked and [`Perm::inverse`] takes at most `2T + 2`
//! steps whatever the bytes. [`Perm::validate`] checks that `pi` is a
//! permutation and that every shortcut is right, so that the inverse is
//! the true one.

use pith_enc::packed::{bits_for, Packed};

use crate::bitvec::{BitVec, BitVecBuilder};
use crate::error::Result;
use crate::words::{corrupt, packed_bytes, push_packed, WordReader};

/// Shortcut spacing along each cycle.
const T: usize = 8;

pub(crate) fn write_perm(out: &mut Vec<u64>, pi: &[u64]) {
    let n = pi.len();
    let width = bits_for(n.saturating_sub(1) as u64);
    push_packed(out, pi, width);
    let mut sampled = BitVecBuilder::with_len(n);
    let mut back_of = Vec::new(); // (x, back[x])
    let mut seen = vec![false; n];
    let mut cycle = Vec::new();
    for start in 0..n {
        if seen[start] {
            continue;
        }
        cycle.clear();
        let mut x = start;
        while !seen[x] {
            seen[x] = true;
            cycle.push(x);
            x = pi[x] as usize;
        }
        if cycle.len() > T {
            for j in (0..cycle.len()).step_by(T) {
                let from = (j + cycle.len() - T) % cycle.len();
                back_of.push((cycle[j], cycle[from] as u64));
            }
        }
    }
    back_of.sort_unstable();
    for &(x, _) in &back_of {
        sampled.set(x);
    }
    sampled.write(out);
    let back: Vec<u64> = back_of.iter().map(|&(_, b)| b).collect();
    push_packed(out, &back, width);
}

/// A read-only permutation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Perm<'a> {
    pi: Packed<'a>,
    sampled: BitVec<'a>,
    back: Packed<'a>,
    /// Byte offset of the section in the file, for error messages.
    at: usize,
}

impl<'a> Perm<'a> {
    pub(crate) fn read(r: &mut WordReader<'a>, n: usize) -> Result<Self> {
        let off = r.offset();
        let pi = r.packed("permutation")?;
        let sampled = BitVec::read(r, "permutation samples")?;
        let back = r.packed("permutation shortcuts")?;
        if pi.len() != n || sampled.len() != n || back.len() != sampled.ones() {
            return Err(corrupt(off, "permutation parts disagree on the length"));
        }
        let width = bits_for(n.saturating_sub(1) as u64);
        if pi.width() != width || back.width() != width {
            return Err(corrupt(off, "permutation width is not bits_for(n - 1)"));
        }
        Ok(Perm {
            pi,
            sampled,
            back,
            at: off,
        })
    }

    /// Checks what [`Perm::read`] took on trust: `pi` is a permutation,
    /// every shortcut is right, and every inverse finishes within the bound
    /// the shortcuts promise.
    pub(crate) fn validate(&self) -> Result<()> {
        let (pi, sampled, back, off) = (self.pi, self.sampled, self.back, self.at);
        let n = pi.len();
        sampled.validate()?;
        let mut hit = vec![false; n];
        for t in 0..n {
            let v = pi.get(t) as usize;
            if v >= n || std::mem::replace(&mut hit[v], true) {
                return Err(corrupt(off, "permutation maps two terminals to one key id"));
            }
        }
        for s in 0..back.len() {
            let x = sampled.select1(s);
            let mut y = back.get(s) as usize;
            if y >= n {
                return Err(corrupt(off, "permutation shortcut out of range"));
            }
            for _ in 0..T {
                y = pi.get(y) as usize;
            }
            if y != x {
                return Err(corrupt(off, "permutation shortcut is wrong"));
            }
        }
        for i in 0..n {
            if self.try_inverse(i).is_none() {
                return Err(corrupt(off, "permutation cycle lacks shortcuts"));
            }
        }
        Ok(())
    }

    pub(crate) fn size_bytes(&self) -> usize {
        packed_bytes(&self.pi) + self.sampled.size_bytes() + packed_bytes(&self.back)
    }

    /// `pi(t)`.
    #[inline(always)]
    pub(crate) fn get(&self, t: usize) -> usize {
        self.pi.try_get(t).unwrap_or(0) as usize
    }

    /// `pi^-1(i)`; `i < n`. On a permutation not yet validated the answer
    /// may be wrong (0 when the walk fails), but the walk is bounded.
    #[inline(always)]
    pub(crate) fn inverse(&self, i: usize) -> usize {
        self.try_inverse(i).unwrap_or(0)
    }

    #[inline(always)]
    fn try_inverse(&self, i: usize) -> Option<usize> {
        let n = self.pi.len();
        let mut j = i;
        let mut jumped = false;
        for _ in 0..2 * T + 2 {
            if j >= n {
                return None;
            }
            if !jumped && self.sampled.get(j) {
                j = self.back.try_get(self.sampled.rank1(j))? as usize;
                jumped = true;
                continue;
            }
            let next = self.get(j);
            if next == i {
                return Some(j);
            }
            j = next;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn inverse_matches(pi in Just((0..500u64).collect::<Vec<_>>()).prop_shuffle()) {
            let mut out = Vec::new();
            write_perm(&mut out, &pi);
            let mut r = WordReader::new(&out, 0);
            let p = Perm::read(&mut r, pi.len()).unwrap();
            p.validate().unwrap();
            for (t, &v) in pi.iter().enumerate() {
                prop_assert_eq!(p.get(t), v as usize);
                prop_assert_eq!(p.inverse(v as usize), t);
            }
        }
    }

    #[test]
    fn one_long_cycle() {
        let n = 1000u64;
        let pi: Vec<u64> = (0..n).map(|i| (i + 1) % n).collect();
        let mut out = Vec::new();
        write_perm(&mut out, &pi);
        let mut r = WordReader::new(&out, 0);
        let p = Perm::read(&mut r, n as usize).unwrap();
        p.validate().unwrap();
        for i in 0..n as usize {
            assert_eq!(p.inverse(i), (i + n as usize - 1) % n as usize);
        }
    }
}
