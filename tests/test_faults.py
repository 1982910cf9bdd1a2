"""Crashes and outages: kill -9 while writing the disk store; Redis stopped and restarted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from redis_server import RedisServer, own_redis_server  # noqa: F401  (fixture)

from scrapy_simhash.index import DiskIndex, IndexUnavailableError

# Adds entries forever, most with a sketch; prints a key and its sketch ("-": none)
# only after add_if_new acknowledged it.
_WRITER = """
import random, sys
from scrapy_simhash.index import DiskIndex
rng = random.Random(int(sys.argv[2]))
with DiskIndex(sys.argv[1]) as index:
    for i in range(10**9):
        key = "https://example.com/%s/%d" % (sys.argv[2], i)
        if i % 50 == 0:
            index.add_entries((rng.getrandbits(64), key + "/bulk/%d" % j, rng.randbytes(32)) for j in range(20))
        sketch = rng.randbytes(32) if i % 3 else None
        if index.add_if_new(rng.getrandbits(64), key, sketch=sketch) is None:
            print(key, sketch.hex() if sketch else "-", flush=True)
"""


def _kill_writer_after(path: Path, seed: int, acknowledged: int) -> dict[str, str]:
    """Start a writer, read *acknowledged* entries, SIGKILL it mid-write; return them (key: sketch)."""
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), str(seed)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    entries = dict(writer.stdout.readline().split() for _ in range(acknowledged))
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    return entries


def test_kill_9_loses_no_acknowledged_entry(tmp_path: Path) -> None:
    acknowledged: dict[str, str] = {}
    for seed, count in enumerate([300, 1000, 2500]):
        acknowledged |= _kill_writer_after(tmp_path, seed, count)
        with DiskIndex(tmp_path) as index:  # opens: no half-written file is fatal
            stored = {key: sketch.hex() if sketch else "-" for _, key, sketch in index.entries()}
        assert acknowledged.items() <= stored.items()  # sketches included


def test_redis_going_away_raises_then_recovers(own_redis_server: RedisServer) -> None:
    with _redis_index(own_redis_server.url) as index:
        assert index.add_if_new(0xAAAA, "before") is None
        own_redis_server.stop()
        with pytest.raises(IndexUnavailableError, match="unavailable"):
            index.add_if_new(0xBBBB, "during")
        with pytest.raises(IndexUnavailableError):
            len(index)
        own_redis_server.start()  # same port, empty (no persistence): scripts and meta are gone
        assert index.add_if_new(0xBBBB, "after") is None
        assert index.add_if_new(0xBBBA, "near").key == "after"


def test_unreachable_redis_at_open_is_unavailable(own_redis_server: RedisServer) -> None:
    own_redis_server.stop()
    with pytest.raises(IndexUnavailableError, match="127.0.0.1"):
        _redis_index(own_redis_server.url)


def _redis_index(url: str):
    redis_index = pytest.importorskip("scrapy_simhash.index.redis")
    return redis_index.RedisIndex(url)


def test_redis_out_of_memory_is_unavailable(own_redis_server: RedisServer) -> None:
    redis = pytest.importorskip("redis")
    with _redis_index(own_redis_server.url) as index, redis.Redis.from_url(own_redis_server.url) as client:
        index.add(1, "stored")
        client.config_set("maxmemory", 1)  # every write is refused with OOM
        with pytest.raises(IndexUnavailableError, match="unavailable"):
            index.add_if_new(0xFFFF_0000, "refused")
        client.config_set("maxmemory", 0)
        assert index.add_if_new(0xFFFF_0000, "accepted") is None


def test_a_full_disk_is_unavailable_and_loses_nothing(tmp_path: Path) -> None:
    """A write that fails (here: over RLIMIT_FSIZE, as on a full disk) raises
    IndexUnavailableError, and what was acknowledged before reopens intact."""
    resource = pytest.importorskip("resource")
    acknowledged = []
    with DiskIndex(tmp_path) as index:
        limits = resource.getrlimit(resource.RLIMIT_FSIZE)
        previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(tmp_path / "fingerprints.log") + 1000, limits[1]))
        try:
            with pytest.raises(IndexUnavailableError, match="cannot write"):
                for i in range(1000):
                    index.add(i * 0x9E3779B97F4A7C15 % 2**64, f"https://example.com/{i}")
                    acknowledged.append(i)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, limits)
            signal.signal(signal.SIGXFSZ, previous_handler)
        assert 0 < len(acknowledged) < 1000
        index.add(1, "after the disk has room again")
    with DiskIndex(tmp_path) as index:
        assert index.describe()["truncated_tail_bytes"] == 0
        assert len(index) == len(acknowledged) + 1
