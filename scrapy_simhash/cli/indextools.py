"""``inspect``, ``export``, ``import`` and ``compact``: look into a stored index, move it
elsewhere, rewrite a disk store with its live entries only.

``export`` and ``import`` speak JSON lines ``{"fingerprint": "<16 hex>", "key": "...",
"sketch": "<hex>"}`` (``sketch``, the entry's sketch, only when it has one: 64 hex
digits, and a short page's shingles after them; after a first ``{"signature": "..."}``
line when the index records its fingerprint options), so a JOBDIR store can move into
Redis (``export`` then ``import``) and back.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import random
from collections import Counter
from collections.abc import Iterator
from itertools import chain, islice
from typing import Any

from ..core.fingerprint import from_hex, to_hex
from ..core.sketch import check_sketch
from ..index import DiskIndex, SimhashIndex, check_index_spec, is_shared_spec, open_index
from ..index.base import check_ttl
from ..index.disk import compact_store
from ._common import add_distance_argument, add_similarity_argument
from ._io import open_output, read_jsonl, warn, write_jsonl

_IMPORT_BATCH = 10_000
Record = tuple[int, dict[str, Any]]  # (line number, JSON object)
Entry = tuple[int, str, bytes | None]  # (fingerprint, key, sketch)


def add_parser(subparsers: Any) -> None:
    inspect = subparsers.add_parser(
        "inspect", help="size, table design, bucket balance of an index",
        description="Print what an index holds: backend, size, table design, the probe in use, bucket "
        "balance and the distance histogram of a sample of entries to their nearest other entry. A disk "
        "store is read without its lock and not changed.",
    )
    _index_arguments(inspect, "index")
    inspect.add_argument("--sample", type=entry_count, default=1000,
                         help="entries whose nearest neighbour is measured (default: %(default)s)")
    inspect.add_argument("--json", action="store_true", help="one JSON object instead of text")
    inspect.set_defaults(func=run_inspect)

    export = subparsers.add_parser(
        "export", help="write every entry of an index as JSON lines",
        description='Write a {"signature"} line (the fingerprint options of the index), then one '
        '{"fingerprint", "key", "sketch"} line per entry. A disk store is read without its lock.',
    )
    _index_arguments(export, "index")
    export.add_argument("output", metavar="OUT.jsonl", help="output file (.gz or - allowed)")
    export.set_defaults(func=run_export)

    load = subparsers.add_parser(
        "import", help="add the entries of a JSON-lines export to an index",
        description="Add the entries of an export to an index (created if missing), refusing an export "
        "made with other fingerprint options. Entries the index holds already (same fingerprint and key) "
        "are skipped, so importing twice adds nothing the second time.",
    )
    load.add_argument("input", metavar="IN.jsonl", help="input file (.gz or - allowed)")
    _index_arguments(load, "index")
    load.add_argument("--reset", action="store_true", help="empty the index (namespace) first")
    load.add_argument("--skip-near-duplicates", action="store_true",
                      help="add only entries with no near-duplicate already stored (add_if_new, "
                      "confirmed by the sketches as --min-similarity says)")
    load.set_defaults(func=run_import)

    compact = subparsers.add_parser(
        "compact", help="rewrite a disk store with its live entries only",
        description="Rewrite a disk store without the records of removed, replaced or reset entries "
        "(a crawl that opens a store does it by itself when they are more than half of it). Takes the "
        "store's lock: not while a crawl writes it.",
    )
    compact.add_argument("index", metavar="INDEX", help="an index directory")
    compact.set_defaults(func=run_compact)


def _index_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument(name, metavar="INDEX", help="an index directory or a redis:// URL")
    parser.add_argument("--namespace", default="", help="the namespace (scope) to use (default: none)")
    parser.add_argument("--ttl", type=ttl_seconds, metavar="SECONDS",
                        help="the SIMHASH_TTL a Redis namespace was created with (default: none)")
    add_distance_argument(parser)
    add_similarity_argument(parser)


def entry_count(text: str) -> int:
    """The value of ``--sample``: a whole number, 0 or more."""
    try:
        count = int(text)
    except ValueError:
        count = -1
    if count < 0:
        raise argparse.ArgumentTypeError(f"a number of entries, 0 or more, not {text!r}")
    return count


def ttl_seconds(text: str) -> float:
    """The value of ``--ttl``: a bad one is a command-line error, as a value not a number is."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    try:
        return check_ttl(seconds, "a TTL")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _check_stored(args: argparse.Namespace) -> None:
    """Refuse what holds nothing to read and keeps nothing written: ``memory``, which names a
    fresh in-memory index everywhere (open_index, SIMHASH_INDEX, dedup --index)."""
    if args.index == "memory":
        raise ValueError("'memory' is a fresh in-memory index, gone when the command ends: "
                         "give an index directory (./memory for one of that name) or a redis:// URL")
    check_index_spec(args.index)  # (a mistyped Redis URL is no directory to look for)
    if args.ttl is not None and not is_shared_spec(args.index):
        raise ValueError(f"--ttl is for a redis:// index (SIMHASH_TTL): {args.index} keeps its entries for ever")


