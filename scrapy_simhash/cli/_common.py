"""Options shared by the sub-commands: records, k, the confirmation (fingerprint options: :mod:`._options`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..index.base import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_SIMILARITY
from ._io import warn


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    """Which fields of a JSON-lines record hold its id, its page (HTML or text), its URL."""
    parser.add_argument("--id-field", default="id", help="record id field (default: %(default)s)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--html-field", help="field holding the page's HTML (default: html)")
    source.add_argument("--text-field", help="field holding plain text instead of HTML")
    parser.add_argument("--url-field", default="url", help="field with the page URL, if any")


def add_distance_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-k",
        "--max-distance",
        type=int,
        default=DEFAULT_MAX_DISTANCE,
        help="largest Hamming distance that counts as a near-duplicate (default: %(default)s)",
    )


def add_similarity_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--min-similarity",
        type=float,
        default=DEFAULT_MIN_SIMILARITY,
        metavar="J",
        help="a match within k is a near-duplicate only when the pages share at least this Jaccard "
        "similarity of their shingles (exactly for two short pages, else as their sketches estimate it; "
        "default: %(default)s; 0: no confirmation), as SIMHASH_MIN_SIMILARITY",
    )


def record_id(record: dict[str, Any], args: argparse.Namespace, path: str, line_number: int) -> str:
    """The record's ``--id-field`` as a string (what an index stores), else its line number
    (said once per file: a file without ids would say it on every line)."""
    value = record.get(args.id_field)
    if value is None:
        if path not in _WITHOUT_IDS:
            _WITHOUT_IDS.add(path)
            warn(f"{path}:{line_number}: no {args.id_field!r} field: line numbers are the ids of such records "
                 "(said once)")
        return str(line_number)
    return str(value)


#: The input files whose records without an id were warned of.
_WITHOUT_IDS: set[str] = set()


def file_url(name: str) -> str:
    """A file's ``file:`` URL, the page's URL for what reads its links (core/digests.py):
    a saved page keeps its name, and links to its own anchors name it."""
    return Path(name).resolve().as_uri()
