"""Options shared by the sub-commands that fingerprint pages."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..core.fingerprinter import Fingerprinter, FingerprintOptions
from ..index.base import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_SIMILARITY
from ._io import warn


def add_fingerprint_arguments(parser: argparse.ArgumentParser) -> None:
    """``--hash-key``, ``--min-tokens``, ``--wildcard-bits``: what a user may need to match a crawl."""
    parser.add_argument(
        "--hash-key",
        default=os.environ.get("SIMHASH_HASH_KEY", ""),
        help="secret key of the feature hash (default: $SIMHASH_HASH_KEY, else none); "
        "must match the crawl's SIMHASH_HASH_KEY for fingerprints to be comparable",
    )
    parser.add_argument(
        "--min-tokens",
        type=int,
        default=FingerprintOptions().min_tokens,
        help="pages with fewer tokens are not fingerprinted (default: %(default)s)",
    )
    parser.add_argument(
        "--wildcard-bits",
        type=int,
        default=FingerprintOptions().wildcard_bits,
        metavar="M",
        help="least-confident bits of a page its check may ignore (default: %(default)s; "
        "0: plain Hamming distance), as SIMHASH_WILDCARD_BITS",
    )


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
        help="a match within k is a near-duplicate only when the pages' sketches estimate at least "
        "this Jaccard similarity (default: %(default)s; 0: no confirmation), as SIMHASH_MIN_SIMILARITY",
    )


def options_from_args(args: argparse.Namespace) -> FingerprintOptions:
    """The options of :func:`add_fingerprint_arguments`; the others at their defaults."""
    return FingerprintOptions(
        hash_key=args.hash_key.encode(), min_tokens=args.min_tokens, wildcard_bits=args.wildcard_bits
    )


def fingerprinter_from_args(args: argparse.Namespace) -> Fingerprinter:
    return Fingerprinter(options_from_args(args))


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
