"""The disk store after a crash: torn tails of each of its files, holes a power cut may
leave past what was synced, writers killed with SIGKILL, and compaction."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from scrapy_simhash.cli import main
from scrapy_simhash.index import DiskIndex, IndexFormatError
from scrapy_simhash.index import _logfile as lf
from scrapy_simhash.index._checkpoint import CHECKPOINT_NAME, read_checkpoint
from scrapy_simhash.index._compaction import MIN_DEAD_RECORDS
from scrapy_simhash.index.disk import compact_store

LOG, KEYS = "fingerprints.log", "keys.log"
RECORD = lf.RECORD.itemsize


def entry_of(key: str) -> tuple[int, str, bytes | None]:
    """Fingerprint and sketch derived from the key: an entry that is half-there (a key
    with another entry's fingerprint or sketch) cannot pass for a whole one."""
    digest = hashlib.blake2b(key.encode(), digest_size=40).digest()
    sketch = digest[8:] if digest[0] % 3 else None
    return int.from_bytes(digest[:8], "little"), key, sketch


def entries(count: int, prefix: str = "https://example.com/") -> list[tuple[int, str, bytes | None]]:
    return [entry_of(f"{prefix}{n}") for n in range(count)]


def stored(path: Path, **kwargs: object) -> set[tuple[int, str, bytes | None]]:
    with DiskIndex(path, **kwargs) as index:  # type: ignore[arg-type]
        return set(index.entries())


def assert_whole(found: set[tuple[int, str, bytes | None]]) -> None:
    assert all(entry == entry_of(entry[1]) for entry in found)


@pytest.fixture(scope="module")
def closed_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 entries added one by one, the store closed (so synced)."""
    path = tmp_path_factory.mktemp("closed")
    with DiskIndex(path) as index:
        for entry in entries(20):
            index.add(*entry)
    return path


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def _last_record_bytes(name: str) -> int:
    return {LOG: RECORD, KEYS: len(b"https://example.com/19"), CHECKPOINT_NAME: 36}[name]


@pytest.mark.parametrize(
    ("name", "cut"),
    [(name, cut) for name in (LOG, KEYS, CHECKPOINT_NAME) for cut in range(1, _last_record_bytes(name) + 1)],
)
def test_a_file_cut_anywhere_in_its_last_record_loses_that_record_only(
    closed_store: Path, tmp_path: Path, name: str, cut: int
) -> None:
    path = _copy(closed_store, tmp_path / "store")
    os.truncate(path / name, os.path.getsize(path / name) - cut)
    expected = set(entries(20 if name == CHECKPOINT_NAME else 19))  # (the checkpoint holds no entry)
    assert stored(path, read_only=True) == expected  # a reader sees the same, and changes nothing
    with DiskIndex(path) as index:
        assert set(index.entries()) == expected
        index.add(*entry_of("after the cut"))
    assert stored(path) == expected | {entry_of("after the cut")}
    assert read_checkpoint(str(path), 1) is not None


@pytest.mark.parametrize("name", [LOG, KEYS, CHECKPOINT_NAME])
@pytest.mark.parametrize("tail", [b"\0" * 13, b"\0" * RECORD, b"\xff" * 100, random.Random(1).randbytes(3 * RECORD + 5)])
def test_garbage_after_any_file_loses_nothing(closed_store: Path, tmp_path: Path, name: str, tail: bytes) -> None:
    path = _copy(closed_store, tmp_path / "store")
    with open(path / name, "ab") as file:
        file.write(tail)
    with DiskIndex(path) as index:
        assert set(index.entries()) == set(entries(20))
        index.add(*entry_of("after"))
    assert stored(path) == {*entries(20), entry_of("after")}


def _synced_loss_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "synced to disk are lost" in r.getMessage()]


@pytest.mark.parametrize("records_cut", [10, 20])
def test_synced_records_cut_at_a_record_boundary_are_reported_and_the_rest_kept(
    closed_store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str],
    records_cut: int,
) -> None:
    """The checkpoint proves those records were on disk: losing them is damage, said in a
    WARNING (and by inspect), not a torn tail dropped quietly; what is left still opens."""
    path = _copy(closed_store, tmp_path / "store")
    os.truncate(path / LOG, os.path.getsize(path / LOG) - records_cut * RECORD)
    expected = set(entries(20 - records_cut))
    with DiskIndex(path, read_only=True) as reader:
        assert set(reader.entries()) == expected
        assert reader.describe()["synced_bytes_missing"] == records_cut * RECORD
    assert main(["inspect", str(path)]) == 0
    assert f"synced_bytes_missing: {records_cut * RECORD}" in capsys.readouterr().out
    with DiskIndex(path) as writer:
        assert set(writer.entries()) == expected
    assert _synced_loss_warnings(caplog)[-1].endswith(
        f"fingerprints.log by {records_cut * RECORD} bytes ({records_cut} records) shorter than {path / CHECKPOINT_NAME}"
        " says they were synced (damage, or a copy cut short); the rest of the store is kept"
    )
    caplog.clear()
    assert stored(path) == expected
    assert not _synced_loss_warnings(caplog)  # said once: the writer's checkpoint covers what is left


def test_a_key_file_cut_inside_what_was_synced_loses_the_entries_of_those_keys(
    closed_store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _copy(closed_store, tmp_path / "store")
    lost_keys = b"".join(f"https://example.com/{n}".encode() for n in (17, 18, 19))
    os.truncate(path / KEYS, os.path.getsize(path / KEYS) - len(lost_keys) + 1)  # (the 17th's key cut short)
    with DiskIndex(path) as index:
        assert set(index.entries()) == set(entries(17))
        assert index.describe()["truncated_tail_bytes"] == 3 * RECORD
        assert index.describe()["synced_bytes_missing"] == len(lost_keys) - 1
    assert f"keys.log by {len(lost_keys) - 1} bytes shorter" in _synced_loss_warnings(caplog)[0]
    assert stored(path) == set(entries(17))


def _unsynced_copy(tmp_path: Path) -> tuple[Path, int]:
    """A store whose last 30 entries were written after its checkpoint: what a power cut
    could find. Returns it and where its first unsynced record starts."""
    original = tmp_path / "original"
    with DiskIndex(original) as index:
        index.add_entries(entries(20))
    with DiskIndex(original) as index:  # opening checkpoints: the next 30 are past it
        for entry in entries(30, "https://example.com/late/"):
            index.add(*entry)
        copy = _copy(original, tmp_path / "copy")
    return copy, lf.HEADER_SIZE + 20 * RECORD


def test_a_hole_past_the_checkpoint_ends_the_store_there(tmp_path: Path) -> None:
    """A power cut may keep a later page of the log and lose an earlier one: the records
    after the hole are dropped with it, and the store opens."""
    path, unsynced = _unsynced_copy(tmp_path)
    with open(path / LOG, "r+b") as log:
        log.seek(unsynced + 10 * RECORD)
        log.write(bytes(2 * RECORD))
    assert stored(path) == {*entries(20), *entries(10, "https://example.com/late/")}


def test_a_record_whose_key_was_zeroed_past_the_checkpoint_is_dropped(tmp_path: Path) -> None:
    """The log's page reached the disk, the key file's did not (its size did): zeros."""
    path, _ = _unsynced_copy(tmp_path)
    keys = (path / KEYS).read_bytes()
    start = keys.index(b"https://example.com/late/12")
    with open(path / KEYS, "r+b") as file:
        file.seek(start)
        file.write(bytes(len(keys) - start))
    found = stored(path)
    assert found == {*entries(20), *entries(12, "https://example.com/late/")}
    assert_whole(found)


def test_the_same_hole_inside_the_checkpoint_is_damage(tmp_path: Path) -> None:
    path, _ = _unsynced_copy(tmp_path)
    DiskIndex(path).close()  # closed: all synced now
    with open(path / LOG, "r+b") as log:
        log.seek(lf.HEADER_SIZE + 10 * RECORD)
        log.write(bytes(RECORD))
    with pytest.raises(IndexFormatError, match="corrupt record #10 .* followed by valid ones"):
        DiskIndex(path)


def test_a_cut_tail_is_synced_before_anything_is_appended(tmp_path: Path) -> None:
    """Records dropped at open must not come back after a second crash, pointing at keys
    written since: the cut and a new checkpoint are on disk before the first new write."""
    path, _ = _unsynced_copy(tmp_path)
    os.truncate(path / KEYS, os.path.getsize(path / KEYS) - 200)
    with DiskIndex(path) as index:
        checkpoint = read_checkpoint(str(path), 1)
        assert checkpoint is not None
        assert (checkpoint.log_size, checkpoint.keys_size) == (
            os.path.getsize(path / LOG), os.path.getsize(path / KEYS))
        assert index.describe()["truncated_tail_bytes"] > 0


# -- writers killed with SIGKILL ---------------------------------------------------------


def _writer(path: Path, seed: int, ack: int, fsync_seconds: float | None) -> None:
    """Add (one by one and in bulk) and remove entries forever; report each on *ack* once
    it returned ("+key", "-key"; "?key" before a removal: it may be done when the writer
    is killed before it reports it). Runs in a forked child, killed by the test."""
    rng = random.Random(seed)
    with DiskIndex(path, fsync_seconds=fsync_seconds) as index:
        for n in range(10**9):
            key = f"https://example.com/{seed}/{n}"
            if n % 25 == 0:
                batch = [entry_of(f"{key}/bulk/{j}") for j in range(20)]
                index.add_entries(batch)
                os.write(ack, "".join(f"+{k}\n" for _, k, _ in batch).encode())
            if n % 7 == 3:
                victim = entry_of(f"https://example.com/{seed}/{rng.randrange(n)}")
                os.write(ack, f"?{victim[1]}\n".encode())
                if index.remove(victim[0], victim[1]):
                    os.write(ack, f"-{victim[1]}\n".encode())
            if index.add_if_new(*entry_of(key)[:2], sketch=entry_of(key)[2]) is None:
                os.write(ack, f"+{key}\n".encode())


def fork_reporting(target: Callable[[int], None]) -> tuple[int, int]:
    """A child running *target(report_fd)*; its pid and the read end of its reports."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read_end)
        try:
            target(write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end


def _run_and_kill(target: Callable[[int], None], delay: float) -> list[str]:
    """Fork a child running *target(ack_fd)*, SIGKILL it *delay* s after its first report."""
    pid, read_end = fork_reporting(target)
    with os.fdopen(read_end, "rb") as reports:
        first = reports.readline()
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return (first + reports.read()).decode().splitlines()


def test_writers_killed_at_25_points_lose_nothing_they_reported(tmp_path: Path) -> None:
    rng = random.Random(7)
    present: set[str] = set()
    for seed in range(25):
        fsync = rng.choice([None, 0.0, 0.05])
        reports = _run_and_kill(lambda ack: _writer(tmp_path, seed, ack, fsync), rng.uniform(0, 0.08))
        for line in reports:
            (present.add if line[0] == "+" else present.discard)(line[1:])
        found = stored(tmp_path)  # opens: nothing half-written is fatal
        assert_whole(found)  # nothing half-there
        keys = {key for _, key, _ in found}
        in_flight = {line[1:] for line in reports[-1:] if line[0] == "?"}  # killed during this removal
        assert present - in_flight <= keys  # every reported entry, removals applied
        removed = {line[1:] for line in reports if line[0] == "-"} - present
        assert not keys & removed
        present = keys  # (an entry added but not yet reported may be there: it counts now)
    assert len(present) > 25 * 20


def test_a_compaction_killed_at_any_point_loses_no_entry(tmp_path: Path) -> None:
    source = tmp_path / "source"
    with DiskIndex(source) as index:  # 40k entries, then 30k of them removed: compaction is due
        index.add_entries(entries(40_000))
        index.add_entries(entries(30_000, "https://example.com/again/"))
    with DiskIndex(source, reset=True) as index:
        index.add_entries(entries(20_000, "https://example.com/kept/"))
    expected = set(entries(20_000, "https://example.com/kept/"))
    rng = random.Random(3)
    for point in range(15):
        path = _copy(source, tmp_path / f"kill{point}")
        _run_and_kill(lambda ack: (os.write(ack, b"started\n"), compact_store(path)), rng.uniform(0, 0.3))
        assert stored(path, read_only=True) == expected
        assert stored(path) == expected
        assert not list(path.glob("*.new"))


# -- compaction ---------------------------------------------------------------------------


def _store_with_dead_records(path: Path) -> set[tuple[int, str, bytes | None]]:
    """Two namespaces; removals by key and by fingerprint; a reset: most records dead."""
    with DiskIndex(path, namespace="a") as a, DiskIndex(path, namespace="b") as b:
        a.add_entries(entries(3000))
        b.add_entries(entries(100, "https://b.example/"))
        for fingerprint, key, _ in entries(3000)[:2000]:
            a.remove(fingerprint, key if fingerprint % 2 else None)
        b.add(*entry_of("https://b.example/late"))
    return set(entries(3000)[2000:])


def test_a_writer_compacts_a_store_whose_records_are_mostly_dead(tmp_path: Path) -> None:
    live = _store_with_dead_records(tmp_path)
    before = os.path.getsize(tmp_path / LOG)
    b_entries = stored(tmp_path, namespace="b", read_only=True)
    assert stored(tmp_path, namespace="a") == live  # this open compacted the store
    assert os.path.getsize(tmp_path / LOG) < before / 3
    assert lf.read_header(str(tmp_path / LOG))["generation"] == 2
    assert stored(tmp_path, namespace="b") == b_entries == {*entries(100, "https://b.example/"), entry_of("https://b.example/late")}
    with DiskIndex(tmp_path, namespace="a") as index:
        assert index.add_if_new(*entry_of("after")[:2]) is None
        assert index.remove(*entries(3000)[2500][:2]) == 1
    assert stored(tmp_path, namespace="a") == (live - {entries(3000)[2500]}) | {entry_of("after")[:2] + (None,)}


def test_a_store_reset_crawl_after_crawl_stays_small(tmp_path: Path) -> None:
    sizes = []
    for crawl in range(6):
        with DiskIndex(tmp_path, reset=True) as index:
            index.add_entries(entries(2 * MIN_DEAD_RECORDS, f"https://example.com/{crawl}/"))
        sizes.append(os.path.getsize(tmp_path / LOG))
    assert max(sizes) <= lf.HEADER_SIZE + (4 * MIN_DEAD_RECORDS + 2) * RECORD  # a crawl dead, one live, 2 resets
    assert stored(tmp_path) == set(entries(2 * MIN_DEAD_RECORDS, "https://example.com/5/"))


def test_pages_replaced_crawl_after_crawl_stay_small(tmp_path: Path) -> None:
    """replace_if_new removes a changed page's old record: the store keeps one per page."""
    urls = [f"https://example.com/{n}" for n in range(1500)]
    for crawl in range(5):
        with DiskIndex(tmp_path) as index:
            for url in urls:
                fingerprint = entry_of(f"{url}#{crawl}")[0]
                index.replace_if_new(fingerprint, url)
        assert len(stored(tmp_path, read_only=True)) == len(urls)
    assert os.path.getsize(tmp_path / LOG) <= lf.HEADER_SIZE + 3 * len(urls) * RECORD


def test_a_small_store_is_not_rewritten(tmp_path: Path) -> None:
    with DiskIndex(tmp_path) as index:
        index.add_entries(entries(10))
        for fingerprint, key, _ in entries(10)[:8]:
            index.remove(fingerprint, key)
    DiskIndex(tmp_path).close()
    assert lf.read_header(str(tmp_path / LOG))["generation"] == 1


def _compacted_copy(source: Path, target: Path) -> Path:
    compact_store(_copy(source, target))
    return target


@pytest.mark.parametrize("state", ["new files half-written", "keys renamed, log not yet"])
def test_a_compaction_interrupted_between_its_steps_is_undone_or_finished(tmp_path: Path, state: str) -> None:
    live = _store_with_dead_records(tmp_path / "store")
    path = tmp_path / "store"
    done = _compacted_copy(path, tmp_path / "done")
    if state == "new files half-written":
        (path / "keys.log.new").write_bytes((done / KEYS).read_bytes()[:100])
        (path / "fingerprints.log.new").write_bytes((done / LOG).read_bytes()[:5000])
    else:
        shutil.copy(done / KEYS, path / KEYS)
        shutil.copy(done / LOG, path / "fingerprints.log.new")
    assert stored(path, namespace="a", read_only=True) == live  # a reader reads the right pair
    if state == "keys renamed, log not yet":  # (inspect of it: the log it reads is the .new one)
        with DiskIndex(path, namespace="a", read_only=True) as reader:
            assert reader.describe()["file_bytes"] == (path / KEYS).stat().st_size + (path / (LOG + ".new")).stat().st_size
    assert stored(path, namespace="a") == live
    assert not list(path.glob("*.new"))


def test_a_key_file_of_another_compaction_is_refused(tmp_path: Path) -> None:
    _store_with_dead_records(tmp_path / "store")
    done = _compacted_copy(tmp_path / "store", tmp_path / "done")
    shutil.copy(done / KEYS, tmp_path / "store" / KEYS)
    with pytest.raises(IndexFormatError, match="generation 2, its log of generation 1"):
        DiskIndex(tmp_path / "store", namespace="a")


def test_the_compact_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live = _store_with_dead_records(tmp_path)
    assert main(["compact", str(tmp_path)]) == 0
    assert "compacted" in capsys.readouterr().err
    assert lf.read_header(str(tmp_path / LOG))["generation"] == 2
    assert stored(tmp_path, namespace="a") == live
    assert main(["compact", str(tmp_path / "missing")]) == 1
    assert "no disk index there" in capsys.readouterr().err
    with DiskIndex(tmp_path):
        assert main(["compact", str(tmp_path)]) == 1
    assert "in use by another process" in capsys.readouterr().err


# -- format 2 ------------------------------------------------------------------------------


def _as_format_2(path: Path) -> None:
    """Rewrite a closed store as format 2 wrote it: no key CRCs, generation 0, no checkpoint."""
    header = lf.read_header(str(path / LOG))
    info = {name: value for name, value in header.items() if name not in ("version", "generation")}
    head = bytearray(lf.new_header(info))
    head[len(lf.MAGIC) : len(lf.MAGIC) + 4] = (2).to_bytes(4, "little")
    records = np.fromfile(path / LOG, dtype=lf.RECORD, offset=lf.HEADER_SIZE)
    records["key_offset"] = lf.key_offsets(records)
    (path / LOG).write_bytes(bytes(head) + lf.pack_records(records))
    keys = bytearray((path / KEYS).read_bytes())
    keys[8:16] = (2).to_bytes(4, "little") + bytes(4)
    (path / KEYS).write_bytes(bytes(keys))
    (path / CHECKPOINT_NAME).unlink()


def _as_format_3(path: Path) -> None:
    """Rewrite a closed store without short pages' shingles as format 3: only its version."""
    with open(path / LOG, "r+b") as log, open(path / KEYS, "r+b") as keys:
        for file in (log, keys):
            file.seek(len(lf.MAGIC))
            file.write((3).to_bytes(4, "little"))
    header = lf.read_header(str(path / LOG))  # (the header's CRC covers its JSON only)
    assert header["version"] == 3


@pytest.mark.parametrize(("version", "rewrite"), [(2, _as_format_2), (3, _as_format_3)])
def test_an_older_store_is_read_and_rewritten_by_its_first_writer(
    tmp_path: Path, version: int, rewrite: Callable[[Path], None]
) -> None:
    with DiskIndex(tmp_path, namespace="n") as index:
        index.add_entries(entries(50))
        index.remove(*entries(50)[3][:2])
    rewrite(tmp_path)
    expected = set(entries(50)) - {entries(50)[3]}
    assert stored(tmp_path, namespace="n", read_only=True) == expected
    assert lf.read_header(str(tmp_path / LOG))["version"] == version  # a reader changes nothing
    assert stored(tmp_path, namespace="n") == expected
    assert lf.read_header(str(tmp_path / LOG))["version"] == lf.FORMAT_VERSION
    assert stored(tmp_path, namespace="n") == expected


def test_a_store_made_anew_is_not_held_to_an_old_checkpoint(
    closed_store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Files removed by hand (or reset): the new store's files are not the ones `synced` covered.
    path = _copy(closed_store, tmp_path / "store")
    (path / LOG).unlink()
    (path / KEYS).unlink()
    with DiskIndex(path) as fresh:
        assert len(fresh) == 0 and fresh.describe()["synced_bytes_missing"] == 0
    assert not _synced_loss_warnings(caplog)


def test_new_store_files_are_made_with_the_umask_as_open_makes_them(tmp_path: Path) -> None:
    old = os.umask(0o002)  # a group's shared store
    try:
        with DiskIndex(tmp_path / "store") as index:
            index.add(1, "a")
    finally:
        os.umask(old)
    for name in (LOG, KEYS, CHECKPOINT_NAME):
        assert (path_mode := os.stat(tmp_path / "store" / name).st_mode & 0o777) == 0o664, (name, oct(path_mode))
