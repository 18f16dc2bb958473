#!/usr/bin/env python3
"""cca.py - a model of PyTorch's CUDA caching allocator policy (one device, per-stream pools).

Written from c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator; pytorch/pytorch, read at
001074d2; the policy below is the same in the 2.1-2.13 releases), default settings: no
max_split_size (unlimited), no expandable segments, no garbage-collection threshold, no
roundup_power2_divisions. What it models, each with the function it follows:

- round_size: every request is rounded up to a multiple of kMinBlockSize (512 B), at least 512.
- get_pool: requests <= kSmallSize (1 MiB) are served from the small pool, the rest from the large.
- get_allocation_size: a new segment is kSmallBuffer (2 MiB) for a small request, kLargeBuffer
  (20 MiB) for a request under kMinLargeAlloc (10 MiB), else the request rounded up to kRoundLarge
  (2 MiB).
- get_free_block: best fit, the smallest free block of the pool not smaller than the request
  (BlockComparatorSize orders by stream, size, then address; lower_bound on the size).
- streams: a block remembers the stream it was allocated on (Block::stream, set in malloc from
  the current stream); BlockComparatorSize compares the stream first and get_free_block's
  lower_bound searches with the request's stream and accepts only a block of that stream
  (`(*it)->stream != p.stream()` ends the search), so a block freed after use on one stream is
  reused only by requests made on the same stream; free_block returns it to the pool of its own
  stream whichever stream frees it. Reserved is then the sum of every stream's segments. Blocks
  used on another stream with record_stream wait for their events (not modelled: these sequences
  free a block after the stream that used it is done).
- malloc / alloc_found_block: the block is split when should_split holds (remainder >= 512 B in
  the small pool, > kSmallSize in the large one); the request takes the front of the block, the
  remainder goes back to the pool.
- free_block / try_merge_blocks: a freed block merges with its free neighbours in the same segment
  (prev / next of the split chain), never across segments.
- alloc_block / release_cached_blocks: cudaMalloc on a miss; cached segments are given back only
  when cudaMalloc fails (release_available_cached_blocks, then release_cached_blocks: every segment
  whose blocks are all free, i.e. an unsplit free block) or on empty_cache. `capacity` (optional)
  makes the cudaMalloc fail above it, to model that path.

Reserved = the sum of segment sizes (stats reserved_bytes); its high-water mark is what
torch.cuda.max_memory_reserved reports. Allocated counts the rounded block sizes (stats
allocated_bytes, as memory_allocated reports).
"""

import bisect

K_MIN_BLOCK = 512
K_SMALL_SIZE = 1 << 20
K_SMALL_BUFFER = 2 << 20
K_LARGE_BUFFER = 20 << 20
K_MIN_LARGE_ALLOC = 10 << 20
K_ROUND_LARGE = 2 << 20


