"""The longest single check of a crawl that re-fetches changed pages, through a compaction.

    python benchmarks/bench_compaction.py                    # 10M fingerprints (~6 GiB, ~3 minutes)
    python benchmarks/bench_compaction.py --size 1000000
    python benchmarks/bench_compaction.py --pause-us 1000 --calls 40000   # a crawl's pace

A crawl that re-fetches a changed page calls ``replace_if_new``, which removes the page's
older record: removed rows wait as tombstones until they pass a quarter of the index, then
a compaction drops them for good. This script builds the in-memory index in bulk (keys of
~35 bytes, a sketch a row) with its key lookup, removes records by key until the next
removal is ``--margin`` short of that threshold (untimed), then times ``--calls``
``replace_if_new`` of changed pages (existing keys, new fingerprints, 14 wildcard bits
drawn as a page's, a sketch), each of which removes one record and stores one: a
compaction starts among them. Per call, CPU time (this thread's: what the call itself
took) and wall time; the longest of each, how many over 10 ms, p50 and p99; the calls a
compaction was under way for (where the index says); and the index's own bytes
(``memory_usage``, a compaction's arrays included) and the process's RSS, before, at
their highest and after.
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

import numpy as np

from bench_index import make_keys, rss_bytes
from scrapy_simhash.core.fingerprint import weakest_bits
from scrapy_simhash.core.fingerprinter import FingerprintOptions
from scrapy_simhash.index._sketches import SketchStore
from scrapy_simhash.index.memory import MemoryIndex

_SAMPLE_EVERY = 250  # calls between memory samples


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000_000, help="fingerprints in the index")
    parser.add_argument("--calls", type=int, default=40_000, help="replace_if_new calls timed")
    parser.add_argument("--margin", type=int, default=2_000, help="timed calls before the compaction is due")
    parser.add_argument("--wildcard-bits", type=int, default=FingerprintOptions().wildcard_bits)
    parser.add_argument("--pause-us", type=float, default=0.0,
                        help="sleep this long between calls (a crawl's other work between its checks)")
    parser.add_argument("--seed", type=int, default=2007)
    return parser.parse_args()


def build(size: int, rng: np.random.Generator) -> MemoryIndex:
    fingerprints = rng.integers(0, 2**64 - 1, size, dtype=np.uint64, endpoint=True)
    sketches = SketchStore(rng.integers(0, 2**64 - 1, size * SketchStore.WORDS, dtype=np.uint64))
    index = MemoryIndex.from_arrays(fingerprints, make_keys(0, size), 3, sketches=sketches)
    index.prepare_key_lookups()  # (as a crawl does when it opens the index)
    return index


def removal_threshold(index: MemoryIndex) -> int:
    """How many tombstones the next removal must pass to start a compaction (memory.py's
    rule: a quarter of the rows, the removed ones included)."""
    return max(index._buffer_bound(), len(index._hints) // 4)


def reset_peak_rss() -> None:
    """Let VmHWM count from now on (Linux)."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


def peak_rss_bytes() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))


def index_bytes(index: MemoryIndex) -> int:
    return sum(index.memory_usage().values())


