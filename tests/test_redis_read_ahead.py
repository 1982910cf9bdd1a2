"""A check that expects other workers' records reads the log's end first (plain reads),
then runs one script: the same answers, the same race, the same guarantees after lost writes.

``_READ_AHEAD_AT`` is set to 0 here, so that every check reads ahead (a crawl does when
the log grew by 16 records or more between its checks: :class:`BacklogForecast`).
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

redis = pytest.importorskip("redis")

from redis_server import redis_url, shared_redis_server  # noqa: E402,F401  (fixtures)
from test_concurrency import WORKERS, all_groups, kept_groups, near_duplicate_clusters  # noqa: E402

from scrapy_simhash.index import Match  # noqa: E402
from scrapy_simhash.index.redis import RedisIndex, _session  # noqa: E402
from scrapy_simhash.index.redis._layout import CHUNK_RECORDS, Names  # noqa: E402
from scrapy_simhash.index.redis._recent import RecentRecords  # noqa: E402
from scrapy_simhash.index.redis._scripts import LogScripts  # noqa: E402


@pytest.fixture
def always_read_ahead(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every check reads ahead; returns the first word of each script reply, as they come."""
    monkeypatch.setattr(_session, "_READ_AHEAD_AT", 0)
    replies: list[str] = []
    call = LogScripts.call

    def spy(self: LogScripts, source: str, args: list[Any]) -> list[Any] | None:
        reply = call(self, source, args)
        replies.append("reload" if reply is None else reply[0].decode())
        return reply

    monkeypatch.setattr(LogScripts, "call", spy)
    return replies


def random_records(count: int, seed: int) -> list[tuple[int, str]]:
    rng = random.Random(seed)
    return [(rng.getrandbits(64), f"page-{seed}-{n}") for n in range(count)]


def test_a_check_reads_ahead_and_runs_one_script(redis_url: str, always_read_ahead: list[str]) -> None:
    """Records read ahead (across a chunk's end) are searched before they are in the
    tables, with wildcard bits, and are in them once the check is done."""
    with RedisIndex(redis_url, namespace="ahead") as reader, RedisIndex(redis_url, namespace="ahead") as writer:
        reader.add(7, "first")
        others = random_records(CHUNK_RECORDS + 300, seed=1)
        writer.add_many(others)
        fingerprint, key = others[-5]
        always_read_ahead.clear()
        # 4 bits off, 2 of them wildcard bits: within k = 3
        assert reader.add_if_new(fingerprint ^ 0b1111, "copy", wildcard=0b11) == Match(key, fingerprint, 4)
        assert always_read_ahead == ["found"]  # one script, not "behind" first
        assert reader.describe()["mirror"]["records"] == len(others) + 1
        assert reader.add_if_new(fingerprint ^ 0b1111, "copy") is None  # without them: 4 bits, stored


def test_recent_records_are_searched_as_the_tables_are() -> None:
    rng = np.random.default_rng(3)
    base = int(rng.integers(0, 2**63)) * 2
    fingerprints = [base ^ (1 << int(bit)) ^ (1 << int(other)) for bit, other in rng.integers(0, 64, (300, 2))]
    fingerprints += rng.integers(0, 2**63, 300, dtype=np.uint64).tolist()
    recent = RecentRecords(first=1000)
    for start in range(0, len(fingerprints), 7):  # grown a few at a time
        piece = np.array(fingerprints[start : start + 7], dtype=np.uint64)
        recent.extend(piece, (piece % 13).astype(np.uint32))
    for wildcard in (0, 0b1111 << 20, 0xFFFF << 48):
        expected = {1000 + row: (fp ^ base).bit_count() for row, fp in enumerate(fingerprints)
                    if ((fp ^ base) & ~wildcard).bit_count() <= 1}
        assert recent.within(base, wildcard, 1) == expected
    assert recent.with_crc(5) == [1000 + row for row, fp in enumerate(fingerprints) if fp % 13 == 5]


