"""Benchmark the in-memory permutation index against brute force and the `simhash` package.

    python benchmarks/bench_index.py                 # 1M and 10M fingerprints, k = 3
    python benchmarks/bench_index.py --quick         # 100k
    python benchmarks/bench_index.py --sizes 1000000 --simhash-max 1000000

Per size: bulk build time, index and key bytes per fingerprint, single ``add_if_new``
latency (p50/p99 over ``--calls`` calls, 10% of them near-duplicates; and of
``replace_if_new``, what a crawl calls, whose keys_B includes the key lookup; and the
longest single call over enough of them to merge the write buffer), ``query_many``
throughput, and an exactness check against brute force on a sample.
Fingerprints are uniform random (the design's assumption); keys are ~35-byte URLs.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from scrapy_simhash.core.fingerprint import weakest_bits
from scrapy_simhash.core.fingerprinter import FingerprintOptions
from scrapy_simhash.index._buckets import probe_kernel
from scrapy_simhash.index._sketches import SketchStore
from scrapy_simhash.index._storage import KeyStore
from scrapy_simhash.index._tables import make_design
from scrapy_simhash.index.brute import BruteForceIndex
from scrapy_simhash.index.memory import MemoryIndex

Fingerprints = npt.NDArray[np.uint64]
EXACTNESS_SAMPLE = 200
BRUTE_CALLS = 30


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="comma-separated index sizes")
    parser.add_argument("--quick", action="store_true", help="one size of 100k")
    parser.add_argument("-k", "--max-distance", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20_000, help="single add_if_new calls timed")
    parser.add_argument("--batch", type=int, default=100_000, help="queries per query_many batch")
    parser.add_argument(
        "--simhash-max", type=int, default=1_000_000, help="largest size for the simhash package"
    )
    parser.add_argument(
        "--calibrate", action="store_true", help="fit the probe cost model at the last size"
    )
    parser.add_argument("--wildcard-bits", type=int, default=FingerprintOptions().wildcard_bits, metavar="M",
                        help="also time checks that ignore M bits drawn as a page's are, as SIMHASH_WILDCARD_BITS "
                        "(default: its default, %(default)s; 0: no)")
    args = parser.parse_args()
    args.sizes = [100_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    return args


def make_keys(first: int, count: int) -> KeyStore:
    return KeyStore.from_keys(f"https://example.com/page/{i}" for i in range(first, first + count))


def near_duplicates(
    rng: np.random.Generator, stored: Fingerprints, count: int, k: int
) -> list[int]:
    """Stored fingerprints with 1..k random bits flipped."""
    picks = stored[rng.integers(0, len(stored), count)].tolist()
    return [_flip_random_bits(rng, f, int(rng.integers(1, k + 1))) if k else f for f in picks]


def _flip_random_bits(rng: np.random.Generator, fingerprint: int, bits: int) -> int:
    for position in rng.choice(64, size=bits, replace=False).tolist():
        fingerprint ^= 1 << position
    return fingerprint


def mixed_probes(rng: np.random.Generator, stored: Fingerprints, count: int, k: int) -> list[int]:
    """90% new random fingerprints, 10% near-duplicates of stored ones, shuffled."""
    near = near_duplicates(rng, stored, count // 10, k)
    fresh = rng.integers(0, 2**64 - 1, count - len(near), dtype=np.uint64, endpoint=True).tolist()
    probes = near + fresh
    rng.shuffle(probes)  # type: ignore[arg-type]
    return probes


def rss_bytes() -> int:
    """Resident memory of this process (Linux), for what tracemalloc would slow down."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def timed_build(build: Callable[[], Any], trace: bool = True) -> tuple[Any, float, int]:
    """(result, seconds, bytes the build kept allocated: tracemalloc, else RSS growth)."""
    gc.collect()
    rss_before = rss_bytes()
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    result = build()
    seconds = time.perf_counter() - start
    if trace:
        allocated, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    else:
        allocated = rss_bytes() - rss_before
    return result, seconds, allocated


def latencies_us(call: Callable[[int, str], object], probes: Sequence[int]) -> tuple[float, float]:
    """p50 and p99 of single calls, in microseconds."""
    p50, p99 = np.percentile(timings_us(call, probes), [50, 99])
    return float(p50), float(p99)