def timed_calls(
    index: MemoryIndex, args: argparse.Namespace, pages: list[int], rng: np.random.Generator
) -> dict[str, Any]:
    """replace_if_new for each page number in *pages* (a changed page), timed one by one."""
    probes = rng.integers(0, 2**64 - 1, len(pages), dtype=np.uint64, endpoint=True).tolist()
    masks = [weakest_bits(rng.random(64), args.wildcard_bits) for _ in pages]
    keys = [f"https://example.com/page/{page}" for page in pages]
    sketch = rng.bytes(32)
    cpu, wall, compacting, memory, under_way = [], [], 0, [], []
    collections: list[list[float]] = []  # [CPU seconds, generation] of each collection during the calls

    def timed_collection(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append([time.thread_time(), info["generation"]])
        else:
            collections[-1][0] = time.thread_time() - collections[-1][0]

    gc.collect()
    gc.freeze()  # this script's own objects: the collector walks none of the index's
    gc.callbacks.append(timed_collection)
    for at, (fingerprint, key, mask) in enumerate(zip(probes, keys, masks)):
        started_cpu, started_wall = time.thread_time_ns(), time.perf_counter_ns()
        index.replace_if_new(fingerprint, key, mask, sketch)
        cpu.append(time.thread_time_ns() - started_cpu)
        wall.append(time.perf_counter_ns() - started_wall)
        under_way.append(getattr(index, "_compaction", None) is not None)
        compacting += under_way[-1]
        if at % _SAMPLE_EVERY == 0:
            memory.append(index_bytes(index))
        if args.pause_us:
            time.sleep(args.pause_us / 1e6)
    gc.callbacks.remove(timed_collection)
    gc.unfreeze()
    return {"cpu_us": np.array(cpu) / 1000, "wall_us": np.array(wall) / 1000, "compacting": compacting,
            "memory": memory, "under_way": np.array(under_way), "collections": collections}


#: The first and the last call a compaction was under way for, or None.
Span = tuple[int, int] | None


def compaction_span(under_way: np.ndarray) -> Span:
    steps = np.flatnonzero(under_way)
    return (int(steps[0]), int(steps[-1])) if len(steps) else None


def report(name: str, timings: np.ndarray, span: Span) -> str:
    p50, p99 = np.percentile(timings, [50, 99])
    return (f"{name}: longest {timings.max() / 1000:.2f} ms ({where(int(timings.argmax()), span)}),"
            f" {int((timings > 10_000).sum())} over 10 ms, p50 {p50:.1f} us, p99 {p99:.1f} us")


def phases_p50(timings: np.ndarray, span: Span) -> str:
    """p50 CPU time of the calls before the compaction and of those after its end (its new
    columns, faulted in 4 KB pages, on huge pages again once ``khugepaged`` collapses them)."""
    if span is None:
        return "p50 CPU time: no compaction among the calls"
    before, after = timings[: span[0]], timings[span[1] + 1 :]
    return f"p50 CPU time before the compaction {_median(before)}, after its end {_median(after)}"


def _median(timings: np.ndarray) -> str:
    return f"{np.median(timings):.1f} us ({len(timings):,} calls)" if len(timings) else "none"


def where(call: int, span: Span) -> str:
    """Call *call* against the compaction: before it, during it, or how many calls after its end."""
    if span is None or call < span[0]:
        return f"call {call:,}, before the compaction"
    if call <= span[1]:
        return f"call {call:,}, during the compaction"
    return f"call {call:,}, {call - span[1]:,} calls after the compaction's end"


def main() -> None:
    args = parse_args()
    rng = np.random.default_rng(args.seed)
    index = build(args.size, rng)
    order = rng.permutation(args.size)
    removed = removal_threshold(index) - args.margin
    started = time.perf_counter()
    for page in order[:removed].tolist():
        index.remove_key(f"https://example.com/page/{page}")
    print(f"{args.size:,} fingerprints, {removed:,} records removed untimed in {time.perf_counter() - started:.1f} s;"
          f" a compaction is due after {removal_threshold(index) - len(index._removed) + 1:,} more removals")
    gc.collect()
    before, rss_before = index_bytes(index), rss_bytes()
    reset_peak_rss()
    calls = timed_calls(index, args, order[removed : removed + args.calls].tolist(), rng)
    peak = peak_rss_bytes()
    after, rss_after = index_bytes(index), rss_bytes()
    print(f"replace_if_new x {args.calls:,} (changed pages, {args.wildcard_bits} wildcard bits, a sketch,"
          f" {args.pause_us:g} us apart);"
          f" a compaction under way for {calls['compacting']:,} of them")
    span = compaction_span(calls["under_way"])
    print("  " + report("CPU time", calls["cpu_us"], span))
    print("  " + report("wall time", calls["wall_us"], span))
    print("  " + phases_p50(calls["cpu_us"], span))
    full = [seconds * 1000 for seconds, generation in calls["collections"] if generation == 2]
    print(f"  garbage collections during the calls: {len(calls['collections']):,}, {len(full)} of them full"
          f" (the longest {max(full, default=0):.2f} ms)")
    mib = 2**20
    print(f"  index bytes (memory_usage, all parts): before {before / mib:,.0f} MiB, highest"
          f" {max(calls['memory']) / mib:,.0f}, after {after / mib:,.0f};"
          f" RSS before {rss_before / mib:,.0f} MiB, peak {peak / mib:,.0f}, after {rss_after / mib:,.0f}")
    described = index.describe()
    print("  bytes a live fingerprint after: " + ", ".join(
        f"{part} {described[f'{part}_bytes_per_fingerprint']}" for part in ("index", "key", "sketch")))


if __name__ == "__main__":
    main()
