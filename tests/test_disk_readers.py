"""Read-only opens of a disk store beside its writer: they change no file, and read one
compaction's pair of files, opening again when a compaction's renames meet their open."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_disk_recovery import KEYS, LOG, _compacted_copy, _copy, entries, fork_reporting, stored

from scrapy_simhash.index import DiskIndex, IndexFormatError, IndexUnavailableError
from scrapy_simhash.index import _logfile as lf
from scrapy_simhash.index import _storefiles
from scrapy_simhash.index.disk import compact_store

LIVE = set(entries(200))


def _files(path: Path) -> dict[str, tuple[int, int, int]]:
    """Every file of the directory, as (inode, size, mtime): what a reader must not change."""
    return {name: (s.st_ino, s.st_size, s.st_mtime_ns) for name in os.listdir(path) for s in [os.stat(path / name)]}


def _mid_compaction(tmp_path: Path) -> Path:
    """A store whose compaction renamed keys.log.new and has yet to rename its log, as a
    writer paused between its two renames leaves it."""
    path = tmp_path / "store"
    with DiskIndex(path) as index:
        index.add_entries(entries(200))
    done = _compacted_copy(path, tmp_path / "done")
    shutil.copy(done / KEYS, path / KEYS)
    shutil.copy(done / LOG, path / (LOG + ".new"))
    return path


def _once(action: Callable[[], None]) -> Callable[[], None]:
    done: list[bool] = []
    return lambda: done or (done.append(True), action())  # type: ignore[func-returns-value]


def _after(function: Callable[..., Any], action: Callable[[], None]) -> Callable[..., Any]:
    def hooked(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        action()
        return result

    return hooked


def test_a_reader_whose_new_log_is_renamed_away_reads_the_renamed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reviewer's interleaving: the reader chose fingerprints.log.new, then the writer
    renamed it. The reader used to create an empty store there; the writer's next open
    then renamed that empty log into place."""
    path = _mid_compaction(tmp_path)
    rename = _once(lambda: os.replace(path / (LOG + ".new"), path / LOG))
    monkeypatch.setattr(_storefiles, "log_to_read", _after(_storefiles.log_to_read, rename))
    with DiskIndex(path, read_only=True) as reader:
        after_rename = _files(path)
        assert set(reader.entries()) == LIVE
    assert _files(path) == after_rename  # nothing created, renamed or written
    monkeypatch.undo()
    assert stored(path) == LIVE


def test_a_reader_that_opened_the_old_log_before_the_keys_rename_opens_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its log of one generation, keys.log of the next: not damage, a compaction under way."""
    path = tmp_path / "store"
    with DiskIndex(path) as index:
        index.add_entries(entries(200))
    done = _compacted_copy(path, tmp_path / "done")
    shutil.copy(done / KEYS, path / (KEYS + ".new"))
    shutil.copy(done / LOG, path / (LOG + ".new"))

    def finish_compaction() -> None:  # the writer's two renames, after the reader read the old log's header
        os.replace(path / (KEYS + ".new"), path / KEYS)
        os.replace(path / (LOG + ".new"), path / LOG)

    monkeypatch.setattr(lf, "read_header", _after(lf.read_header, _once(finish_compaction)))
    with DiskIndex(path, read_only=True) as reader:
        after_renames = _files(path)
        assert set(reader.entries()) == LIVE
        assert reader._store.generation == 2
    assert _files(path) == after_renames


def test_a_reader_of_files_that_keep_changing_gives_up_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store"
    with DiskIndex(path) as index:
        index.add_entries(entries(200))
    other_generation = _compacted_copy(_copy(path, tmp_path / "copy"), tmp_path / "done") / KEYS

    def swap_keys() -> None:  # a new keys.log of another generation at every open
        shutil.copy(other_generation, path / "keys.tmp")
        os.replace(path / "keys.tmp", path / KEYS)

    monkeypatch.setattr(_storefiles, "log_to_read", _after(_storefiles.log_to_read, swap_keys))
    with pytest.raises(IndexUnavailableError, match="kept changing while it was read .* generation 2"):
        DiskIndex(path, read_only=True)


def test_a_reader_refuses_mixed_files_that_do_not_move_at_once(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with DiskIndex(path) as index:
        index.add_entries(entries(200))
    shutil.copy(_compacted_copy(_copy(path, tmp_path / "copy"), tmp_path / "done") / KEYS, path / KEYS)
    before = _files(path)
    with pytest.raises(IndexFormatError, match="generation 2, its log of generation 1"):
        DiskIndex(path, read_only=True)
    assert _files(path) == before


# -- a real writer compacting, a real reader opening ----------------------------------------


def _compact_until(path: Path, deadline: float, report: int) -> None:
    while time.monotonic() < deadline:
        compact_store(path)
        os.write(report, b"compacted\n")


def _read_until(path: Path, deadline: float, report: int) -> None:
    while time.monotonic() < deadline:
        try:
            with DiskIndex(path, read_only=True) as reader:
                found = set(reader.entries())
            os.write(report, b"whole\n" if found == LIVE else f"wrong {len(found)}\n".encode())
        except IndexUnavailableError as exc:
            os.write(report, f"unsettled {exc}\n".replace("\n", " ").encode() + b"\n")
        except Exception as exc:  # (reported, for the test to show)
            os.write(report, f"failed {exc!r}".replace("\n", " ").encode() + b"\n")


def _reports(pid: int, read_end: int) -> list[str]:
    with os.fdopen(read_end, "rb") as reports:
        lines = reports.read().decode().splitlines()
    os.waitpid(pid, 0)
    return lines


def test_readers_beside_a_writer_compacting_in_a_loop_see_the_whole_store(tmp_path: Path) -> None:
    with DiskIndex(tmp_path) as index:
        index.add_entries(entries(200))
    deadline = time.monotonic() + 3.0  # (how long they run, not a timed assertion)
    writer = fork_reporting(lambda report: _compact_until(tmp_path, deadline, report))
    reader = fork_reporting(lambda report: _read_until(tmp_path, deadline, report))
    compactions, reads = _reports(*writer), _reports(*reader)
    assert compactions and reads
    assert [line for line in reads if line != "whole" and not line.startswith("unsettled")] == []
    assert reads.count("whole") > len(reads) // 2
    assert not list(tmp_path.glob("*.new"))
    assert lf.read_header(str(tmp_path / LOG))["generation"] == len(compactions) + 1
    assert stored(tmp_path) == LIVE
