"""On-disk index: bulk inserts/s, add_if_new latency (write included), reopen time, bytes/fp.

    python benchmarks/bench_disk.py            # 1M and 10M fingerprints
    python benchmarks/bench_disk.py --quick    # 100k
    python benchmarks/bench_disk.py --hosts 200 --sizes 1000000   # one namespace per host
    python benchmarks/bench_disk.py --fsync --sizes 1000000       # add_if_new with each SIMHASH_FSYNC
    python benchmarks/bench_disk.py --compaction --sizes 10000000 # reopen that rewrites a reset store
    python benchmarks/bench_disk.py --sizes 100000000 --cold      # reopen with the files out of the page cache (root)

With --compaction the store is filled, reset (``SIMHASH_INDEX_RESET``) and filled again
with as many other entries: the next open finds half of its records dead, and rewrites
it ("compacting reopen s", then "reopen after s" and the file bytes before and after).

With --hosts N the entries are spread over N namespaces (as ``SIMHASH_SCOPE = "domain"``
keeps one per host) and "open all s" is the time to open every one of them in one
process, as a crawl does when it meets each host.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np

from scrapy_simhash.index import DiskIndex, SimhashIndex

_CHUNK = 100_000
_PROBES = 20_000


def random_fingerprints(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=count, dtype=np.uint64, endpoint=False)


def url(i: int) -> str:
    return f"https://www.example.com/section-{i % 97}/article/{i}.html"  # ~50 bytes, like a URL


def bulk_insert(path: str, size: int, seed: int = 1, reset: bool = False) -> float:
    """Seconds to add *size* entries with add_many, in chunks."""
    fingerprints = random_fingerprints(size, seed=seed)
    started = time.perf_counter()
    with DiskIndex(path, expected_size=size, reset=reset) as index:
        for start in range(0, size, _CHUNK):
            chunk = fingerprints[start : start + _CHUNK].tolist()
            index.add_many(zip(chunk, map(url, range(start, start + len(chunk)))))
    return time.perf_counter() - started


def reopen(path: str, cold: bool = False) -> tuple[float, DiskIndex]:
    if cold:
        drop_page_cache()
    started = time.perf_counter()
    index = DiskIndex(path)
    return time.perf_counter() - started, index


def add_latencies(index: SimhashIndex, probes: int = _PROBES, seed: int = 2) -> np.ndarray:
    """Latency (s) of add_if_new of new fingerprints (for the disk store: probe plus writes)."""
    latencies = np.empty(probes)
    for i, fingerprint in enumerate(random_fingerprints(probes, seed=seed).tolist()):
        started = time.perf_counter()
        index.add_if_new(fingerprint, url(i))
        latencies[i] = time.perf_counter() - started
    return latencies


def queries_per_second(index: SimhashIndex, batch: int = _PROBES, probes: int = _PROBES) -> float:
    """Throughput of query_many in batches of *batch* fingerprints."""
    queries = random_fingerprints(probes, seed=3).tolist()
    started = time.perf_counter()
    for start in range(0, probes, batch):
        index.query_many(queries[start : start + batch])
    return probes / (time.perf_counter() - started)


def drop_page_cache() -> None:
    """Write the dirty pages, then drop the clean ones: the store's files are read from the
    disk again, as after a reboot (Linux, as root)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as control:
            control.write("3\n")
    except OSError as exc:
        raise SystemExit(f"--cold needs root on Linux to drop the page cache: {exc}") from exc


def run(size: int, cold: bool = False) -> dict[str, str]:
    path = tempfile.mkdtemp(prefix="bench-disk-")
    try:
        insert_seconds = bulk_insert(path, size)
        file_bytes = _file_bytes(path)
        reopen_seconds, index = reopen(path, cold)
        with index:
            latencies = add_latencies(index)
            qps = queries_per_second(index)
    finally:
        shutil.rmtree(path)
    return {
        "size": f"{size:,}",
        "bulk inserts/s": f"{size / insert_seconds:,.0f}",
        "add_if_new p50 us": f"{np.percentile(latencies, 50) * 1e6:.1f}",
        "add_if_new p99 us": f"{np.percentile(latencies, 99) * 1e6:.1f}",
        "add_if_new/s": f"{len(latencies) / latencies.sum():,.0f}",
        "query_many/s": f"{qps:,.0f}",
        "reopen s": f"{reopen_seconds:.2f}",
        "file bytes/fp": f"{file_bytes / size:.1f}",
    }