def round_size(size):
    if size < K_MIN_BLOCK:
        return K_MIN_BLOCK
    return K_MIN_BLOCK * ((size + K_MIN_BLOCK - 1) // K_MIN_BLOCK)


def allocation_size(size):
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return K_ROUND_LARGE * ((size + K_ROUND_LARGE - 1) // K_ROUND_LARGE)


class Block:
    __slots__ = ("addr", "size", "small", "allocated", "prev", "next", "seg", "stream")

    def __init__(self, addr, size, small, seg, stream=0):
        self.addr, self.size, self.small, self.seg, self.stream = addr, size, small, seg, stream
        self.allocated = False
        self.prev = self.next = None

    def key(self):
        return (self.size, self.addr)


class OutOfMemory(Exception):
    pass


class Allocator:
    def __init__(self, capacity=None):
        self.capacity = capacity
        self.free = {True: [], False: []}  # small? -> sorted [(stream, size, addr)]
        self.by_addr = {}  # addr -> free Block (in a pool)
        self.next_addr = 1 << 32
        self.reserved = 0
        self.allocated = 0
        self.peak_reserved = 0
        self.peak_allocated = 0
        self.segments = 0
        self.mallocs = 0
        self.releases = 0
        self.stream_reserved = {}

    # --- pools ---------------------------------------------------------------------------------
    def _insert(self, b):
        bisect.insort(self.free[b.small], (b.stream, b.size, b.addr))
        self.by_addr[b.addr] = b

    def _remove(self, b):
        lst = self.free[b.small]
        i = bisect.bisect_left(lst, (b.stream, b.size, b.addr))
        assert lst[i] == (b.stream, b.size, b.addr)
        del lst[i]
        del self.by_addr[b.addr]

    def _get_free_block(self, size, small, stream=0):
        lst = self.free[small]
        i = bisect.bisect_left(lst, (stream, size, 0))
        if i == len(lst) or lst[i][0] != stream:
            return None
        b = self.by_addr[lst[i][2]]
        self._remove(b)
        return b

    def free_sizes(self, small=False, stream=None):
        """(size, addr) of the free blocks of a pool, all streams' or one's, smallest first."""
        return [(z, a) for s, z, a in self.free[small] if stream is None or s == stream]

    # --- segments ------------------------------------------------------------------------------
    def _alloc_block(self, alloc_size, small, stream=0):
        if self.capacity is not None and self.reserved + alloc_size > self.capacity:
            return None
        addr = self.next_addr
        self.next_addr += alloc_size + (1 << 21)  # segments never touch
        self.reserved += alloc_size
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        self.segments += 1
        self.mallocs += 1
        self.stream_reserved[stream] = self.stream_reserved.get(stream, 0) + alloc_size
        return Block(addr, alloc_size, small, addr, stream)

    def release_cached_blocks(self):
        """Free every segment none of whose bytes is allocated (an unsplit free block)."""
        for small in (True, False):
            for _, size, addr in list(self.free[small]):
                b = self.by_addr[addr]
                if b.prev is None and b.next is None:
                    self._remove(b)
                    self.reserved -= b.size
                    self.stream_reserved[b.stream] -= b.size
                    self.segments -= 1
                    self.releases += 1

    empty_cache = release_cached_blocks

    # --- malloc / free -------------------------------------------------------------------------
    def malloc(self, nbytes, stream=0):
        size = round_size(nbytes)
        small = size <= K_SMALL_SIZE
        b = self._get_free_block(size, small, stream)
        if b is None:
            alloc = allocation_size(size)
            b = self._alloc_block(alloc, small, stream)
            if b is None:
                # release_available_cached_blocks frees oversize blocks only (none without
                # max_split_size); then release_cached_blocks and a retry
                self.release_cached_blocks()
                b = self._alloc_block(alloc, small, stream)
                if b is None:
                    raise OutOfMemory(size)
        remaining = b.size - size
        split = remaining >= K_MIN_BLOCK if small else remaining > K_SMALL_SIZE
        if split:
            rest = Block(b.addr + size, remaining, small, b.seg, b.stream)
            rest.prev, rest.next = b, b.next
            if b.next is not None:
                b.next.prev = rest
            b.next = rest
            b.size = size
            self._insert(rest)
        b.allocated = True
        self.allocated += b.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return b

    def free_block(self, b):
        assert b.allocated
        b.allocated = False
        self.allocated -= b.size
        for nb in (b.prev, b.next):  # try_merge_blocks(block, prev), then (block, next)
            if nb is None or nb.allocated:
                continue
            self._remove(nb)
            if nb is b.prev:
                b.addr = nb.addr
                b.prev = nb.prev
                if b.prev is not None:
                    b.prev.next = b
            else:
                b.next = nb.next
                if b.next is not None:
                    b.next.prev = b
            b.size += nb.size
        self._insert(b)

    def reset_peak(self):
        self.peak_reserved = self.reserved
        self.peak_allocated = self.allocated

    def cached_free(self):
        return self.reserved - self.allocated
