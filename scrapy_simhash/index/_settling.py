"""Reading files another process may be renaming: a disk store's reader beside a compaction.

A compaction writes new files, then renames them over the old ones, keys first. A reader
that opened one file before a rename and one after (a log and keys of two generations, a
file gone) reads again: the files settle in milliseconds. An error in files that did not
move is the files' own, and raised at once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from .base import IndexFormatError, IndexUnavailableError

_T = TypeVar("_T")

#: The waits before reading again (0.4 s in all), when the files moved during a read.
REREAD_DELAYS = (0.005, 0.02, 0.05, 0.1, 0.2)


def read_settled(read: Callable[[], _T], directory: str, names: Sequence[str]) -> _T:
    """*read()*, again while the files *names* of *directory* move under it (renamed,
    removed) and it fails for it; :class:`IndexUnavailableError` when they never settle."""
    for delay in (*REREAD_DELAYS, None):
        before = file_identities(directory, names)
        try:
            return read()
        except (IndexFormatError, FileNotFoundError) as exc:
            moved = file_identities(directory, names) != before
            if not moved:
                raise
            if delay is None:
                raise IndexUnavailableError(
                    f"{directory} kept changing while it was read (a compaction running beside?),"
                    f" {len(REREAD_DELAYS) + 1} times: {exc}; try again"
                ) from exc
        time.sleep(delay)
    raise AssertionError("unreachable")


def file_identities(directory: str, names: Sequence[str]) -> tuple[tuple[int, int] | None, ...]:
    """Which files the *names* are now (device and inode, ``None`` for none): a rename changes it."""
    return tuple(_identity(os.path.join(directory, name)) for name in names)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return status.st_dev, status.st_ino
