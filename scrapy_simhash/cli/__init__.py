"""The ``scrapy-simhash`` command line (also ``python -m scrapy_simhash``).

Each sub-command lives in its own module with ``add_parser(subparsers)``, which
registers the command and sets ``func`` (``args -> exit code``) as its default.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .. import __version__
from ..index.base import SimhashIndexError
from ._io import warn

# Modules that define sub-commands, in the order ``--help`` lists them.
_COMMAND_MODULES = (
    "fingerprint",
    "text",
    "dedup",
    "indextools",
    "evaluate",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scrapy-simhash",
        description="Near-duplicate detection with SimHash: fingerprint and compare pages, show their "
        "main text, dedup "
        "JSON-lines pages against an index, inspect, export and import an index, evaluate on labelled pairs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # `... | head` closed our stdout: not an error
        sys.stderr.close()
        return 0
    except _user_errors() as exc:
        # A missing or corrupt file, a bad option value, an unreachable index, a missing
        # extra (redis-py), what Redis refused: the user needs the message, not a traceback.
        warn(f"{args.command}: {_describe(exc)}")
        return 1


def _user_errors() -> tuple[type[Exception], ...]:
    """The errors told in one line; Redis's only where redis-py was imported (by a
    ``redis://`` index: what raised one), since it is an optional extra."""
    errors: tuple[type[Exception], ...] = (OSError, EOFError, ImportError, SimhashIndexError, ValueError)
    redis = sys.modules.get("redis")
    return errors if redis is None else (*errors, redis.RedisError)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)
