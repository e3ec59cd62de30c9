//! Bump allocation for one memtable's skip list (one arena for its nodes,
//! one for the values too long to sit in them).
//!
//! Nodes are carved, 8-byte aligned, from chunks that start at
//! [`FIRST_CHUNK_BYTES`] and double up to [`CHUNK_BYTES`] (so an idle
//! memtable of one of many column families reserves little; a node larger
//! than a quarter of `CHUNK_BYTES` that does not fit what is left gets a
//! chunk of its own), and every
//! chunk is freed at once when the arena drops, which is when the frozen
//! memtable has been flushed and its last reader has let go. Written by
//! hand because this is the engine's write path: one pointer bump per
//! version instead of three `malloc`s (node, key, value), and memory that
//! goes back to the operating system whole. Chunks are anonymous mappings
//! (those of ordinary size faulted in whole when mapped: [`map_chunk`]),
//! so a dropped memtable unmaps them; with `malloc`, freed nodes stayed
//! pinned in glibc's per-thread arenas by the few long-lived allocations
//! placed among them, and a server's resident memory kept the size of its
//! largest memtable long after the flush.
//!
//! Invariants: a chunk never moves, shrinks or is freed while the arena
//! lives, so every pointer [`Arena::alloc`] returns stays valid (and its
//! bytes keep what was written there) until the arena drops. Fresh memory
//! is zeroed.
//!
//! Thread safety: allocating takes `&mut self`; the skip list keeps its
//! arena under its writer lock. The chunks themselves are read by any
//! thread through the pointers handed out.

use std::ptr::NonNull;

/// Bytes in an ordinary chunk, once the arena has grown.
pub(crate) const CHUNK_BYTES: usize = 1 << 20;

/// Bytes in the first chunk; each next ordinary chunk doubles, up to
/// [`CHUNK_BYTES`].
pub(crate) const FIRST_CHUNK_BYTES: usize = 64 << 10;

/// Alignment of every allocation.
pub(crate) const ALIGN: usize = 8;

/// One block of memory the arena carves from: an anonymous mapping, or
/// heap words when the mapping was refused (and always under Miri, which
/// cannot run `mmap`). Heap memory is held as a raw pointer, not a `Box`:
/// moving a `Box` would assert unique access and invalidate the pointers
/// already handed out.
struct Chunk {
    start: NonNull<u8>,
    /// Length in 8-byte words.
    words: usize,
    /// The mapping, if the chunk is one; `None` for heap words.
    #[cfg(not(miri))]
    map: Option<memmap2::MmapMut>,
}

/// A bump allocator over chunks that live as long as it does.
pub(crate) struct Arena {
    chunks: Vec<Chunk>,
    /// Next free byte of the current chunk (dangling when there is none).
    next: NonNull<u8>,
    /// Bytes left after `next` in the current chunk.
    left: usize,
    /// Bytes of every chunk.
    reserved: usize,
}

// SAFETY: the arena owns its chunks, and their memory is not tied to a
// thread; the raw pointers point into them and are only used through
// `&mut Arena` (and by the skip list, which has its own contract).
unsafe impl Send for Arena {}

impl Arena {
    /// An arena with no chunk yet.
    pub(crate) fn new() -> Self {
        Arena {
            chunks: Vec::new(),
            next: NonNull::dangling(),
            left: 0,
            reserved: 0,
        }
    }

    /// Bytes of memory the arena holds (mapped, not necessarily touched).
    #[cfg(test)]
    pub(crate) fn reserved(&self) -> usize {
        self.reserved
    }

    /// `len` zeroed bytes aligned to [`ALIGN`], valid until the arena drops.
    pub(crate) fn alloc(&mut self, len: usize) -> NonNull<u8> {
        let len = len.max(1).next_multiple_of(ALIGN);
        if len > self.left {
            if len > CHUNK_BYTES / 4 {
                // A large node gets its own chunk; the current one stays.
                return self.new_chunk(len);
            }
            let size = FIRST_CHUNK_BYTES
                .checked_shl(self.chunks.len() as u32)
                .map_or(CHUNK_BYTES, |s| s.min(CHUNK_BYTES))
                .max(len);
            self.next = self.new_chunk(size);
            self.left = size;
        }
        let at = self.next;
        // SAFETY: `len <= left`, so `at + len` is inside the current chunk
        // or one past its end.
        self.next = unsafe { at.add(len) };
        self.left -= len;
        at
    }

    /// Maps a chunk of `len` bytes (a multiple of `ALIGN`) and returns its start.
    fn new_chunk(&mut self, len: usize) -> NonNull<u8> {
        let (chunk, start) = Chunk::new(len);
        self.chunks.push(chunk);
        self.reserved += len;
        start
    }
}