def timings_us(
    call: Callable[[int, str], object], probes: Sequence[int], prefix: str = "new",
    clock: Callable[[], int] = time.perf_counter_ns,
) -> npt.NDArray[np.float64]:
    """The time of each single call, in microseconds (*clock*: wall time, or this thread's
    CPU time, which leaves out the time other processes took the core)."""
    timings = []
    for i, fingerprint in enumerate(probes):
        key = f"https://example.com/{prefix}/{i}"
        start = clock()
        call(fingerprint, key)
        timings.append(clock() - start)
    return np.array(timings) / 1000


def throughput(run: Callable[[list[int]], object], queries: list[int]) -> float:
    start = time.perf_counter()
    run(queries)
    return len(queries) / (time.perf_counter() - start)


def bench_memory(
    args: argparse.Namespace, fps: Fingerprints, rng: np.random.Generator
) -> dict[str, Any]:
    k, size = args.max_distance, len(fps)
    keys = make_keys(0, size)
    # Every entry with a sketch, as a crawl stores them (random words: the checks compare them).
    sketches = SketchStore(rng.integers(0, 2**64 - 1, size * SketchStore.WORDS, dtype=np.uint64))
    index, seconds, traced = timed_build(lambda: MemoryIndex.from_arrays(fps, keys, k, sketches=sketches))
    usage = index.memory_usage()
    brute = BruteForceIndex.from_arrays(fps, KeyStore.from_buffer(keys.data, keys.ends), k)
    sample = mixed_probes(rng, fps, EXACTNESS_SAMPLE, k) + near_duplicates(
        rng, fps, EXACTNESS_SAMPLE, k
    )
    expected = [brute.query(q) for q in sample]
    exact = [index.query(q) for q in sample] == expected and index.query_many(sample) == expected
    batch = rng.integers(0, 2**64 - 1, args.batch, dtype=np.uint64).tolist()
    row = {
        "impl": "memory",
        "design": "B=%(b)d T=%(t)d p=%(p)d"
        % {
            "b": len(index.design.blocks),
            "t": len(index.design.tables),
            "p": index.design.prefix_bits,
        },
        "build_s": seconds,
        "index_B": usage["index_bytes"] / size,
        "traced_B": traced / size,
        "keys_B": usage["key_bytes"] / size,
        "sketch_B": usage["sketch_bytes"] / size,
        "query_many_qps": throughput(index.query_many, batch),
        "query_qps": throughput(lambda qs: [index.query(q) for q in qs], batch[: args.calls]),
        "exact": f"{exact} ({len(sample)})",
        "matches": sum(map(len, expected)),
    }
    row["p50_us"], row["p99_us"] = latencies_us(
        index.add_if_new, mixed_probes(rng, fps, args.calls, k)
    )
    row["brute"] = bench_brute(brute, rng, fps, k)
    if args.wildcard_bits:
        row["wildcard"] = bench_wildcard(index, brute, rng, fps, args)
        row["replace"] = bench_replace(index, rng, fps, args)
        row["longest"] = bench_longest(index, rng, fps, args)
    return row


