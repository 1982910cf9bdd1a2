"""A disk store whose in-memory index is dropping removed rows (``index/_dropping.py``)
when it is closed or killed: it reopens with every entry it acknowledged, from its
snapshot or from its log."""

from __future__ import annotations

import os
import random
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy_simhash.index import DiskIndex, _snapshot
from scrapy_simhash.index.brute import BruteForceIndex
from test_index_compaction import small_steps  # noqa: F401  (a fixture)

PAGES = 3000


@pytest.fixture(autouse=True)
def small_steps_and_snapshots(small_steps: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Steps of a few rows (a compaction stays under way across many calls), and a
    snapshot for a store this small."""
    monkeypatch.setattr(_snapshot, "SNAPSHOT_MIN_ROWS", 100)
    monkeypatch.setattr("scrapy_simhash.index.disk.SNAPSHOT_MIN_ROWS", 100)
    yield


def key(page: int) -> str:
    return f"https://example.com/{page}"


def first_crawl(path: Path) -> list[tuple[int, str]]:
    rng = random.Random(1)
    entries = [(rng.getrandbits(64), key(page)) for page in range(PAGES)]
    with DiskIndex(path) as index:
        index.add_many(entries)
    return entries


def recrawl_until_compacting(index: DiskIndex, reference: BruteForceIndex, rng: random.Random) -> None:
    """Pages fetched again, changed, until a compaction is under way; then some more calls
    during it: changed pages, pages removed, and pages removed then added again."""
    index._memory.buffer_limit = 16
    index.prepare_key_lookups()
    while index._memory._compaction is None:
        fingerprint, page = rng.getrandbits(64), key(rng.randrange(PAGES))
        assert index.replace_if_new(fingerprint, page) == reference.replace_if_new(fingerprint, page)
    for n in range(40):
        fingerprint, page = rng.getrandbits(64), key(rng.randrange(PAGES))
        if n % 5 == 0:
            assert index.remove_key(page) == reference.remove_key(page)
        assert index.replace_if_new(fingerprint, page) == reference.replace_if_new(fingerprint, page)
    assert index._memory._compaction is not None


def same_as(index: DiskIndex, reference: BruteForceIndex) -> None:
    assert sorted(index.items()) == sorted(reference.items())
    pages = [key(page) for page in range(0, PAGES, 11)]
    assert [sorted(index.fingerprints_of(page)) for page in pages] == [
        sorted(reference.fingerprints_of(page)) for page in pages]
    probes = [fingerprint ^ 0b101 for fingerprint, _ in sorted(reference.items())[::50]]
    assert [index.query(probe) for probe in probes] == [reference.query(probe) for probe in probes]


@pytest.mark.parametrize("reopen", ["snapshot", "log", "read-only"])
def test_a_store_closed_during_a_compaction_reopens_as_it_was(tmp_path: Path, reopen: str) -> None:
    reference = BruteForceIndex(3)
    reference.add_many(first_crawl(tmp_path))
    rng = random.Random(2)
    with DiskIndex(tmp_path) as index:
        recrawl_until_compacting(index, reference, rng)
        same_as(index, reference)
    if reopen == "log":
        (tmp_path / "tables-0.snapshot").unlink()
    with DiskIndex(tmp_path, read_only=reopen == "read-only") as index:
        same_as(index, reference)
        if reopen != "read-only":
            fingerprint, page = rng.getrandbits(64), key(7)
            assert index.replace_if_new(fingerprint, page) == reference.replace_if_new(fingerprint, page)
            same_as(index, reference)


def _recrawler(path: Path, ack: int) -> None:
    """Fetch pages again, changed, forever; report each page's new fingerprint once the
    call returned ("<page> <fingerprint> <compacting>"), its page first ("? <page>")."""
    rng = random.Random(os.getpid())
    with DiskIndex(path) as index:
        index._memory.buffer_limit = 16
        index.prepare_key_lookups()
        while True:
            fingerprint, page = rng.getrandbits(64), rng.randrange(PAGES)
            os.write(ack, f"? {page}\n".encode())
            index.replace_if_new(fingerprint, key(page))
            os.write(ack, f"{page} {fingerprint} {int(index._memory._compaction is not None)}\n".encode())


def _kill_while_compacting(path: Path, after: int) -> list[list[str]]:
    """Run :func:`_recrawler` in a child; SIGKILL it at the *after*-th call it reports
    with a compaction under way. Its reports, split."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read_end)
        try:
            _recrawler(path, write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    reports, compacting = [], 0
    with os.fdopen(read_end, "rb") as lines:
        for line in lines:  # (to the end: what it wrote before it died counts too)
            reports.append(line.decode().split())
            compacting += len(reports[-1]) == 3 and reports[-1][2] == "1"
            if compacting == after:
                os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return reports


def test_a_writer_killed_during_a_compaction_loses_nothing_it_reported(tmp_path: Path) -> None:
    latest = {page: fingerprint for page, (fingerprint, _) in enumerate(first_crawl(tmp_path))}
    for after in [1, 7, 60, 200]:
        reports = _kill_while_compacting(tmp_path, after)
        in_flight = None
        for report in reports:
            if report[0] == "?":
                in_flight = int(report[1])
            else:
                latest[int(report[0])], in_flight = int(report[1]), None
        stored: dict[int, list[int]] = {}
        with DiskIndex(tmp_path, read_only=True) as index:
            for fingerprint, page in index.items():
                stored.setdefault(int(page.rsplit("/", 1)[1]), []).append(fingerprint)
        if in_flight is not None:  # killed in its call: its old record, none, or its new one
            assert len(stored.get(in_flight, [])) <= 1
            latest.pop(in_flight)
        assert {page: found for page, found in stored.items() if page != in_flight} == {
            page: [fingerprint] for page, fingerprint in latest.items()}
        latest = {page: found[0] for page, found in stored.items()}
