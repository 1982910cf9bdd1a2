"""``fingerprint`` and ``compare``: fingerprints of HTML files or JSON-lines records."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

from ..core.fingerprint import hamming_distance, to_hex
from ..core.fingerprinter import Fingerprinter, FingerprintResult
from ..core.sketch import Confirmation, is_exact, similarity
from ..core.text import NotHtmlError
from ._common import (
    add_distance_argument,
    add_record_arguments,
    add_similarity_argument,
    file_url,
    record_id,
)
from ._io import Progress, read_pages, warn, write_jsonl
from ._options import add_fingerprint_arguments, fingerprinter_from_args
from ._parallel import PageInput, fingerprint_input


def add_parser(subparsers: Any) -> None:
    fingerprint = subparsers.add_parser(
        "fingerprint",
        help="print the fingerprint of HTML files or of JSON-lines records",
        description="Print '<hex fingerprint>  <file>' for each HTML file, or with --jsonl "
        'one JSON line {"id", "fingerprint", "skip_reason"} per record.',
    )
    fingerprint.add_argument("files", nargs="*", metavar="FILE", help="HTML files")
    fingerprint.add_argument("--jsonl", metavar="FILE",
                             help="JSON-lines input (.gz or - allowed), or a crawl archive (.warc[.gz])")
    fingerprint.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr (--jsonl)")
    add_record_arguments(fingerprint)
    add_fingerprint_arguments(fingerprint)
    fingerprint.set_defaults(func=run_fingerprint, usage_error=fingerprint.error)

    compare = subparsers.add_parser(
        "compare",
        help="print the fingerprints of two HTML files and their Hamming distance",
        description="Print both fingerprints, their Hamming distance (in all, and outside the second "
        "page's wildcard bits, as a crawl checks it), their sketches' estimated similarity, and whether "
        "the crawl would call them near-duplicates. Exit status 1 when a page cannot be fingerprinted.",
    )
    compare.add_argument("first", metavar="A", help="HTML file")
    compare.add_argument("second", metavar="B", help="HTML file")
    compare.add_argument("--diff", action="store_true",
                         help="also show where the two main texts differ (a unified diff of their blocks)")
    add_distance_argument(compare)
    add_similarity_argument(compare)
    add_fingerprint_arguments(compare)
    compare.set_defaults(func=run_compare)


def fingerprint_record(
    fingerprinter: Fingerprinter, record: dict[str, Any], args: argparse.Namespace
) -> FingerprintResult:
    """Fingerprint one JSON-lines record by the field the arguments name."""
    return fingerprint_input(fingerprinter, page_input(record, args))


def page_input(record: dict[str, Any], args: argparse.Namespace) -> PageInput:
    """The page of a record, by the fields the arguments name."""
    if args.text_field:
        return PageInput(None, str(record.get(args.text_field) or ""), None, None)
    html = record.get(args.html_field or "html") or ""
    url = record.get(args.url_field)
    encoding = record.get("encoding") if isinstance(html, bytes) else None  # a WARC record's body
    return PageInput(html if isinstance(html, bytes) else str(html), None, url if isinstance(url, str) else None,
                     encoding)


def describe(result: FingerprintResult) -> str:
    if result.fingerprint is None:
        return f"- (skipped: {result.skip_reason})"
    return to_hex(result.fingerprint)


def run_fingerprint(args: argparse.Namespace) -> int:
    if not args.files and not args.jsonl:
        args.usage_error("give HTML files or --jsonl FILE")  # (the usage, then exit status 2)
    fingerprinter = fingerprinter_from_args(args)
    status = 0
    for name in args.files:
        try:
            body = Path(name).read_bytes()
        except OSError as exc:
            warn(f"{name}: {exc.strerror}")
            status = 1
            continue
        print(f"{describe(fingerprinter.from_html(body, url=file_url(name)))}  {name}")
    if args.jsonl:
        progress = Progress("fingerprint", ("skipped",), enabled=not args.quiet)
        for line_number, record in read_pages(args.jsonl):
            result = fingerprint_record(fingerprinter, record, args)
            progress.update("skipped" if result.skip_reason else None)
            fingerprint = None if result.fingerprint is None else to_hex(result.fingerprint)
            out = {"id": record_id(record, args, args.jsonl, line_number), "fingerprint": fingerprint}
            if result.skip_reason:
                out["skip_reason"] = result.skip_reason
            write_jsonl(sys.stdout, out)
        progress.finish()
    return status


def run_compare(args: argparse.Namespace) -> int:
    fingerprinter = fingerprinter_from_args(args)
    results = []
    bodies = []
    for name in (args.first, args.second):
        try:
            bodies.append(Path(name).read_bytes())
        except OSError as exc:  # an error in the data, as README tells them: exit 1, the command named
            warn(f"compare: {name}: {exc.strerror}")
            return 1
        results.append(fingerprinter.from_html(bodies[-1], url=file_url(name)))
        print(f"{describe(results[-1])}  {name}")
        if results[-1].fingerprint is None:
            warn(f"compare: {name}: not fingerprinted ({results[-1].skip_reason})")
    if args.diff:
        print_diff(fingerprinter, args.first, args.second, *bodies)
    first, second = (result.fingerprint for result in results)
    if first is None or second is None:
        print("distance: - (a page was not fingerprinted)")
        return 1
    distance = hamming_distance(first, second)
    # As a crawl checks the second page: outside its wildcard (least-confident) bits.
    counted = hamming_distance(first, second, ignoring=results[1].wildcard)
    sketches = results[0].sketch, results[1].sketch
    confirmed = None in sketches or Confirmation(args.min_similarity).similarity(*sketches) is not None
    verdict = "near-duplicates" if counted <= args.max_distance and confirmed else "distinct"
    print(f"distance: {distance}, {counted} outside the second page's wildcard bits; similarity "
          f"{similarity_of(results[0], results[1]):.2f}{_how_measured(*sketches)} ({verdict} at "
          f"k={args.max_distance}, min similarity {args.min_similarity})")
    return 0


def print_diff(fingerprinter: Fingerprinter, first: str, second: str, *bodies: bytes) -> None:
    """Where the two pages' main texts (as fingerprinted, a block a line) differ."""
    texts = []
    for name, body in zip((first, second), bodies):
        try:
            texts.append(fingerprinter.main_blocks(body, url=file_url(name)))
        except NotHtmlError:
            texts.append([])
    print("\n".join(difflib.unified_diff(*texts, fromfile=first, tofile=second, lineterm="")) or "(same main text)")


def _how_measured(first: bytes | None, second: bytes | None) -> str:
    """" exact" for two short pages, whose shingles are compared, else " estimated"."""
    if first is None or second is None:
        return ""
    return " exact" if is_exact(first) and is_exact(second) else " estimated"


def similarity_of(first: FingerprintResult, second: FingerprintResult) -> float:
    """The Jaccard similarity of the two pages' sketches, exact for two short pages, else
    estimated (1.0 without sketches)."""
    if first.sketch is None or second.sketch is None:
        return 1.0
    return similarity(first.sketch, second.sketch)