def test_threads_reading_ahead_keep_one_each(redis_url: str, always_read_ahead: list[str]) -> None:
    clusters = 100
    variants = near_duplicate_clusters(seed=4, clusters=clusters)
    orders = [random.Random(seed).sample(variants, len(variants)) for seed in range(WORKERS)]
    indexes = [RedisIndex(redis_url, expected_size=10000, namespace="race-ahead") for _ in range(WORKERS)]
    try:
        with ThreadPoolExecutor(WORKERS) as pool:
            kept_lists = pool.map(
                lambda job: [key for fp, key, sketch in job[1] if job[0].add_if_new(fp, key, sketch=sketch) is None],
                zip(indexes, orders),
            )
            kept = [key for keys in kept_lists for key in keys]
        assert kept_groups(kept) == all_groups(clusters)
        assert sorted(key for _, key in indexes[0].items()) == sorted(kept)
    finally:
        for index in indexes:
            index.close()


@pytest.mark.parametrize("loss", ["last record", "tombstones", "epoch"])
def test_reading_ahead_notices_a_log_that_is_not_the_mirrored_one(
    redis_url: str, always_read_ahead: list[str], loss: str
) -> None:
    """Redis lost writes the reader had seen, and others wrote since: reading ahead tells
    (as the scripts would), so the reader mirrors the log afresh and reports no match
    that Redis does not hold."""
    names = Names.of("lost")
    with RedisIndex(redis_url, namespace="lost") as reader:
        reader.add_many(random_records(50, seed=5))
        reader.add(0xABCD_0000_0000_0000, "gone")
        reader.remove(0xABCD_0000_0000_0000, "gone")
        assert reader.add_if_new(0x1234_0000_0000_0000, "last") is None  # (its reply tells the tombstone)
        assert reader._mirror.tombstones_seen == 1
        generation = reader._mirror.generation
        client = redis.Redis.from_url(redis_url)
        if loss == "last record":  # another record where the reader's last one was
            client.setrange(names.chunk("f", 0), 51 * 8, (0x5678_0000_0000_0000).to_bytes(8, "big"))
        elif loss == "tombstones":
            client.set(names.tombstones, b"")
        else:  # reset by another worker, then written again
            RedisIndex(redis_url, namespace="lost", reset=True).close()
        client.close()
        with RedisIndex(redis_url, namespace="lost") as writer:
            writer.add_many(random_records(100, seed=6))
        always_read_ahead.clear()
        assert reader.add_if_new(0x1234_0000_0000_0001, "near last") == (
            None if loss != "tombstones" else Match("last", 0x1234_0000_0000_0000, 1)
        )
        assert reader._mirror.generation > generation
        assert "reload" not in always_read_ahead  # told by the reads, before any script
        if loss == "tombstones":  # the record removed counts again, as Redis now holds it
            assert reader.query(0xABCD_0000_0000_0000) == [Match("gone", 0xABCD_0000_0000_0000, 0)]


def test_the_backlog_forecast_follows_the_log_s_growth(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(_session.time, "monotonic", lambda: now[0])
    forecast = _session.BacklogForecast()
    assert forecast.expected() == 0
    forecast.observe(1000)
    now[0] += 1.0
    assert forecast.expected() == 0  # no rate yet
    forecast.observe(1400)  # 400 records a second: (0 + 400) / 2 foreseen
    now[0] += 0.5
    assert forecast.expected() == 100
    forecast.observe(1600)  # 400 a second again: (200 + 400) / 2
    now[0] += 0.5
    assert forecast.expected() == 150


def test_the_forecast_leaves_the_worker_s_own_records_out(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(_session.time, "monotonic", lambda: now[0])
    forecast = _session.BacklogForecast()
    for _ in range(30):  # a burst of checks, each storing its page: no one else writes
        forecast.stored(1)
        forecast.observe(forecast._own)
        now[0] += 0.001
    now[0] += 0.05  # a pause, as a crawl's checks have
    assert forecast.expected() == 0


def test_a_lone_worker_s_bursts_of_checks_read_nothing_ahead(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bursts of checks, each storing its page, then pauses: no other worker wrote, so no
    check reads ahead (each read ahead after a pause before its own records were left out)."""
    reads: list[int] = []
    read_log = LogScripts.read_log

    def spy(self: LogScripts, *args: Any) -> Any:
        reads.append(args[0])
        return read_log(self, *args)

    monkeypatch.setattr(LogScripts, "read_log", spy)
    rng = random.Random(10)
    with RedisIndex(redis_url, namespace="lone") as index:
        index.add_many(random_records(100, seed=9))
        reads.clear()  # (opening read the log)
        for _ in range(5):
            for _ in range(30):
                assert index.replace_if_new(rng.getrandbits(64), f"page-{rng.getrandbits(40)}").match is None
            time.sleep(0.05)
    assert reads == []
