"""The keys this crawl has checked: a page re-fetched within one crawl is not "unchanged".

A page whose own record (its URL) is its nearest match in the index was stored by an
earlier crawl, by another crawler sharing the index, or by this very crawl: a retry,
``dont_filter``, or a ``JOBDIR`` crawl resumed after a kill that had recorded the page
before its callback ran. Only the last kind must reach the spider again, or the page is
lost; the others are unchanged pages. :class:`CheckedKeys` tells them apart, and
remembers which pages this crawl found unchanged: fetched again, they stay unchanged.

With ``JOBDIR`` the keys are appended to a file there before each check, one unbuffered
write each, so that a crawl killed with ``kill -9`` and resumed still knows every page
it recorded (a record is written to the index only after its key is in this file).
"""

from __future__ import annotations

import enum
import hashlib
import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

#: Bytes of a key's digest: a collision in 2**64 would take a re-fetched page from an
#: earlier crawl for one of this crawl (and keep it).
DIGEST_SIZE = 8
#: A record: what happened (one byte), then the digest.
_CHECKED, _UNCHANGED = b"c", b"u"
_RECORD_SIZE = 1 + DIGEST_SIZE


def key_digest(key: str) -> bytes:
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=DIGEST_SIZE).digest()


class CheckedIn(enum.IntEnum):
    """What :meth:`CheckedKeys.check_in` found (false: a key new to the crawl)."""

    NEW = 0
    #: Checked by an earlier run of the crawl (a ``JOBDIR`` crawl resumed), not yet by this one.
    EARLIER_RUN = 1
    #: Checked by this run already (a retry, ``dont_filter``; an item two pages yield).
    THIS_RUN = 2


class CheckedKeys:
    """The keys this crawl checked, and those it found unchanged; persisted in *path*
    when one is given."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._checked: set[bytes] = set()
        self._unchanged: set[bytes] = set()
        self._file = None
        if path is not None:
            for kind, digest in _read_records(Path(path)):
                (self._unchanged if kind == _UNCHANGED else self._checked).add(digest)
            self._file = open(path, "ab", buffering=0)  # noqa: SIM115  (closed in close())
        #: The keys an earlier run of the crawl checked that this one has not checked yet.
        self._earlier_run = set(self._checked)

    @classmethod
    def of_crawl(cls, jobdir: str | None, kind: str) -> CheckedKeys:
        """The keys a crawl checks of *kind* ("page", "item"): in ``JOBDIR`` if it has one."""
        return cls(os.path.join(jobdir, f"simhash-checked-{kind}s.bin") if jobdir else None)

    def check_in(self, key: str) -> CheckedIn:
        """Add *key*; return whether this crawl had checked it before, and in which run."""
        digest = key_digest(key)
        if digest in self._earlier_run:
            self._earlier_run.discard(digest)
            return CheckedIn.EARLIER_RUN
        if digest in self._checked:
            return CheckedIn.THIS_RUN
        self._checked.add(digest)
        self._write(_CHECKED, digest)
        return CheckedIn.NEW

    def found_unchanged(self, key: str) -> None:
        """Remember that *key* was unchanged (its own record from an earlier crawl)."""
        digest = key_digest(key)
        if digest not in self._unchanged:
            self._unchanged.add(digest)
            self._write(_UNCHANGED, digest)

    def was_unchanged(self, key: str) -> bool:
        return key_digest(key) in self._unchanged

    def __len__(self) -> int:
        return len(self._checked)

    def _write(self, kind: bytes, digest: bytes) -> None:
        if self._file is not None:
            self._file.write(kind + digest)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _read_records(path: Path) -> list[tuple[bytes, bytes]]:
    """The records stored in *path*; a torn last one (a kill mid-write) is cut off."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    whole = len(data) - len(data) % _RECORD_SIZE
    if whole != len(data):
        logger.warning("%s ends in a torn record (a killed crawl): cut off", path)
        with open(path, "r+b") as torn:
            torn.truncate(whole)
    return [(data[at : at + 1], data[at + 1 : at + _RECORD_SIZE]) for at in range(0, whole, _RECORD_SIZE)]