def bench_wildcard(
    index: MemoryIndex, brute: BruteForceIndex, rng: np.random.Generator, fps: Fingerprints,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """add_if_new with a mask of --wildcard-bits bits per call (SIMHASH_WILDCARD_BITS), chosen
    as a page's are: the weakest of random margins, spread over the quarters."""
    def mask() -> int:
        return weakest_bits(rng.random(64), args.wildcard_bits)

    sample = [(q, mask()) for q in mixed_probes(rng, fps, EXACTNESS_SAMPLE, args.max_distance)]
    exact = all(index.query(q, m) == brute.query(q, m) for q, m in sample)
    masks = {}  # one mask per probe, drawn before the clock starts

    sketch = rng.bytes(32)  # a page's: compared with every stored candidate within k

    def call(fingerprint: int, key: str) -> object:
        return index.add_if_new(fingerprint, key, masks[fingerprint], sketch)

    probes = mixed_probes(rng, fps, args.calls, args.max_distance)
    masks.update((probe, mask()) for probe in probes)
    p50, p99 = latencies_us(call, probes)
    return {"impl": f"memory, {args.wildcard_bits} wildcard bits", "design": "same", "p50_us": p50,
            "p99_us": p99, "exact": f"{exact} ({len(sample)})"}


def bench_replace(
    index: MemoryIndex, rng: np.random.Generator, fps: Fingerprints, args: argparse.Namespace
) -> dict[str, Any]:
    """replace_if_new, what a crawl calls: add_if_new (with the wildcard bits and a sketch)
    plus the look-up of the page's earlier records by key. The first call builds the
    key lookup over the whole index (timed apart, as ``lookup_build_s``)."""
    sketch = rng.bytes(32)
    probes = mixed_probes(rng, fps, args.calls, args.max_distance)
    masks = {probe: weakest_bits(rng.random(64), args.wildcard_bits) for probe in probes}
    started = time.perf_counter()
    index.replace_if_new(0, "https://example.com/first")
    build_seconds = time.perf_counter() - started

    def call(fingerprint: int, key: str) -> object:
        return index.replace_if_new(fingerprint, key, masks[fingerprint], sketch)

    p50, p99 = latencies_us(call, probes)
    keys_bytes = index.memory_usage()["key_bytes"] / len(index)
    return {"impl": f"memory, replace_if_new, {args.wildcard_bits} wildcard bits (lookup built in "
            f"{build_seconds:.2f} s)", "design": "same", "keys_B": keys_bytes, "p50_us": p50, "p99_us": p99}


def bench_longest(
    index: MemoryIndex, rng: np.random.Generator, fps: Fingerprints, args: argparse.Namespace
) -> dict[str, Any]:
    """The longest single replace_if_new over enough calls to fill the write buffer and
    merge it (a step per call) and to grow the columns: what holds the reactor longest. In
    CPU time: on a shared machine, wall time adds whatever the other processes took."""
    calls = int(max(args.calls, len(index) // 64 * 1.1))
    sketch = rng.bytes(32)
    probes = mixed_probes(rng, fps, calls, args.max_distance)
    masks = {probe: weakest_bits(rng.random(64), args.wildcard_bits) for probe in probes}
    gc.collect()
    gc.freeze()  # this script's own objects (the probes): the collector walks none of the index's
    timings = timings_us(lambda f, key: index.replace_if_new(f, key, masks[f], sketch), probes, "longest",
                         time.thread_time_ns)
    gc.unfreeze()
    p50, p99 = np.percentile(timings, [50, 99])
    return {"impl": f"memory, replace_if_new x {calls:,}, CPU time: longest call {timings.max() / 1000:.1f} ms, "
            f"{int((timings > 10_000).sum())} over 10 ms", "design": "same", "p50_us": p50, "p99_us": p99}


def bench_brute(
    brute: BruteForceIndex, rng: np.random.Generator, fps: Fingerprints, k: int
) -> dict[str, Any]:
    probes = mixed_probes(rng, fps, BRUTE_CALLS, k)
    p50, p99 = latencies_us(brute.add_if_new, probes)
    return {
        "impl": "brute force",
        "design": "linear scan",
        "index_B": brute._fingerprints.nbytes / len(fps),
        "p50_us": p50,
        "p99_us": p99,
        "query_qps": throughput(lambda qs: [brute.query(q) for q in qs], probes),
        "exact": "by definition",
    }


def bench_simhash_package(
    args: argparse.Namespace, fps: Fingerprints, rng: np.random.Generator
) -> dict[str, Any]:
    """The `simhash` package's SimhashIndex (k + 1 blocks, a set of strings per bucket)."""
    from simhash import Simhash, SimhashIndex  # type: ignore[import-untyped]

    logging.getLogger("simhash").setLevel(logging.ERROR)  # it warns on every big bucket
    k, size = args.max_distance, len(fps)
    entries = [(f"https://example.com/page/{i}", Simhash(f)) for i, f in enumerate(fps.tolist())]
    # pure Python: tracemalloc would slow the build several times, so RSS growth it is
    index, seconds, grown = timed_build(lambda: SimhashIndex(entries, f=64, k=k), trace=False)
    entries.clear()  # (the index keeps what it needs)

    def add_if_new(fingerprint: int, key: str) -> object:
        value = Simhash(fingerprint)
        found = index.get_near_dups(value)
        return found or index.add(key, value)

    calls = min(args.calls, 5000)
    queries = rng.integers(0, 2**64 - 1, calls, dtype=np.uint64).tolist()
    row = {
        "impl": "simhash (PyPI)",
        "design": f"{k + 1} tables",
        "build_s": seconds,
        "index_B": grown / size,  # keys included: it stores "hex,key" strings
        "query_qps": throughput(lambda qs: [index.get_near_dups(Simhash(q)) for q in qs], queries),
    }
    row["p50_us"], row["p99_us"] = latencies_us(add_if_new, mixed_probes(rng, fps, calls, k))
    return row


COLUMNS = [
    ("impl", "{}"),
    ("design", "{}"),
    ("build_s", "{:.2f}"),
    ("index_B", "{:.1f}"),
    ("traced_B", "{:.1f}"),
    ("keys_B", "{:.1f}"),
    ("sketch_B", "{:.1f}"),
    ("p50_us", "{:.1f}"),
    ("p99_us", "{:.1f}"),
    ("query_qps", "{:,.0f}"),
    ("query_many_qps", "{:,.0f}"),
    ("exact", "{}"),
]


def print_table(size: int, rows: list[dict[str, Any]]) -> None:
    cells = [[name for name, _ in COLUMNS]]
    cells += [
        [fmt.format(row[name]) if name in row else "-" for name, fmt in COLUMNS] for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    print(f"\n== {size:,} fingerprints ==")
    for line in cells:
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths)))


def calibrate(size: int, rng: np.random.Generator) -> None:
    """Fit the per-table and per-candidate probe costs used by ``choose_design``."""
    fps = rng.integers(0, 2**64 - 1, size, dtype=np.uint64, endpoint=True)
    keys = KeyStore.from_buffer(b"k" * size, np.arange(1, size + 1, dtype=np.uint64))
    queries = rng.integers(0, 2**64 - 1, 3000, dtype=np.uint64).tolist()
    samples = []  # (tables, expected candidates, ns per probe)
    for blocks, prefix_bits in CALIBRATION_DESIGNS:
        index = MemoryIndex.from_arrays(fps, keys, 3, design=make_design(3, blocks, prefix_bits))
        seconds = 1 / throughput(lambda qs: [index.query(q) for q in qs], queries)
        design = index.design
        samples.append((len(design.tables), design.expected_candidates(size), seconds * 1e9))
        print(f"B={blocks} p={prefix_bits}: {samples[-1][2]:,.0f} ns/probe")
    tables, candidates, cost = np.array(samples).T
    fit = np.linalg.lstsq(np.column_stack([tables, candidates]), cost, rcond=None)[0]
    print(f"COST_PER_TABLE_NS = {fit[0]:.0f}, COST_PER_CANDIDATE_NS = {fit[1]:.1f} (at {size:,})")


# k = 3 designs with 4, 10 and 20 tables and 15 to 60k candidates per probe
CALIBRATION_DESIGNS = [(4, 16), (4, 13), (4, 10), (5, 20), (5, 16), (5, 13), (6, 20), (6, 16)]


def main() -> None:
    args = parse_args()
    if args.calibrate:
        calibrate(args.sizes[-1], np.random.default_rng(1))
        return
    rng = np.random.default_rng(2007)
    for size in args.sizes:
        fps = rng.integers(0, 2**64 - 1, size, dtype=np.uint64, endpoint=True)
        memory = bench_memory(args, fps, rng)
        extra = [memory.pop(name) for name in ("wildcard", "replace", "longest") if name in memory]
        rows = [memory, *extra, memory.pop("brute")]
        if size <= args.simhash_max:
            rows.append(bench_simhash_package(args, fps, rng))
        print_table(size, rows)
    print(
        "\nindex_B: allocated index bytes per fingerprint (every table's slices, table 0's tails and row"
        " ids, the rows' hints, directories, the write buffers);"
        "\ntraced_B: bytes tracemalloc saw the bulk build keep allocated, per fingerprint;"
        "\nkeys_B: the keys (UTF-8 buffer + offsets); sketch_B: the minwise sketches; p50/p99: single add_if_new, microseconds;"
        "\nsimhash (PyPI): index_B is RSS growth of the build and includes its keys."
        f"\nThe index's probe: {probe_kernel()} (\"c\": scrapy_simhash/index/scan_c/, built at install;"
        " \"numpy\": the fallback where it was not built)."
    )


if __name__ == "__main__":
    main()
