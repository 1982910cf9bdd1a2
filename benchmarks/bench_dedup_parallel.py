"""``dedup`` throughput on 1 and 2 local processes and Dask workers, verdicts compared.

    python benchmarks/bench_dedup_parallel.py [--pages FILE.jsonl.gz] [--workers 1,2]

Runs ``scrapy-simhash dedup`` (in this process, through its ``main``) on the pages (default:
the dev corpus, ~2,600 pages, 62 MB of HTML) with ``--engine local --jobs N`` and
``--engine dask --jobs N`` (a local Dask cluster of N single-thread worker processes,
started and stopped within the run), and prints wall time, pages/s, MB/s of HTML and
whether the output is the same as ``--jobs 1``'s, byte for byte. The machine this repository
is measured on has 2 cores: more workers than cores measure nothing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path

from scrapy_simhash.cli import main

REPO = Path(__file__).resolve().parent.parent
DEV_PAGES = REPO.parent / "shared" / "corpus" / "dev" / "pages.jsonl.gz"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=Path, default=DEV_PAGES, help="JSON-lines pages (id, url, html)")
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    return parser.parse_args()


def html_megabytes(path: Path) -> tuple[int, float]:
    opener = gzip.open if path.suffix == ".gz" else open
    pages = size = 0
    with opener(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            pages += 1
            size += len(json.loads(line).get("html", "").encode("utf-8"))
    return pages, size / 1e6


def timed_dedup(pages: Path, output: Path, *options: str) -> float:
    start = time.perf_counter()
    assert main(["dedup", str(pages), "-q", "-o", str(output), *options]) == 0
    return time.perf_counter() - start


def main_bench() -> None:
    args = parse_args()
    pages, megabytes = html_megabytes(args.pages)
    print(f"{args.pages}: {pages} pages, {megabytes:.1f} MB of HTML")
    print(f"{'engine':<8} {'workers':>7} {'seconds':>8} {'pages/s':>8} {'MB/s':>6}  same verdicts")
    with tempfile.TemporaryDirectory() as scratch:
        reference = Path(scratch, "reference.jsonl")
        timed_dedup(args.pages, reference)  # warms the page cache and imports
        for engine in ("local", "dask"):
            for workers in map(int, args.workers.split(",")):
                output = Path(scratch, f"{engine}-{workers}.jsonl")
                seconds = timed_dedup(args.pages, output, "--engine", engine, "--jobs", str(workers))
                same = output.read_bytes() == reference.read_bytes()
                print(f"{engine:<8} {workers:>7} {seconds:>8.2f} {pages / seconds:>8.0f} {megabytes / seconds:>6.1f}  {same}")


if __name__ == "__main__":
    main_bench()