def _open(args: argparse.Namespace, **kwargs: Any) -> SimhashIndex:
    _check_stored(args)
    return open_index(args.index, max_distance=args.max_distance, min_similarity=args.min_similarity,
                      namespace=args.namespace, ttl=args.ttl, **kwargs)


def _open_existing(args: argparse.Namespace) -> SimhashIndex:
    _check_stored(args)
    return open_existing(args.index, max_distance=args.max_distance, min_similarity=args.min_similarity,
                         namespace=args.namespace, ttl=args.ttl)


def open_existing(spec: str, *, namespace: str = "", ttl: float | None = None, **options: Any) -> SimhashIndex:
    """Open an index to read: a disk store read-only (no lock: a crawl may be writing
    it), and never created where a path is mistyped (a Redis namespace neither)."""
    if is_shared_spec(spec):
        return open_index(spec, namespace=namespace, ttl=ttl, create=False, **options)
    if not os.path.exists(spec):
        raise FileNotFoundError(errno.ENOENT, "no index there (give an index directory or a redis:// URL)", spec)
    return DiskIndex(spec, namespace=namespace, read_only=True, **options)


def run_inspect(args: argparse.Namespace) -> int:
    with _open_existing(args) as index:
        report = index.describe()
        stats = getattr(index, "bucket_stats", None)
        if stats is not None:
            report["buckets"] = stats()
        report["nearest_neighbour_distances"] = nearest_distance_histogram(index, args.sample)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        for name, value in report.items():
            print(f"{name}: {json.dumps(value, default=str) if isinstance(value, (dict, list)) else value}")
    return 0


def nearest_distance_histogram(index: SimhashIndex, sample_size: int) -> dict[str, int]:
    """How far each sampled entry's nearest *other* entry is ("none" beyond max_distance)."""
    sample = _reservoir(index.items(), sample_size)
    histogram: Counter[str] = Counter()
    for (fingerprint, key), matches in zip(sample, index.query_many([fp for fp, _ in sample])):
        others = [m.distance for m in matches if (m.fingerprint, m.key) != (fingerprint, key)]
        histogram[str(min(others)) if others else "none"] += 1
    return dict(sorted(histogram.items()))


def _reservoir(items: Iterator[tuple[int, str]], size: int) -> list[tuple[int, str]]:
    rng = random.Random(0)  # the same sample on every run of the same index
    sample = list(islice(items, size))
    for seen, item in enumerate(items, start=size + 1):
        slot = rng.randrange(seen)
        if slot < size:
            sample[slot] = item
    return sample


