from __future__ import annotations

import logging
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.index import DiskIndex, IndexFormatError, MemoryIndex, SimhashIndexError, open_index
from scrapy_simhash.index import _files
from scrapy_simhash.index import _logfile as lf
from scrapy_simhash.index.brute import BruteForceIndex

LOG = "fingerprints.log"


def random_entries(count: int, seed: int = 0) -> list[tuple[int, str]]:
    rng = random.Random(seed)
    return [(rng.getrandbits(64), f"https://example.com/{i}/{rng.random()}") for i in range(count)]


def filled(path: Path, count: int = 50, **kwargs: object) -> list[tuple[int, str]]:
    entries = random_entries(count)
    with DiskIndex(path, **kwargs) as index:  # type: ignore[arg-type]
        for fingerprint, key in entries:
            assert index.add_if_new(fingerprint, key) is None
    return entries


def test_open_index_routes_paths_to_disk(tmp_path: Path) -> None:
    with open_index(tmp_path / "store") as index:
        assert index.backend_name == "disk"


def test_reopen_keeps_every_entry(tmp_path: Path) -> None:
    entries = filled(tmp_path, 200)
    with DiskIndex(tmp_path) as index:
        assert sorted(index.items()) == sorted(entries)
        fingerprint, key = entries[7]
        match = index.add_if_new(fingerprint ^ 0b101, "near")
        assert match is not None and (match.key, match.distance) == (key, 2)


def test_bulk_adds_and_unicode_keys_survive_reopen(tmp_path: Path) -> None:
    entries = [(fp, f"{key}/é/中文/\udc80") for fp, key in random_entries(5000, seed=1)]
    with DiskIndex(tmp_path) as index:
        index.add_many(entries)
    with DiskIndex(tmp_path) as index:
        assert sorted(index.items()) == sorted(entries)


def test_removals_replay_in_order(tmp_path: Path) -> None:
    with DiskIndex(tmp_path) as index:
        index.add(1, "a")
        index.add(1, "b")
        index.add(2, "c")
        assert index.remove(1, "a") == 1
        assert index.remove(2) == 1
        index.add(2, "d")  # added after the removal: must survive it
    with DiskIndex(tmp_path) as index:
        assert sorted(index.items()) == [(1, "b"), (2, "d")]


def test_namespaces_are_kept_apart(tmp_path: Path) -> None:
    with DiskIndex(tmp_path, namespace="books") as books, DiskIndex(tmp_path, namespace="news") as news:
        books.add(10, "b")
        news.add(10, "n")
        assert books.query(10)[0].key == "b"
    with DiskIndex(tmp_path, namespace="news") as news:
        assert list(news.items()) == [(10, "n")]
        assert news.describe()["namespaces"] == ["", "books", "news"]


def test_reset_empties_only_its_namespace(tmp_path: Path) -> None:
    filled(tmp_path, 20, namespace="a")
    filled(tmp_path, 30, namespace="b")
    with DiskIndex(tmp_path, namespace="a", reset=True) as index:
        assert len(index) == 0
        index.add(5, "after-reset")
    with DiskIndex(tmp_path, namespace="a") as a, DiskIndex(tmp_path, namespace="b") as b:
        assert list(a.items()) == [(5, "after-reset")]
        assert len(b) == 30


def test_signature_mismatch_is_an_error(tmp_path: Path) -> None:
    filled(tmp_path, 5, signature="simhash-v1;shingle_size=3")
    with pytest.raises(IndexFormatError, match="made otherwise.*shingle_size 3.*SIMHASH_INDEX_RESET"):
        DiskIndex(tmp_path, signature="simhash-v1;shingle_size=4")
    with DiskIndex(tmp_path, signature="simhash-v1;shingle_size=4", reset=True) as index:
        assert len(index) == 0


