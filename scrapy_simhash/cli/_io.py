"""JSON-lines input and output for the sub-commands (plain or gzipped, or ``-``)."""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any


@contextmanager
def open_text(path: str, mode: str = "r") -> Iterator[IO[str]]:
    """Open *path* for text I/O; ``-`` is stdin/stdout, ``*.gz`` is gzipped."""
    if path == "-":
        yield sys.stdin if "r" in mode else sys.stdout
    elif path.endswith(".gz"):
        with gzip.open(path, mode + "t", encoding="utf-8") as stream:
            yield stream  # type: ignore[misc]  # text mode: a TextIOWrapper
    else:
        with open(path, mode, encoding="utf-8") as stream:
            yield stream


def read_jsonl(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each JSON object line of *path*.

    A malformed line is reported on stderr with its number and skipped, so one bad
    record never stops a long run.
    """
    with open_text(path) as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                warn(f"{path}:{number}: skipped, not JSON ({exc.msg})")
                continue
            if not isinstance(record, dict):
                warn(f"{path}:{number}: skipped, not a JSON object")
                continue
            yield number, record


def write_jsonl(stream: IO[str], record: dict[str, Any]) -> None:
    stream.write(json.dumps(record, ensure_ascii=False) + "\n")


def warn(message: str) -> None:
    print(f"scrapy-simhash: {message}", file=sys.stderr)
