"""Time the in-memory index's check at a size bench_index.py cannot hold (100M fingerprints).

    python benchmarks/bench_index_large.py                        # 100M, ~10 GB of RAM, ~3 minutes
    python benchmarks/bench_index_large.py --size 10000000 --rounds 5

The index is built in bulk over uniform random fingerprints with empty keys and no stored
sketches (keys and sketches would take another ~8 GB at 100M, and bench_index.py's brute
force copy as much again); then, per round, ``--calls`` calls of ``add_if_new`` of new random
pages with a sketch, without and with ``--wildcard-bits`` bits drawn as a page's are. It
prints the build time, the index's bytes per fingerprint and, per round, p50/p99 of each
kind of call in CPU time (this thread's: what other processes took of the core left out).
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np
import numpy.typing as npt

from scrapy_simhash.core.fingerprint import weakest_bits
from scrapy_simhash.core.fingerprinter import FingerprintOptions
from scrapy_simhash.index._buckets import probe_kernel
from scrapy_simhash.index._sketches import SketchStore
from scrapy_simhash.index._storage import KeyStore
from scrapy_simhash.index.memory import MemoryIndex


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000_000, help="fingerprints in the index")
    parser.add_argument("--calls", type=int, default=5000, help="add_if_new calls timed per round and kind")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-k", "--max-distance", type=int, default=3)
    parser.add_argument("--wildcard-bits", type=int, default=FingerprintOptions().wildcard_bits)
    return parser.parse_args()


def build(size: int, max_distance: int, rng: np.random.Generator) -> tuple[MemoryIndex, float]:
    fingerprints = rng.integers(0, 2**64 - 1, size, dtype=np.uint64, endpoint=True)
    keys = KeyStore.from_buffer(b"", np.zeros(size, dtype=np.uint64))  # empty keys
    started = time.perf_counter()
    index = MemoryIndex.from_arrays(fingerprints, keys, max_distance, sketches=SketchStore.empty(size))
    return index, time.perf_counter() - started


def cpu_times_us(index: MemoryIndex, probes: list[int], masks: list[int], sketch: bytes) -> npt.NDArray[np.float64]:
    """The CPU time of each add_if_new, in microseconds."""
    times = np.empty(len(probes))
    for i, (fingerprint, mask) in enumerate(zip(probes, masks)):
        started = time.thread_time_ns()
        index.add_if_new(fingerprint, "", mask, sketch)
        times[i] = time.thread_time_ns() - started
    return times / 1000


def main() -> None:
    args = parse_args()
    rng = np.random.default_rng(2007)
    index, seconds = build(args.size, args.max_distance, rng)
    per_fingerprint = index.memory_usage()["index_bytes"] / args.size
    print(f"{args.size:,} fingerprints, k = {args.max_distance}: built in {seconds:.0f} s, "
          f"{per_fingerprint:.2f} index bytes a fingerprint, probe: {probe_kernel()}")
    sketch = rng.bytes(32)
    gc.collect()
    gc.freeze()  # (the probes: the collector walks none of the index's arrays)
    for round_number in range(1, args.rounds + 1):
        cells = []
        for bits in (0, args.wildcard_bits):
            probes = rng.integers(0, 2**64 - 1, args.calls, dtype=np.uint64, endpoint=True).tolist()
            masks = [weakest_bits(rng.random(64), bits) if bits else 0 for _ in probes]
            p50, p99 = np.percentile(cpu_times_us(index, probes, masks, sketch), [50, 99])
            cells.append(f"{bits} wildcard bits: p50 {p50:.1f} us, p99 {p99:.1f} us")
        print(f"round {round_number}: add_if_new of new pages, CPU time: " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