def run_export(args: argparse.Namespace) -> int:
    count = 0
    with _open_existing(args) as index, open_output(args.output) as output:
        signature = index.describe().get("signature")
        if signature:  # so that import can refuse to mix it with other fingerprints
            write_jsonl(output, {"signature": signature})
        for entry in index.entries():
            write_jsonl(output, export_line(*entry))
            count += 1
    warn(f"exported {count} entries")
    return 0


def run_import(args: argparse.Namespace) -> int:
    added = skipped = present = 0
    if args.input != "-" and not os.path.exists(args.input):  # before the index is created
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), args.input)
    records = read_jsonl(args.input)
    signature, records = _signature_line(records)
    with _open(args, reset=args.reset, signature=signature) as index:
        for whole_batch in _batches(_entries(args.input, records), _IMPORT_BATCH):
            batch = _not_present(index, whole_batch)
            present += len(whole_batch) - len(batch)
            if args.skip_near_duplicates:
                kept = sum(index.add_if_new(fp, key, sketch=sketch) is None for fp, key, sketch in batch)
                added, skipped = added + kept, skipped + len(batch) - kept
            else:
                index.add_entries(batch)
                added += len(batch)
        index.flush()
    warn(f"imported {added} entries" + (f", skipped {skipped} near-duplicates" if skipped else "")
         + (f", {present} already present" if present else ""))
    return 0


def run_compact(args: argparse.Namespace) -> int:
    before, after = compact_store(args.index)
    warn(f"compacted {args.index}: {before:,} -> {after:,} bytes")
    return 0


def _not_present(index: SimhashIndex, batch: list[Entry]) -> list[Entry]:
    """*batch* less the entries the index holds already (same fingerprint and key), and
    less repeats within it: importing an export twice adds nothing the second time."""
    stored = index.query_many([fingerprint for fingerprint, _, _ in batch])
    seen: set[tuple[int, str]] = set()
    kept = []
    for (fingerprint, key, sketch), matches in zip(batch, stored):
        if (fingerprint, key) in seen or any(m.distance == 0 and m.key == key for m in matches):
            continue
        seen.add((fingerprint, key))
        kept.append((fingerprint, key, sketch))
    return kept


def _signature_line(records: Iterator[Record]) -> tuple[str, Iterator[Record]]:
    """The options signature of an export's first line, if it has one, and the records."""
    first = next(records, None)
    if first is None:
        return "", records
    if "signature" in first[1] and "fingerprint" not in first[1]:
        return str(first[1]["signature"]), records
    return "", chain([first], records)


def export_line(fingerprint: int, key: str, sketch: bytes | None) -> dict[str, str]:
    """The JSON object of one entry; no ``sketch`` field when it has none."""
    line = {"fingerprint": to_hex(fingerprint), "key": key}
    if sketch is not None:
        line["sketch"] = sketch.hex()
    return line


def _entries(path: str, records: Iterator[Record]) -> Iterator[Entry]:
    for number, record in records:
        try:
            fingerprint = from_hex(_string_field(record, "fingerprint"))
            key = _string_field(record, "key")
            sketch = _sketch_field(record.get("sketch"))
        except (KeyError, ValueError, TypeError) as exc:
            warn(f"{path}:{number}: skipped, needs a hex 'fingerprint', a 'key' and, if any, "
                 f"a hex 'sketch' ({exc})")
            continue
        yield fingerprint, key, sketch


def _string_field(record: dict[str, Any], name: str) -> str:
    # Not str(value): a key null would be stored as "None", a fingerprint 14 read as hex 0x14.
    value = record[name]
    if not isinstance(value, str):
        raise TypeError(f"{name!r} is a string, not {type(value).__name__}")
    return value


def _sketch_field(value: object) -> bytes | None:
    """The sketch of an export line's ``sketch`` field (missing or null: none)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"a sketch is a hex string, not {type(value).__name__}")
    return check_sketch(bytes.fromhex(value))


def _batches(entries: Iterator[Entry], size: int) -> Iterator[list[Entry]]:
    while batch := list(islice(entries, size)):
        yield batch
