//! Large `u32` tables of the matcher (chain heads and links, megabytes
//! each) in memory backed by 2 MiB pages where the kernel allows it.
//!
//! Why: the matcher reads these tables at random, one entry per position
//! parsed. With 4 KiB pages a 16 MiB head table spans 4,096 pages, more
//! than the CPU's translation cache holds, so nearly every read also walks
//! the page tables, and the CPU runs only a couple of walks at once, which
//! serializes reads that would otherwise overlap. Measured on Debian
//! records with a trained model: see `docs/` or the fast parse's module
//! doc. The memory is an anonymous mapping advised `MADV_HUGEPAGE`; where
//! the advice is refused (other kernels, huge pages disabled) the table
//! still works with small pages. Tables under 2 MiB use the heap.
//!
//! Invariant: `as_slice()` is exactly `len` entries, all set to the fill
//! value at creation.

use memmap2::{Advice, MmapMut};

const HUGE_PAGE: usize = 2 << 20;

enum Memory<T> {
    Heap(Vec<T>),
    /// The mapping and the byte offset of the first 2 MiB boundary in it.
    Mapped(MmapMut, usize),
}

/// A fixed-length table of `T`.
pub(crate) struct Table<T: bytemuck::Pod = u32> {
    memory: Memory<T>,
    len: usize,
}

impl<T: bytemuck::Pod> Table<T> {
    const SIZE: usize = std::mem::size_of::<T>();

    /// A copy of `items`.
    pub(crate) fn from_slice(items: &[T]) -> Self {
        let mut t = Table::new(items.len(), T::zeroed());
        t.as_mut_slice().copy_from_slice(items);
        t
    }

    /// `len` entries of `fill`.
    pub(crate) fn new(len: usize, fill: T) -> Self {
        let bytes = len * Self::SIZE;
        if bytes >= HUGE_PAGE {
            if let Ok(map) = MmapMut::map_anon(bytes + HUGE_PAGE) {
                let offset = map.as_ptr().align_offset(HUGE_PAGE);
                // Advice only: a kernel that refuses it gives small pages.
                let _ = map.advise(Advice::HugePage);
                let mut table = Table {
                    memory: Memory::Mapped(map, offset),
                    len,
                };
                table.as_mut_slice().fill(fill);
                return table;
            }
        }
        Table {
            memory: Memory::Heap(vec![fill; len]),
            len,
        }
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[T] {
        match &self.memory {
            Memory::Heap(v) => v,
            Memory::Mapped(map, offset) => {
                bytemuck::cast_slice(&map[*offset..*offset + self.len * Self::SIZE])
            }
        }
    }

    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        let end = self.len * Self::SIZE;
        match &mut self.memory {
            Memory::Heap(v) => v,
            Memory::Mapped(map, offset) => {
                bytemuck::cast_slice_mut(&mut map[*offset..*offset + end])
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_tables_hold_their_entries() {
        for len in [0, 1, 1000, (HUGE_PAGE / 4) * 3 + 7] {
            let mut t = Table::new(len, u32::MAX);
            assert_eq!(t.len(), len);
            assert!(t.as_slice().iter().all(|&v| v == u32::MAX));
            for (i, v) in t.as_mut_slice().iter_mut().enumerate() {
                *v = i as u32;
            }
            assert!(t.as_slice().iter().enumerate().all(|(i, &v)| v == i as u32));
        }
    }
}
