"""JSON-lines input and output for the sub-commands (plain or gzipped, or ``-``)."""

from __future__ import annotations

import gzip
import json
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any


@contextmanager
def open_output(path: str) -> Iterator[IO[str]]:
    """Open *path* to write text; ``-`` is stdout, ``*.gz`` is gzipped."""
    if path == "-":
        yield sys.stdout
    elif path.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as stream:
            yield stream  # type: ignore[misc]  # text mode: a TextIOWrapper
    else:
        with open(path, "w", encoding="utf-8") as stream:
            yield stream


def read_jsonl(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each JSON object line of *path*.

    A malformed line (not UTF-8, not JSON, not an object) is reported on stderr with
    its number and skipped, so one bad record never stops a long run.
    """
    try:
        with _open_binary(path) as stream:
            for number, raw in enumerate(stream, start=1):
                record = _record(path, number, raw)
                if record is not None:
                    yield number, record
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # a truncated or damaged .gz
        raise OSError(f"{path}: {exc}") from exc


@contextmanager
def _open_binary(path: str) -> Iterator[IO[bytes]]:
    # Bytes, decoded line by line: a line that is not UTF-8 is skipped, not fatal.
    if path == "-":
        yield sys.stdin.buffer
    elif path.endswith(".gz"):
        with gzip.open(path, "rb") as stream:
            yield stream
    else:
        with open(path, "rb") as stream:
            yield stream


def _record(path: str, number: int, raw: bytes) -> dict[str, Any] | None:
    if not raw.strip():
        return None
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        warn(f"{path}:{number}: skipped, not UTF-8 ({exc.reason} at byte {exc.start})")
        return None
    except json.JSONDecodeError as exc:
        warn(f"{path}:{number}: skipped, not JSON ({exc.msg})")
        return None
    if not isinstance(record, dict):
        warn(f"{path}:{number}: skipped, not a JSON object")
        return None
    return record


def write_jsonl(stream: IO[str], record: dict[str, Any]) -> None:
    stream.write(json.dumps(record, ensure_ascii=False) + "\n")


def warn(message: str) -> None:
    print(f"scrapy-simhash: {message}", file=sys.stderr)
