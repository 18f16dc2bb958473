#!/usr/bin/env python3
"""test_cca.py - hand sequences whose outcome follows from c10/cuda/CUDACachingAllocator.cpp.

Each expected figure is derived in its comment from the source's constants and functions, not
from running the model. Run: python3 -m unittest validation/oracle/allocator/test_cca.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cca import Allocator, OutOfMemory  # noqa: E402

MiB = 1 << 20


class Policy(unittest.TestCase):
    def test_round_and_small_pool(self):
        a = Allocator()
        b = a.malloc(100)  # round_size: 512; small pool; get_allocation_size: kSmallBuffer 2 MiB
        self.assertEqual(b.size, 512)
        self.assertEqual(a.reserved, 2 * MiB)
        a.malloc(1000)  # 1024 B, split from the 2 MiB - 512 remainder (>= 512 B): no new segment
        self.assertEqual(a.reserved, 2 * MiB)
        self.assertEqual(a.allocated, 512 + 1024)
        a.malloc(MiB)  # exactly kSmallSize is small: fits the remainder 2 MiB - 1536
        self.assertEqual(a.reserved, 2 * MiB)
        a.malloc(MiB)  # remainder now 1 MiB - 1536 < 1 MiB: a second 2 MiB segment
        self.assertEqual(a.reserved, 4 * MiB)

    def test_mid_requests_share_20mib(self):
        a = Allocator()
        a.malloc(3 * MiB)  # 1-10 MiB: kLargeBuffer 20 MiB segment, split (17 MiB > 1 MiB)
        a.malloc(5 * MiB)  # best fit: the 17 MiB remainder
        a.malloc(9 * MiB)  # remainder 12 MiB, served; 3 MiB left
        self.assertEqual(a.reserved, 20 * MiB)
        a.malloc(4 * MiB)  # 3 MiB left is too small: a second 20 MiB segment
        self.assertEqual(a.reserved, 40 * MiB)

    def test_large_own_segment_rounded_2mib(self):
        a = Allocator()
        b = a.malloc(12 * MiB + 1)  # round 12 MiB + 512; segment 14 MiB; remainder 2 MiB - 512 > 1 MiB: split
        self.assertEqual(a.reserved, 14 * MiB)
        self.assertEqual(b.size, 12 * MiB + 512)
        c = a.malloc(11 * MiB)  # no free block >= 11 MiB: own segment 12 MiB, remainder 1 MiB: not split
        self.assertEqual(a.reserved, 26 * MiB)
        self.assertEqual(c.size, 12 * MiB)  # the whole block is handed out (and counted allocated)
        self.assertEqual(a.allocated, 24 * MiB + 512)

    def test_best_fit_and_no_merge_across_segments(self):
        a = Allocator()
        x = a.malloc(100 * MiB)
        y = a.malloc(200 * MiB)
        a.free_block(x)
        a.free_block(y)
        self.assertEqual(a.reserved, 300 * MiB)
        z = a.malloc(50 * MiB)  # best fit: the 100 MiB block, split 50 / 50
        self.assertEqual(z.seg, x.seg)
        a.free_block(z)  # merges back with its 50 MiB remainder
        w = a.malloc(150 * MiB)  # the 200 MiB block; two 100 + 200 segments never merge
        self.assertEqual(w.seg, y.seg)
        a.free_block(w)
        v = a.malloc(250 * MiB)  # nothing >= 250 MiB: a new segment, 300 -> 550 MiB reserved
        self.assertEqual(a.reserved, 550 * MiB)
        a.free_block(v)

    def test_merge_within_segment(self):
        a = Allocator()
        s = a.malloc(100 * MiB)
        a.free_block(s)
        p = a.malloc(30 * MiB)
        q = a.malloc(30 * MiB)  # the 70 MiB remainder -> 30 + 40
        a.free_block(p)
        a.free_block(q)  # merges with p (prev) and the 40 MiB (next): one 100 MiB block
        self.assertEqual(a.free_sizes(), [(100 * MiB, s.addr)])
        a.malloc(100 * MiB)
        self.assertEqual(a.reserved, 100 * MiB)

    def test_live_block_pins_a_split_segment(self):
        # growth: a longer step's request after a shorter one's, with a live block left in the old segment
        a = Allocator()
        s = a.malloc(100 * MiB)
        a.free_block(s)
        keep = a.malloc(20 * MiB)  # split: 20 live + 80 free in the 100 MiB segment
        a.malloc(90 * MiB)  # best fit among free: 80 MiB is too small -> a new 90 MiB segment
        self.assertEqual(a.reserved, 190 * MiB)
        a.release_cached_blocks()  # nothing to give back: both segments hold live blocks
        self.assertEqual(a.reserved, 190 * MiB)
        a.free_block(keep)
        a.release_cached_blocks()  # the first segment is now all free: released
        self.assertEqual(a.reserved, 90 * MiB)
        self.assertEqual(a.peak_reserved, 190 * MiB)  # max_memory_reserved keeps the high-water mark

    def test_failed_cudamalloc_releases_cache(self):
        a = Allocator(capacity=300 * MiB)
        x = a.malloc(100 * MiB)
        y = a.malloc(150 * MiB)
        a.free_block(x)
        a.free_block(y)
        z = a.malloc(200 * MiB)  # 250 + 200 > 300: release both free segments, retry: 200 MiB
        self.assertEqual(a.reserved, 200 * MiB)
        self.assertEqual(a.peak_reserved, 250 * MiB)
        with self.assertRaises(OutOfMemory):
            a.malloc(120 * MiB)  # 200 live + 120 > 300 and nothing cached to release
        a.free_block(z)

    def test_streams_do_not_share_blocks(self):
        # c10/cuda/CUDACachingAllocator.cpp, its header comment: "Allocations are associated with a
        # stream. Once freed, blocks can be re-allocated on the same stream, but not on any other
        # stream"; get_free_block searches with the request's stream (BlockComparatorSize compares
        # stream first) and gives up at a block of another stream.
        a = Allocator()
        x = a.malloc(100 * MiB, stream=1)  # an all-gather output on a side stream: 100 MiB segment
        a.free_block(x)  # freed (by whichever stream): back to stream 1's pool
        y = a.malloc(50 * MiB)  # default stream: the cached 100 MiB is stream 1's, a new 50 MiB segment
        self.assertNotEqual(y.seg, x.seg)
        self.assertEqual(a.reserved, 150 * MiB)
        self.assertEqual(a.stream_reserved, {1: 100 * MiB, 0: 50 * MiB})
        z = a.malloc(60 * MiB, stream=1)  # stream 1 reuses its own block, split 60 / 40
        self.assertEqual(z.seg, x.seg)
        self.assertEqual(a.reserved, 150 * MiB)
        a.free_block(y)
        w = a.malloc(30 * MiB, stream=1)  # best fit within stream 1: its 40 MiB remainder, not the 50
        self.assertEqual(w.seg, x.seg)
        self.assertEqual(a.reserved, 150 * MiB)

    def test_reserved_is_sum_of_stream_peaks(self):
        # the same 100 MiB used in turn on two streams: one stream would reserve 100 MiB, two reserve
        # 200 MiB (neither pool takes the other's free block)
        a = Allocator()
        for s in (0, 1, 0, 1):
            a.free_block(a.malloc(100 * MiB, stream=s))
        self.assertEqual(a.peak_reserved, 200 * MiB)
        a.empty_cache()  # release_cached_blocks frees every stream's unsplit free segments
        self.assertEqual(a.reserved, 0)
        self.assertEqual(a.stream_reserved, {0: 0, 1: 0})


class FSDP1Init(unittest.TestCase):
    """fsdp1.init_unit on Llama-2-7b's root unit (embed 32000 x 4096, norm 4096, lm_head, bf16; two
    ranks), each figure derived by hand from torch's FSDP1 init and the allocator's sizes."""

    ROOT = [262144000, 8192, 262144000]

    def run_root(self, bucket_free):
        import fsdp1

        run = fsdp1.Run(2, "per-stream", bucket_free)
        held = []
        shard = fsdp1.init_unit(run, self.ROOT, False, held)
        for b in held:
            run.free(b)
        return run.a, shard

    def test_root_nccl_held(self):
        # orig: 250 + 250 MiB segments and a 2 MiB small one; buckets: the embedding alone (250 MiB
        # reached, sent as is), norm + head flattened (262152192 B: 252 MiB segment), held by the
        # NCCL stream; cat 524296192 B: 502 MiB; the shard 262148096 B: 252 MiB (the bucket held)
        a, shard = self.run_root("nccl")
        self.assertEqual(a.peak_reserved, (250 + 250 + 2 + 252 + 502 + 252) * MiB)
        self.assertEqual(a.allocated, 262148096)
        self.assertEqual(shard.size, 262148096)

    def test_root_bucket_freed_at_once(self):
        # the freed 252 MiB bucket takes the shard: no segment for it
        a, _ = self.run_root("immediate")
        self.assertEqual(a.peak_reserved, (250 + 250 + 2 + 252 + 502) * MiB)


if __name__ == "__main__":
    unittest.main()
