"""The disk store's snapshot of its tables (``index/_snapshot.py``): read back when it
indexes the log's rows, ignored (the tables built from the log) whenever it does not."""

from __future__ import annotations

import logging
import random
import zlib
from pathlib import Path

import numpy as np
import pytest

from scrapy_simhash.core.fingerprint import weakest_bits
from scrapy_simhash.index import DiskIndex, _snapshot
from scrapy_simhash.index._design_choice import bulk_design
from scrapy_simhash.index.brute import BruteForceIndex

ROWS = 3000


@pytest.fixture(autouse=True)
def small_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_snapshot, "SNAPSHOT_MIN_ROWS", 100)
    monkeypatch.setattr("scrapy_simhash.index.disk.SNAPSHOT_MIN_ROWS", 100)


def entries(count: int, seed: int) -> list[tuple[int, str]]:
    rng = random.Random(seed)
    bases = [rng.getrandbits(64) for _ in range(count // 8)]  # near one another: probes find some
    return [(rng.choice(bases) ^ (1 << rng.randrange(64)), f"https://example.com/{seed}/{i}") for i in range(count)]


def same_answers(path: Path, stored: list[tuple[int, str]], **kwargs: object) -> None:
    """The store at *path* answers as brute force over *stored*, with and without wildcard bits."""
    reference = BruteForceIndex(3)
    reference.add_many(stored)
    rng = np.random.default_rng(0)
    probes = [(f ^ 0b11, weakest_bits(rng.random(64), bits)) for (f, _), bits in zip(stored[::97], [0, 14] * 99)]
    with DiskIndex(path, **kwargs) as index:  # type: ignore[arg-type]
        assert sorted(index.items()) == sorted(stored)
        assert [index.query(f, w) for f, w in probes] == [reference.query(f, w) for f, w in probes]


def reopened(path: Path, stored: list[tuple[int, str]], caplog: pytest.LogCaptureFixture, **kwargs: object) -> str:
    """Check :func:`same_answers` at a reopen of *path*; what it logged of its snapshot."""
    with caplog.at_level(logging.INFO, logger="scrapy_simhash.index._snapshot"):
        same_answers(path, stored, **kwargs)
    return caplog.text


def no_snapshot_at_close(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next closes write no snapshot (as a crash before the close)."""
    monkeypatch.setattr("scrapy_simhash.index.disk.write_snapshot", lambda path, tables, key_lookup=None: None)


def test_a_closed_store_reopens_from_its_snapshot(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    stored = entries(ROWS, 1)
    with DiskIndex(tmp_path) as index:
        index.add_many(stored[:2000])
        for fingerprint, key in stored[2000:]:
            index.add(fingerprint, key)  # some in the write buffer at close
    assert (tmp_path / "tables-0.snapshot").is_file()
    assert reopened(tmp_path, stored, caplog) == ""  # (read back: nothing to say)


def test_rows_added_after_the_snapshot_are_merged_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    stored = entries(ROWS, 2)
    with DiskIndex(tmp_path) as index:
        index.add_many(stored[:2000])
    no_snapshot_at_close(monkeypatch)
    with DiskIndex(tmp_path) as index:
        index.add_many(stored[2000:])
    assert reopened(tmp_path, stored, caplog) == ""  # (read back: nothing to say)


def test_a_snapshot_of_other_rows_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             caplog: pytest.LogCaptureFixture) -> None:
    stored = entries(ROWS, 3)
    with DiskIndex(tmp_path) as index:
        index.add_many(stored)
    no_snapshot_at_close(monkeypatch)
    with DiskIndex(tmp_path) as index:  # the rows after it are renumbered
        assert index.remove(*stored[10]) == 1
    assert "not the ones it indexes" in reopened(tmp_path, stored[:10] + stored[11:], caplog)


@pytest.mark.parametrize(("damage", "reason"), [
    (lambda data: data[:20], "header is torn"),
    (lambda data: data[:-7], "cut short"),
    (lambda data: data + b"x", "damaged"),
    (lambda data: data[:-5] + bytes([data[-5] ^ 1]) + data[-4:], "damaged"),
    (lambda data: b"\0" * len(data), "header is torn"),
    (lambda data: b"", "header is torn"),
])
def test_a_damaged_snapshot_is_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture, damage, reason) -> None:  # type: ignore[no-untyped-def]
    stored = entries(ROWS, 4)
    with DiskIndex(tmp_path) as index:
        index.add_many(stored)
    snapshot = tmp_path / "tables-0.snapshot"
    snapshot.write_bytes(damage(snapshot.read_bytes()))
    assert reason in reopened(tmp_path, stored, caplog, read_only=True)


def test_a_snapshot_for_another_distance_is_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    stored = entries(ROWS, 5)
    with DiskIndex(tmp_path, max_distance=5) as index:
        index.add_many(stored)
    assert "made for other tables" in reopened(tmp_path, stored, caplog)


def test_a_snapshot_that_cannot_be_read_is_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    stored = entries(ROWS, 6)
    with DiskIndex(tmp_path) as index:
        index.add_many(stored)
    snapshot = tmp_path / "tables-0.snapshot"
    snapshot.unlink()
    snapshot.mkdir()  # (an OSError on reading)
    assert "unreadable" in reopened(tmp_path, stored, caplog, read_only=True)


def test_the_key_lookup_comes_back_with_the_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store searched by key (as a crawl opens it) keeps its key lookup in the snapshot,
    renumbered by the close's compaction: the next open computes no key's CRC again."""
    from scrapy_simhash.index import _key_lookup

    stored = entries(ROWS, 7)
    with DiskIndex(tmp_path) as index:
        index.add_many(stored)
        index.prepare_key_lookups()
        index.remove_key(stored[5][1])  # the close compacts it away: rows renumbered
    computed: list[int] = []
    real = _key_lookup.crcs_of_keys
    monkeypatch.setattr(_key_lookup, "crcs_of_keys",
                        lambda data, ends, start=0: computed.append(start) or real(data, ends, start))
    live = stored[:5] + stored[6:]
    with DiskIndex(tmp_path) as index:
        index.prepare_key_lookups()
        assert computed == []
        index.add(1234, "https://example.com/new")
        assert [index.fingerprints_of(key) for _, key in live[::50]] == [[fp] for fp, _ in live[::50]]
        assert index.fingerprints_of("https://example.com/new") == [1234]
        assert index.fingerprints_of(stored[5][1]) == []
        assert computed == [len(live)]  # the new row's only


def test_a_store_never_searched_by_key_has_no_key_lookup_in_its_snapshot(tmp_path: Path) -> None:
    stored = entries(ROWS, 8)
    with DiskIndex(tmp_path) as index:
        index.add_many(stored)
    fingerprints = np.array([fingerprint for fingerprint, _ in stored], dtype=np.uint64)
    snapshot = _snapshot.read_snapshot(str(tmp_path / "tables-0.snapshot"), fingerprints, bulk_design(3, ROWS))
    assert snapshot is not None and snapshot.key_lookup is None
    with DiskIndex(tmp_path) as index:
        assert index.fingerprints_of(stored[9][1]) == [stored[9][0]]  # built at the first search


def test_a_snapshot_of_the_previous_format_is_ignored_then_written_again(tmp_path: Path,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    """Version 2 held table 0's whole fingerprints: rebuilt from the log once, then a
    snapshot of this version is written at close."""
    stored = entries(ROWS, 8)
    with DiskIndex(tmp_path) as index:
        index.add_many(stored)
    snapshot = tmp_path / "tables-0.snapshot"
    data = bytearray(snapshot.read_bytes())
    data[8:12] = (2).to_bytes(4, "little")  # the version, and the header's CRC after it
    header = _snapshot._HEADER.size
    data[header : header + 4] = zlib.crc32(data[:header]).to_bytes(4, "little")
    snapshot.write_bytes(bytes(data))
    assert "not a snapshot of this version" in reopened(tmp_path, stored, caplog)
    caplog.clear()
    assert reopened(tmp_path, stored, caplog) == ""  # (written again at the close before)
