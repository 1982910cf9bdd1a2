"""``dedup``: stream JSON-lines pages through the same check-and-record as the crawl."""

from __future__ import annotations

import argparse
import errno
import os
import stat
from operator import itemgetter
from typing import Any

from ..core.fingerprint import to_hex
from ..index import open_index, stored_signature
from ..index.base import is_own_record
from ._common import (
    add_distance_argument,
    add_record_arguments,
    add_similarity_argument,
    record_id,
)
from ._io import Progress, open_output, read_pages, write_jsonl
from ._options import add_fingerprint_arguments, fingerprinter_from_args
from ._parallel import ENGINES, default_jobs, fingerprint_all
from .fingerprint import page_input


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dedup",
        help="mark each page of a JSON-lines file as kept or as a near-duplicate of an earlier one",
        description='Writes one JSON line per input record, in input order: {"id", "fingerprint", '
        '"duplicate_of", "distance", "similarity", "unchanged", "changed"}; duplicate_of is null for a '
        'kept page. A page whose own entry (same id) is in --index already, from an earlier run, is '
        '"unchanged": true, not a near-duplicate, and adds nothing; one whose entry is there but no '
        'longer matches is "changed": true, and its entry is replaced. Pages that cannot be '
        'fingerprinted (too short, not HTML) carry "skip_reason" and are kept.',
    )
    parser.add_argument("pages", metavar="PAGES.jsonl",
                        help="JSON-lines input (.gz or - allowed), or a crawl archive (.warc[.gz]: its response "
                        "records, the target URI as id)")
    add_record_arguments(parser)
    parser.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    parser.add_argument(
        "--index",
        default=None,
        help="index to check against and record into: a path, a redis:// URL "
        "(default: a fresh in-memory index)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="where pages are fingerprinted: local processes, or a Dask cluster (the 'dask' "
                        "extra); the check-and-record stays one pass in input order here, so the verdicts "
                        "are the same (default: %(default)s)")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                        help="processes (local) or workers (a local Dask cluster) fingerprinting pages; "
                        "0: one per core (default: %(default)s)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="with --engine dask: the scheduler of a running cluster (tcp://host:8786), "
                        "instead of a local cluster of --jobs workers")
    add_distance_argument(parser)
    add_similarity_argument(parser)
    add_fingerprint_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_input_and_output(args.pages, args.output)
    # The options the index was made with, unless given: a crawl's SIMHASH_* settings.
    options = fingerprinter_from_args(args, stored_signature(args.index)).options
    if args.jobs < 0:
        raise ValueError(f"--jobs must be 0 (one per core) or more, not {args.jobs}")
    progress = Progress("dedup", ("near-duplicates", "unchanged", "changed"), enabled=not args.quiet)
    pages = ((record_id(record, args, args.pages, number), page_input(record, args))
             for number, record in read_pages(args.pages))
    with (
        open_index(args.index, max_distance=args.max_distance, min_similarity=args.min_similarity,
                   signature=options.signature()) as index,
        open_output(args.output) as output,
    ):
        fingerprinted = fingerprint_all(options, pages, itemgetter(1), engine=args.engine,
                                        jobs=args.jobs or default_jobs(), scheduler=args.scheduler)
        for (page_id, _), result in fingerprinted:
            out: dict[str, Any] = {"id": page_id, "fingerprint": None, "duplicate_of": None,
                                   "distance": None, "similarity": None, "unchanged": False, "changed": False}
            if result.fingerprint is None:
                out["skip_reason"] = result.skip_reason
            else:
                out["fingerprint"] = to_hex(result.fingerprint)
                match, replaced = index.replace_if_new(result.fingerprint, page_id, result.wildcard, result.sketch)
                out["changed"] = bool(replaced)  # its entry from an earlier run, replaced
                if is_own_record(match, page_id):
                    out["unchanged"] = True  # its own entry, from an earlier run
                elif match is not None:
                    out.update(duplicate_of=match.key, distance=match.distance, similarity=match.similarity)
            write_jsonl(output, out)
            progress.update("near-duplicates" if out["duplicate_of"] else None, "unchanged" if out["unchanged"] else None,
                            "changed" if out["changed"] else None)
    progress.finish()
    return 0


def check_input_and_output(pages: str, output: str) -> None:
    """Before the index is opened (a new one would be left behind): the input must open, and
    the output must not be it, which opening it to write would empty before it is read."""
    if pages == "-":
        return
    mode = os.stat(pages).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), pages)
    if stat.S_ISREG(mode):  # (not a named pipe: opening it to see would end its writer's stream)
        with open(pages, "rb"):
            pass
    if output != "-" and os.path.exists(output) and os.path.samefile(pages, output):
        raise ValueError(f"{output}: the output is the input file: give another --output")