impl Chunk {
    /// A zeroed chunk of `len` bytes (a multiple of `ALIGN`).
    fn new(len: usize) -> (Chunk, NonNull<u8>) {
        // An anonymous mapping is zeroed, page aligned and unmapped whole
        // at drop. Refused (out of address space, a tight map count), fall
        // back to the heap, where failing aborts as any allocation does.
        #[cfg(not(miri))]
        if let Ok(mut map) = map_chunk(len) {
            if let Some(start) = NonNull::new(map.as_mut_ptr()) {
                let chunk = Chunk {
                    start,
                    words: len / ALIGN,
                    map: Some(map),
                };
                return (chunk, start);
            }
        }
        let words = Box::into_raw(vec![0u64; len / ALIGN].into_boxed_slice());
        let start = NonNull::new(words.cast::<u8>()).unwrap_or(NonNull::dangling());
        let chunk = Chunk {
            start,
            words: len / ALIGN,
            #[cfg(not(miri))]
            map: None,
        };
        (chunk, start)
    }
}

/// An anonymous mapping of `len` bytes for a chunk. One of ordinary size
/// or larger is faulted in whole when it is made (`MAP_POPULATE`): a
/// memtable writes its arenas front to back, so nearly every page of such
/// a chunk is soon written, and one system call that maps them all costs
/// less than a page fault for each. What it costs: the pages a chunk never
/// gets to (the last chunk when its memtable freezes, the tail left when a
/// node does not fit) are resident all the same, up to a chunk an arena;
/// and the whole chunk's faults land on the one insert that maps it, under
/// the skip list's writer lock. Measured with 60,000 inserts of 1 KB
/// values and 16-byte keys into one skip list (the 2-core VM, five
/// alternating runs): 926 ns per insert (900-1,013) against 1,121
/// (1,054-1,278), where a fault every four inserts had been a fifth of an
/// insert's time. Huge pages (`MADV_HUGEPAGE` on 2 MiB chunks) were faster
/// still alone (616-862 ns) but made `pith bench db`'s fill slower (94-104K
/// against 112-168K records/s): a huge page's fault may wait for the
/// kernel to compact memory. Smaller chunks, the first ones of an arena,
/// are left to fault page by page, so an idle memtable keeps nothing
/// resident it has not written.
#[cfg(not(miri))]
fn map_chunk(len: usize) -> std::io::Result<memmap2::MmapMut> {
    let mut options = memmap2::MmapOptions::new();
    options.len(len);
    if len >= CHUNK_BYTES {
        options.populate();
    }
    options.map_anon()
}

impl Drop for Chunk {
    fn drop(&mut self) {
        #[cfg(not(miri))]
        if self.map.is_some() {
            return; // the mapping unmaps itself
        }
        let words =
            std::ptr::slice_from_raw_parts_mut(self.start.as_ptr().cast::<u64>(), self.words);
        // SAFETY: `start` and `words` came from `Box::into_raw` of a boxed
        // slice of that length in `Chunk::new`, and this is the only drop.
        drop(unsafe { Box::from_raw(words) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_disjoint_and_zeroed() {
        let mut arena = Arena::new();
        let mut spans = Vec::new();
        for len in [1, 7, 8, 9, 100, CHUNK_BYTES / 4 + 1, 3, CHUNK_BYTES / 2, 64] {
            let p = arena.alloc(len);
            assert_eq!(p.as_ptr() as usize % ALIGN, 0);
            // SAFETY: `p` is valid for `len` bytes while `arena` lives.
            let bytes = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), len) };
            assert!(bytes.iter().all(|&b| b == 0));
            bytes.fill(len as u8);
            spans.push((p.as_ptr() as usize, len));
        }
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlap: {w:?}");
        }
        // The small ones shared the first chunk; the two larger than a
        // quarter chunk (and than what was left) got chunks of their own.
        let large = (CHUNK_BYTES / 4 + 8) + CHUNK_BYTES / 2;
        assert_eq!(arena.chunks.len(), 3);
        assert_eq!(arena.reserved(), FIRST_CHUNK_BYTES + large);
        // The first chunk goes on serving small ones; one that does not
        // fit starts an ordinary chunk, twice the size per chunk so far.
        let before = arena.next;
        arena.alloc(8);
        assert_eq!(arena.next.as_ptr() as usize, before.as_ptr() as usize + 8);
        arena.alloc(arena.left);
        arena.alloc(8);
        assert_eq!(arena.chunks.len(), 4);
        assert_eq!(
            arena.reserved(),
            FIRST_CHUNK_BYTES + large + (FIRST_CHUNK_BYTES << 3)
        );
        // Ordinary chunks stop growing at CHUNK_BYTES.
        for _ in 0..8 {
            arena.alloc(arena.left);
            arena.alloc(8);
        }
        assert_eq!(arena.left, CHUNK_BYTES - 8);
    }
}