def _overwrite(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as file:
        file.seek(offset)
        file.write(data)


def _foreign(path: Path) -> None:
    (path / LOG).write_bytes(b"<html>not an index</html>" * 300)


def _other_version(path: Path) -> None:
    _overwrite(path / LOG, len(lf.MAGIC), struct.pack("<I", lf.FORMAT_VERSION + 1))


def _corrupt_sketch(path: Path) -> None:
    # the check value covers the sketch words too
    _overwrite(path / LOG, lf.HEADER_SIZE + 3 * lf.RECORD.itemsize + lf.RECORD.fields["sketch"][1] + 5, b"\x80")


def _truncated_header(path: Path) -> None:
    os.truncate(path / LOG, 100)


def _corrupt_record(path: Path) -> None:
    _overwrite(path / LOG, lf.HEADER_SIZE + 3 * lf.RECORD.itemsize + 1, b"\xff\xfe")


def _cut_keys_inside(path: Path) -> None:
    # A damaged key file: in the part synced to disk, a record whose key is not there,
    # followed by records with theirs.
    keys_size = os.path.getsize(path / "keys.log")
    _overwrite(path / LOG, lf.HEADER_SIZE + 3 * lf.RECORD.itemsize, lf.pack_record(123, keys_size - 2, b"8 bytes.", 0, lf.OP_ADD))


def test_a_key_file_that_lost_its_tail_loses_only_the_entries_of_that_tail(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A power cut before the disk had the key file's tail, or a full disk: the records
    whose keys are gone are the last ones; the store opens without them, and goes on."""
    filled(tmp_path, 10)
    with DiskIndex(tmp_path) as index:
        before = list(index.items())
    os.truncate(tmp_path / "keys.log", os.path.getsize(tmp_path / "keys.log") - 10)  # the last key, cut
    with DiskIndex(tmp_path, read_only=True) as reader:  # a reader changes nothing
        assert sorted(reader.items()) == sorted(before[:-1])
    with caplog.at_level(logging.WARNING), DiskIndex(tmp_path) as index:
        assert sorted(index.items()) == sorted(before[:-1])
        index.add(0xABC, "after the cut")
    assert "keys.log lost with its tail" in caplog.text
    with DiskIndex(tmp_path) as index:
        assert sorted(index.items()) == sorted([*before[:-1], (0xABC, "after the cut")])


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_foreign, "not a scrapy-simhash index"),
        (_other_version, f"format version {lf.FORMAT_VERSION + 1}"),
        (_truncated_header, "truncated or corrupt header"),
        (_corrupt_record, "corrupt record #3"),
        (_corrupt_sketch, "corrupt record #3"),
        (_cut_keys_inside, r"keys.log is damaged: it ends \(\d+ bytes\) before the key of record #3"),
    ],
)
def test_unreadable_store_raises_a_clear_error(tmp_path: Path, damage, message: str) -> None:
    filled(tmp_path, 10)
    damage(tmp_path)
    files = {name: (tmp_path / name).read_bytes() for name in (LOG, "keys.log")}
    for read_only in (True, False):
        with pytest.raises(IndexFormatError, match=message) as caught:
            DiskIndex(tmp_path, read_only=read_only)
        assert str(tmp_path) in str(caught.value) and "SIMHASH_INDEX_RESET=True" in str(caught.value)
    assert files == {name: (tmp_path / name).read_bytes() for name in files}  # nothing lost by looking
    with DiskIndex(tmp_path, reset=True) as index:  # reset replaces what cannot be read
        assert len(index) == 0


def test_a_file_where_the_directory_should_be_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "index").write_text("hello")
    with pytest.raises(IndexFormatError, match="not an index directory"):
        DiskIndex(tmp_path / "index")


def test_a_damaged_key_byte_reads_as_a_replacement_character(tmp_path: Path) -> None:
    with DiskIndex(tmp_path, namespace="n") as index:
        index.add(7, "https://a.example/é")
    keys = (tmp_path / "keys.log").read_bytes()
    _overwrite(tmp_path / "keys.log", keys.rindex("é".encode()), b"\xff")
    with DiskIndex(tmp_path, namespace="n") as index:
        assert index.query(7)[0].key.startswith("https://a.example/\ufffd")


@pytest.mark.parametrize(
    "tail", [b"\x01" * 13, b"\0" * lf.RECORD.itemsize, b"\0" * (2 * lf.RECORD.itemsize + 7), b"\xff" * 40]
)
def test_truncated_or_zeroed_tail_is_dropped_and_reported(tmp_path: Path, tail: bytes) -> None:
    entries = filled(tmp_path, 10)
    with open(tmp_path / LOG, "ab") as file:
        file.write(tail)
    with DiskIndex(tmp_path) as index:
        assert index.describe()["truncated_tail_bytes"] == len(tail)
        assert sorted(index.items()) == sorted(entries)
        index.add(99, "after")  # appends stay aligned after the cut
    with DiskIndex(tmp_path) as index:
        assert index.describe()["truncated_tail_bytes"] == 0
        assert sorted(index.items()) == sorted([*entries, (99, "after")])


def test_durable_mode_writes_through(tmp_path: Path) -> None:
    with DiskIndex(tmp_path, durable=True) as index:
        index.add(3, "x")
        index.flush()
    with DiskIndex(tmp_path) as index:
        assert list(index.items()) == [(3, "x")]


# Sketches near one of two random bases: a few flipped bits keep two of them within
# max_sketch_distance of each other, many put them beyond it.
SKETCH_BASES = [random.Random(seed).randbytes(32) for seed in range(2)]


def varied_sketch(base: int, flips: list[int]) -> bytes:
    value = int.from_bytes(SKETCH_BASES[base], "little")
    for bit in flips:
        value ^= 1 << bit
    return value.to_bytes(32, "little")


close_flips = st.lists(st.integers(0, 255), max_size=12)
far_flips = st.lists(st.integers(0, 255), min_size=40, max_size=120)
sketches = st.none() | st.builds(varied_sketch, st.integers(0, 1), close_flips | far_flips)


@settings(max_examples=100, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["add_if_new", "add", "add_entries", "query", "remove", "reopen"]),
            st.integers(0, 7),  # few bits and bases: many fingerprints within k of others
            st.integers(0, 3),
            sketches,
        ),
        max_size=60,
    )
)
def test_matches_brute_force_across_reopens(tmp_path_factory: pytest.TempPathFactory, ops) -> None:
    path = tmp_path_factory.mktemp("store")
    bases = [0, 0xFFFF_0000_FFFF_0000, 0x0123_4567_89AB_CDEF, 0xF0F0_F0F0_F0F0_F0F0]
    similarity = 0.8  # not the default: reopening must pass it on too
    reference, index = BruteForceIndex(3, min_similarity=similarity), DiskIndex(path, min_similarity=similarity)
    for step, (op, bit, base, sketch) in enumerate(ops):
        fingerprint = bases[base] ^ (1 << bit) ^ (1 << (bit * 3 % 64))
        key = f"k{step}"
        if op == "reopen":
            index.close()
            index = DiskIndex(path, min_similarity=similarity)
        elif op == "remove":
            assert index.remove(fingerprint) == reference.remove(fingerprint)
        elif op == "add_entries":
            batch = [(fingerprint, key, sketch), (fingerprint ^ 1 << 63, key + "b", None)]
            index.add_entries(batch)
            reference.add_entries(batch)
        elif op != "query":
            assert getattr(index, op)(fingerprint, key, sketch=sketch) == getattr(reference, op)(
                fingerprint, key, sketch=sketch
            )
        assert index.query(fingerprint, sketch=sketch) == reference.query(fingerprint, sketch=sketch)
        assert index.query(fingerprint) == reference.query(fingerprint)
    index.close()
    with DiskIndex(path) as reopened:
        assert sorted(reopened.entries()) == sorted(reference.entries())


def test_one_process_at_a_time(tmp_path: Path) -> None:
    opener = "import sys\nfrom scrapy_simhash.index import DiskIndex\nDiskIndex(sys.argv[1])"
    with DiskIndex(tmp_path):
        held = subprocess.run([sys.executable, "-c", opener, str(tmp_path)], capture_output=True, text=True)
    assert held.returncode != 0 and "in use by another process" in held.stderr
    free = subprocess.run([sys.executable, "-c", opener, str(tmp_path)], capture_output=True, text=True)
    assert free.returncode == 0, free.stderr


def test_read_only_reads_a_store_in_use_and_writes_nothing(tmp_path: Path) -> None:
    entries = filled(tmp_path, 10)
    with DiskIndex(tmp_path) as writer:  # holds the lock, as a running crawl does
        writer.add(1234, "while-open")
        with DiskIndex(tmp_path, read_only=True) as reader:
            assert sorted(reader.items()) == sorted([*entries, (1234, "while-open")])
            with pytest.raises(SimhashIndexError, match="read-only"):
                reader.add(99, "refused")
            assert len(reader) == len(entries) + 1
            with pytest.raises(SimhashIndexError, match="no namespace 'other'"):
                DiskIndex(tmp_path, namespace="other", read_only=True)


def test_read_only_never_creates_a_store(tmp_path: Path) -> None:
    with pytest.raises(IndexFormatError, match="holds no scrapy-simhash index"):
        DiskIndex(tmp_path, read_only=True)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("fsync_seconds", "expected"), [(None, 0), (0.0, 2 * 5), (3600.0, 0)])
def test_fsync_seconds_says_how_often_the_files_reach_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsync_seconds: float | None, expected: int
) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    with DiskIndex(tmp_path, fsync_seconds=fsync_seconds) as index:
        synced.clear()  # (creating the files syncs them)
        for n in range(5):
            index.add(n << 20, f"k{n}")
        assert len(synced) == expected  # keys then log, each time it is due
        synced.clear()
        index.flush()  # what the crawl does when it closes
        assert len(synced) == 2 + 2  # keys, log, then the checkpoint file and its directory


def test_fsync_seconds_syncs_the_first_write_after_the_interval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    with DiskIndex(tmp_path, fsync_seconds=60.0) as index:
        synced.clear()  # (creating the files syncs them)
        index.add(1, "a")
        assert synced == []
        store = index._store
        store._synced_at -= 61  # a minute later
        store._checkpointed_at -= 61
        index.add(2, "b")
        assert len(synced) == 2 + 2  # keys, log, the checkpoint and its directory
        index.add(3, "c")
        assert len(synced) == 2 + 2


def test_namespaces_opened_one_by_one_get_their_entries_from_the_read_at_open(tmp_path: Path) -> None:
    """A crawl with SIMHASH_SCOPE="domain" opens a namespace per host, and writes between."""
    for host in range(5):
        with DiskIndex(tmp_path, namespace=f"host{host}") as index:
            index.add_many((host * 1000 + n, f"https://host{host}/{n}") for n in range(20))
    first = DiskIndex(tmp_path, namespace="host0")
    first.add(99_999, "https://host0/new")  # a write before the other hosts open
    cleared = DiskIndex(tmp_path, namespace="host1", reset=True)
    others = [DiskIndex(tmp_path, namespace=f"host{host}") for host in range(2, 5)]
    again = DiskIndex(tmp_path, namespace="host0")  # opened twice: sees the first one's write
    try:
        assert len(first) == len(again) == 21 and (99_999, "https://host0/new") in set(again.items())
        assert len(cleared) == 0
        for host, index in zip(range(2, 5), others):
            assert sorted(index.items()) == [(host * 1000 + n, f"https://host{host}/{n}") for n in range(20)]
    finally:
        for index in [first, cleared, *others, again]:
            index.close()


def test_namespaces_opened_in_threads_while_another_writes_lose_nothing(tmp_path: Path) -> None:
    """The Scrapy glue opens a host's namespace in a worker thread while the reactor thread
    writes to another namespace of the same store: the store's lock keeps the files whole."""
    import threading

    writer = DiskIndex(tmp_path, namespace="busy")
    opened: list[DiskIndex] = []

    def open_hosts(first: int) -> None:
        for host in range(first, first + 10):
            index = DiskIndex(tmp_path, namespace=f"host{host}")
            index.add(host, f"https://host{host}/")
            opened.append(index)

    threads = [threading.Thread(target=open_hosts, args=(first,)) for first in (0, 10, 20)]
    for thread in threads:
        thread.start()
    for n in range(300):
        writer.add(10_000 + n, f"https://busy/{n}")
    for thread in threads:
        thread.join()
    for index in [writer, *opened]:
        index.close()
    with DiskIndex(tmp_path, namespace="busy") as busy:
        assert len(busy) == 300
    for host in range(30):
        with DiskIndex(tmp_path, namespace=f"host{host}") as index:
            assert list(index.items()) == [(host, f"https://host{host}/")]


def test_stored_signature_reads_the_header_only(tmp_path: Path) -> None:
    from scrapy_simhash.index import stored_signature

    assert stored_signature(tmp_path / "nothing") == stored_signature(None) == stored_signature("memory") == ""
    DiskIndex(tmp_path / "store", signature="simhash-v5;shingle_size=3").close()
    assert stored_signature(tmp_path / "store") == "simhash-v5;shingle_size=3"


def test_keys_read_in_a_thread_give_the_same_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("scrapy_simhash.index._diskstore._KEYS_IN_A_THREAD", 10)
    entries = filled(tmp_path, 300)
    with DiskIndex(tmp_path) as index:
        assert sorted(index.items()) == sorted(entries)
        assert index.fingerprints_of(entries[5][1]) == [entries[5][0]]


@pytest.mark.parametrize(("offset", "wanted"), [(0, 100), (5, 40), (90, 30), (100, 8), (3, 0)])
def test_read_into_reads_in_parts_up_to_the_end_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offset: int, wanted: int
) -> None:
    monkeypatch.setattr(_files, "READ_CHUNK", 7)  # many parts, the last one short
    data = bytes(range(100))
    (tmp_path / "f").write_bytes(data)
    target = bytearray(wanted)
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        read = _files.read_into(fd, memoryview(target), offset)
    finally:
        os.close(fd)
    assert read == len(data[offset : offset + wanted])
    assert bytes(target[:read]) == data[offset : offset + wanted]


@pytest.mark.parametrize("size", [10, 5000])  # (the memory index adds a few one by one, many in bulk)
@pytest.mark.parametrize("bad", [(2**64, "https://example.com/bad"), (7, b"https://example.com/bytes")])
def test_add_many_with_a_bad_item_stores_none_in_memory_or_on_disk(tmp_path: Path, size: int, bad: tuple) -> None:
    items = [(n * 0x9E3779B97F4A7C15 % 2**64, f"https://example.com/{n}") for n in range(size)]
    items.insert(size // 2, bad)
    with MemoryIndex() as memory, DiskIndex(tmp_path) as disk:
        for index in (memory, disk):
            with pytest.raises((ValueError, TypeError)):
                index.add_many(items)
            assert len(index) == 0
    with DiskIndex(tmp_path) as disk:
        assert len(disk) == 0


def test_a_closed_index_says_so_when_written_to(tmp_path: Path) -> None:
    index = DiskIndex(tmp_path)
    index.add(1, "a")
    index.close()
    for write in (lambda: index.add(2, "b"), lambda: index.add_many([(3, "c")]), lambda: index.remove(1),
                  index.flush, index.describe):
        with pytest.raises(SimhashIndexError, match="is closed"):
            write()
    index.close()  # (twice: nothing more)