def run_hosts(size: int, hosts: int) -> dict[str, str]:
    """Open *hosts* namespaces of a store of *size* entries, one after the other."""
    path = tempfile.mkdtemp(prefix="bench-disk-hosts-")
    per_host = size // hosts
    try:
        fingerprints = random_fingerprints(per_host * hosts, seed=4).tolist()
        for host in range(hosts):
            with DiskIndex(path, expected_size=per_host, namespace=f"host{host}.example") as index:
                chunk = fingerprints[host * per_host : (host + 1) * per_host]
                index.add_many((fp, url(host * per_host + n)) for n, fp in enumerate(chunk))
        started = time.perf_counter()
        opened = [DiskIndex(path, expected_size=per_host, namespace=f"host{h}.example") for h in range(hosts)]
        seconds = time.perf_counter() - started
        assert all(len(index) == per_host for index in opened)
        for index in opened:
            index.close()
    finally:
        shutil.rmtree(path)
    return {"size": f"{size:,}", "hosts": f"{hosts:,}", "open all s": f"{seconds:.2f}",
            "per host ms": f"{seconds / hosts * 1000:.1f}"}


def run_fsync(size: int) -> list[dict[str, str]]:
    """add_if_new latency on a store of *size* entries with each SIMHASH_FSYNC setting."""
    path = tempfile.mkdtemp(prefix="bench-disk-fsync-")
    rows = []
    try:
        bulk_insert(path, size)
        modes = (("off", None, _PROBES), ("1.0", 1.0, _PROBES), ("always", 0.0, 2_000))
        for seed, (label, seconds, probes) in enumerate(modes, start=10):  # new fingerprints each time
            with DiskIndex(path, fsync_seconds=seconds) as index:
                add_latencies(index, 2_000, seed=seed + 100)  # warm-up: the first checks after an open are slower
                latencies = add_latencies(index, probes, seed=seed)
            rows.append({"size": f"{size:,}", "SIMHASH_FSYNC": label, "checks": f"{probes:,}",
                         "add_if_new p50 us": f"{np.percentile(latencies, 50) * 1e6:.1f}",
                         "add_if_new p99 us": f"{np.percentile(latencies, 99) * 1e6:.1f}"})
    finally:
        shutil.rmtree(path)
    return rows


def run_compaction(size: int) -> dict[str, str]:
    """Reopen a store whose records are half dead (filled, reset, filled again): it compacts."""
    path = tempfile.mkdtemp(prefix="bench-disk-compact-")
    try:
        bulk_insert(path, size)
        bulk_insert(path, size, seed=5, reset=True)  # (reset, then filled in the same open)
        before = _file_bytes(path)
        started = time.perf_counter()
        DiskIndex(path, expected_size=size).close()
        compacting = time.perf_counter() - started
        after = _file_bytes(path)
        seconds, index = reopen(path)
        with index:
            assert len(index) == size
    finally:
        shutil.rmtree(path)
    return {"size": f"{size:,}", "records before": f"{2 * size:,}", "compacting reopen s": f"{compacting:.2f}",
            "reopen after s": f"{seconds:.2f}", "file bytes before": f"{before:,}", "after": f"{after:,}"}


def _file_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, name)) for name in os.listdir(path))


def print_table(rows: list[dict[str, str]]) -> None:
    columns = list(rows[0])
    widths = [max(len(c), *(len(r[c]) for r in rows)) for c in columns]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for row in rows:
        print("  ".join(row[c].rjust(w) for c, w in zip(columns, widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k fingerprints only")
    parser.add_argument("--sizes", type=int, nargs="*", help="sizes to measure (default: 1M 10M)")
    parser.add_argument("--hosts", type=int, help="spread the entries over this many namespaces, time opening them")
    parser.add_argument("--fsync", action="store_true", help="add_if_new latency with each SIMHASH_FSYNC")
    parser.add_argument("--compaction", action="store_true", help="time the reopen that compacts a reset store")
    parser.add_argument("--cold", action="store_true", help="drop the page cache before the reopen (root)")
    args = parser.parse_args()
    sizes = args.sizes or ([100_000] if args.quick else [1_000_000, 10_000_000])
    if args.fsync:
        print_table([row for size in sizes for row in run_fsync(size)])
        return
    if args.compaction:
        print_table([run_compaction(size) for size in sizes])
        return
    if args.hosts:
        print_table([run_hosts(size, args.hosts) for size in sizes])
        return
    print_table([run(size, args.cold) for size in sizes])


if __name__ == "__main__":
    main()
