"""Crashes and outages: kill -9 while writing the disk store; Redis stopped and restarted."""

from __future__ import annotations

import errno
import gc
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from redis_server import RedisServer, own_redis_server  # noqa: F401  (fixture)

from scrapy_simhash.index import DiskIndex, IndexUnavailableError
from scrapy_simhash.index.disk import compact_store

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


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB file system (tmpfs: needs root), unmounted after the test."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount_point)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a small tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        gc.collect()  # (an index's columns may map the log until they are collected)
        subprocess.run(["umount", str(mount_point)], check=True)


def _fill(directory: Path) -> None:
    """Take the file system's last free byte."""
    with open(directory / "filler", "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(bytes(4096))
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def _add_until_full(index: DiskIndex) -> int:
    """Add entries until a write fails; how many were acknowledged."""
    for n in range(10**6):
        try:
            index.add(n * 0x9E3779B97F4A7C15 % 2**64, f"https://example.com/{n}/" + "x" * 50)
        except IndexUnavailableError:
            return n
    raise AssertionError("the disk never filled")


def test_a_full_disk_keeps_the_writes_error_through_close_and_the_store_opens(
    full_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """close() after a failed write used to replace its error by the checkpoint's (naming no
    file), leave a 0-byte synced.tmp, and the next open failed on its checkpoint."""
    path = full_disk / "store"
    acknowledged = 0
    with pytest.raises(IndexUnavailableError, match=r"cannot write .*/store/(keys|fingerprints)\.log: No space left on device"):
        with DiskIndex(path) as index:
            acknowledged = _add_until_full(index)
            index.add(1, "one more")  # (the error a crawl would see, out of the with block)
    assert acknowledged > 0
    assert not list(path.glob("*.tmp"))
    with DiskIndex(path) as index:  # opens read-mostly: what it holds is there to check against
        assert len(index) == acknowledged
        with pytest.raises(IndexUnavailableError, match=r"cannot write .*/store/(keys|fingerprints)\.log"):
            index.add(2, "and one more")
    assert "without a new checkpoint: cannot write" in caplog.text
    assert not list(path.glob("*.tmp"))
    with DiskIndex(path, read_only=True) as reader:
        assert len(reader) == acknowledged


def test_a_store_created_on_a_full_disk_fails_naming_the_file(full_disk: Path) -> None:
    _fill(full_disk)
    with pytest.raises(IndexUnavailableError, match=r"cannot write .*/store/keys\.log: No space left on device"):
        DiskIndex(full_disk / "store")
    assert not list((full_disk / "store").glob("*.tmp"))


def test_a_compaction_on_a_full_disk_fails_naming_the_file_and_leaves_the_store_whole(full_disk: Path) -> None:
    path = full_disk / "store"
    with DiskIndex(path) as index:
        for n in range(40):
            index.add(n * 0x9E3779B97F4A7C15 % 2**64, f"https://example.com/{n}")
    _fill(full_disk)
    with pytest.raises(IndexUnavailableError, match=r"cannot write .*/store/(keys|fingerprints)\.log\.new: No space"):
        compact_store(path)
    assert not list(path.glob("*.new")) and not list(path.glob("*.tmp"))
    (full_disk / "filler").unlink()
    with DiskIndex(path) as index:
        assert len(index) == 40


_OUT_OF_FILE_DESCRIPTORS = """
import os, resource, sys, time
from scrapy_simhash.index import DiskIndex, IndexUnavailableError
index = DiskIndex(sys.argv[1], fsync_seconds=0.0)  # a sync, and its checkpoint, with each write
index.add(1, "a")
time.sleep(1.1)  # (a checkpoint a second at most)
highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
try:
    while True:  # every descriptor left taken
        os.open(os.devnull, os.O_RDONLY)
except OSError:
    pass
try:
    index.add(2, "b")  # the checkpoint's fsync of the directory opens one more file: EMFILE
except IndexUnavailableError as exc:
    print("unavailable:", exc)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")
def test_a_checkpoint_out_of_file_descriptors_is_an_unavailable_index(tmp_path: Path) -> None:
    # (As a write's failure: SIMHASH_ON_INDEX_ERROR applies, not a raw OSError out of the check.)
    run = subprocess.run([sys.executable, "-c", _OUT_OF_FILE_DESCRIPTORS, str(tmp_path / "store")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("unavailable: cannot write") and "Too many open files" in run.stdout
