"""The engine's figures side by side in one run: HTML -> fingerprint, then the index.

    python benchmarks/bench_engine.py            # dev corpus pages; the index at 1M and 10M
    python benchmarks/bench_engine.py --quick    # 200 pages a language; the index at 100k

It runs ``bench_fingerprint.py`` (ours against lxml + the ``simhash`` package, English
and Chinese apart) and then ``bench_index.py`` (single check-and-insert p50/p99, batched
queries/s, bytes per fingerprint, against brute force and the ``simhash`` package's
``SimhashIndex``), in one process, with the same ``--quick``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_fingerprint  # noqa: E402
import bench_index  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one run each")
    quick = ["--quick"] if parser.parse_args().quick else []
    for title, bench in (("HTML -> fingerprint", bench_fingerprint), ("Index (k=3)", bench_index)):
        print(f"\n== {title} ==", flush=True)
        sys.argv = [bench.__file__, *quick]
        bench.main()


if __name__ == "__main__":
    main()
