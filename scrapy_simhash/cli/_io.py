"""JSON-lines input and output for the sub-commands (plain or gzipped, or ``-``)."""

from __future__ import annotations

import gzip
import json
import re
import sys
import time
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from ._warc import is_archive, read_archive


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


def read_pages(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`read_jsonl`, or the response records of a crawl archive (:mod:`._warc`)."""
    if is_archive(path):
        return read_archive(path)
    return read_jsonl(path)


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
        warn(f"{path}:{number}: skipped, not JSON ({exc.msg}: column {exc.colno})")
        return None
    if not isinstance(record, dict):
        warn(f"{path}:{number}: skipped, not a JSON object")
        return None
    return record


#: A lone surrogate: valid in JSON (`"\ud800"`) and in a str, but not writable as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


def write_jsonl(stream: IO[str], record: dict[str, Any]) -> None:
    """One JSON line, in UTF-8 but for lone surrogates (an id or key read from ``"\\ud800"``),
    written as the escapes they were read from: the line is UTF-8 and reads back the same."""
    line = json.dumps(record, ensure_ascii=False)
    stream.write(_SURROGATE.sub(_escaped, line) + "\n")


def _escaped(surrogate: re.Match[str]) -> str:
    # A surrogate is only ever inside a JSON string (a key or a value), where this escape is its own.
    return f"\\u{ord(surrogate.group()):04x}"


def warn(message: str) -> None:
    print(f"scrapy-simhash: {message}", file=sys.stderr)


#: Seconds between two progress lines.
PROGRESS_SECONDS = 5.0


class Progress:
    """A line on stderr every few seconds, and one at the end: records, the *counted*
    kinds of record (``"near-duplicates"``, ...), rate."""

    def __init__(self, command: str, counted: Sequence[str] = (), enabled: bool = True) -> None:
        self.command = command
        self.enabled = enabled
        self.records = 0
        self.counts: Counter[str] = Counter({name: 0 for name in counted})
        self.started = self.shown = time.monotonic()

    def update(self, *kinds: str | None) -> None:
        """One more record, of these *kinds* (``None``: none)."""
        self.records += 1
        self.counts.update(kind for kind in kinds if kind)
        if self.enabled and time.monotonic() - self.shown >= PROGRESS_SECONDS:
            self.show()

    def show(self) -> None:
        self.shown = time.monotonic()
        rate = self.records / max(self.shown - self.started, 1e-9)
        counted = "".join(f", {count} {name}" for name, count in self.counts.items())
        print(f"{self.command}: {self.records} records{counted} ({rate:.0f} records/s)", file=sys.stderr)

    def finish(self) -> None:
        if self.enabled:
            self.show()
