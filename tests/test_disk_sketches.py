"""The on-disk store keeps each entry's minwise sketch: record format 2, reopen, confirmation."""

from __future__ import annotations

import json
import os
import random
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from scrapy_simhash.cli import main
from scrapy_simhash.core.sketch import EXACT_SHINGLES, Confirmation, estimated_similarity, page_sketch
from scrapy_simhash.index import DiskIndex, IndexFormatError, Match, open_index
from scrapy_simhash.index.disk import compact_store
from scrapy_simhash.index import _logfile as lf

LOG, KEYS = "fingerprints.log", "keys.log"
BASE = 0xF0F0_1234_5678_9ABC


def random_sketch(rng: random.Random) -> bytes:
    return rng.randbytes(32)


def flipped(sketch: bytes, count: int, seed: int = 0) -> bytes:
    """*sketch* with *count* of its 256 bits flipped (distinct bits: exactly *count* apart)."""
    value = int.from_bytes(sketch, "little")
    for bit in random.Random(seed).sample(range(256), count):
        value ^= 1 << bit
    return value.to_bytes(32, "little")


def short_page_sketch(rng: random.Random) -> bytes:
    """A short page's sketch: 32 bytes, then its sorted distinct 16-bit shingles."""
    shingles = sorted(rng.sample(range(1 << 16), rng.randint(1, EXACT_SHINGLES)))
    return random_sketch(rng) + np.array(shingles, dtype="<u2").tobytes()


def mixed_entries(count: int, seed: int = 0) -> list[tuple[int, str, bytes | None]]:
    """Random entries: without a sketch, with a long page's, with a short page's."""
    rng = random.Random(seed)
    makers = (lambda: None, lambda: random_sketch(rng), lambda: short_page_sketch(rng))
    return [(rng.getrandbits(64), f"https://example.com/{seed}/{i}", makers[i % 3]()) for i in range(count)]


def test_sketches_survive_reopen_from_every_write_path(tmp_path: Path) -> None:
    one_by_one, small_batch, bulk = mixed_entries(30, 1), mixed_entries(50, 2), mixed_entries(5000, 3)
    with DiskIndex(tmp_path) as index:
        for number, (fingerprint, key, sketch) in enumerate(one_by_one):
            if number % 2:
                index.add(fingerprint, key, sketch)
            else:
                assert index.add_if_new(fingerprint, key, sketch=sketch) is None
        index.add_entries(small_batch)
        index.add_entries(bulk)  # past the memory index's bulk threshold: the NumPy path
    expected = sorted(one_by_one + small_batch + bulk, key=lambda entry: entry[1])
    for read_only in (False, True):
        with DiskIndex(tmp_path, read_only=read_only) as index:
            assert sorted(index.entries(), key=lambda entry: entry[1]) == expected


def test_short_pages_shingles_survive_removal_compaction_and_confirm_exactly(tmp_path: Path) -> None:
    shingles = np.arange(1, 101, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    stored_sketch = page_sketch(shingles)
    close, far = page_sketch(shingles[:84]), page_sketch(shingles[:79])  # J = 0.84 and 0.79, exactly
    with DiskIndex(tmp_path) as index:
        index.add(BASE, "short", stored_sketch)
        index.add_entries(mixed_entries(300, 4))
        index.remove_key("https://example.com/4/2")  # a short page's record, removed by its key
    compact_store(tmp_path)
    with DiskIndex(tmp_path) as index:
        assert len(index) == 300
        assert dict((key, sketch) for _, key, sketch in index.entries())["short"] == stored_sketch
        assert index.query(BASE, sketch=close) == [Match("short", BASE, 0, 0.84)]
        assert index.query(BASE, sketch=far) == []
        assert index.remove_key("https://example.com/4/5") == 1
    with DiskIndex(tmp_path, read_only=True) as index:
        assert len(index) == 299


def test_sketches_confirm_matches_after_reopen(tmp_path: Path) -> None:
    sketch = random_sketch(random.Random(5))
    with DiskIndex(tmp_path) as index:
        index.add(BASE, "stored", sketch)
    near = BASE ^ 0b11
    with DiskIndex(tmp_path) as index:
        limit = index.max_sketch_distance
        close, far = flipped(sketch, limit), flipped(sketch, limit + 1, seed=1)  # (far from close too)
        assert index.query(near, sketch=far) == []
        assert index.query(near, sketch=close) == [Match("stored", BASE, 2, estimated_similarity(limit))]
        assert index.query(near) == [Match("stored", BASE, 2)]  # no sketch: the fingerprint decides
        assert index.add_if_new(near, "unconfirmed", sketch=far) is None  # not a duplicate: stored
        assert index.add_if_new(near, "copy", sketch=close) == Match("stored", BASE, 2, estimated_similarity(limit))
    with DiskIndex(tmp_path) as index:
        assert [m.key for m in index.query(near)] == ["unconfirmed", "stored"]  # nearest first
        assert [m.key for m in index.query(near, sketch=far)] == ["unconfirmed"]


def test_min_similarity_reaches_the_disk_and_memory_indexes(tmp_path: Path) -> None:
    sketch = random_sketch(random.Random(6))
    between = flipped(sketch, Confirmation(0.8).max_distance)  # confirmed at 0.8, not at 0.9
    with open_index(tmp_path, min_similarity=0.8) as index:
        index.add(BASE, "stored", sketch)
        assert [m.key for m in index.query(BASE, sketch=between)] == ["stored"]
    with open_index(tmp_path, min_similarity=0.9) as index:
        assert index.max_sketch_distance == Confirmation(0.9).max_distance
        assert index.query(BASE, sketch=between) == []
        assert index.describe()["min_similarity"] == 0.9
    memory = open_index("memory", min_similarity=0.9)
    assert memory.max_sketch_distance == Confirmation(0.9).max_distance


def _format_1_check(fingerprint: int, key_offset: int, word: int) -> int:
    """The check value format 1 wrote (three words mixed)."""
    mask, h = (1 << 64) - 1, fingerprint ^ 0x9E3779B97F4A7C15
    for value, multiplier in ((0, 0xBF58476D1CE4E5B9), (key_offset, 0x94D049BB133111EB), (word, 0xBF58476D1CE4E5B9)):
        h = ((h ^ value) * multiplier) & mask
    return h ^ (h >> 31)


def make_format_1_store(path: Path) -> None:
    """A store as format 1 wrote it: one 32-byte record, no sketch."""
    path.mkdir(exist_ok=True)
    payload = json.dumps({"signature": "", "record_bytes": 32}).encode()
    header = struct.pack("<8sIII", lf.MAGIC, 1, len(payload), zlib.crc32(payload)) + payload
    key = b"https://example.com/old"
    word = len(key) | lf.OP_ADD << 48
    record = struct.pack("<QQQQ", BASE, lf.KEYS_HEADER_SIZE, word, _format_1_check(BASE, lf.KEYS_HEADER_SIZE, word))
    (path / LOG).write_bytes(header.ljust(lf.HEADER_SIZE, b"\0") + record)
    (path / KEYS).write_bytes(struct.pack("<8sII", lf.KEYS_MAGIC, 1, 0) + key)


def test_a_format_1_store_is_refused_with_the_way_out(tmp_path: Path) -> None:
    make_format_1_store(tmp_path)
    files = {name: (tmp_path / name).read_bytes() for name in (LOG, KEYS)}
    for read_only in (True, False):
        with pytest.raises(IndexFormatError, match="format version 1") as caught:
            DiskIndex(tmp_path, read_only=read_only)
        message = str(caught.value)
        assert all(way in message for way in ("SIMHASH_INDEX_RESET=True", "--reset", "delete the directory"))
    assert files == {name: (tmp_path / name).read_bytes() for name in files}  # nothing changed by looking
    with DiskIndex(tmp_path, reset=True) as index:
        assert len(index) == 0
        index.add(BASE, "new", random_sketch(random.Random(7)))
    assert lf.read_header(str(tmp_path / LOG))["record_bytes"] == lf.RECORD.itemsize == 64


def test_the_cli_refuses_a_format_1_store_and_import_reset_replaces_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    make_format_1_store(store)
    assert main(["inspect", str(store)]) == 1
    assert "format version 1" in capsys.readouterr().err
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"fingerprint": f"{BASE:016x}", "key": "a", "sketch": "ab" * 32}) + "\n")
    assert main(["import", str(source), str(store), "--reset"]) == 0
    with DiskIndex(store) as index:
        assert list(index.entries()) == [(BASE, "a", bytes.fromhex("ab" * 32))]


@pytest.mark.parametrize("word", range(lf.RECORD.itemsize // 8))
@pytest.mark.parametrize("where", ["middle", "last"])
def test_a_flipped_bit_in_any_word_of_a_record_is_detected(tmp_path: Path, word: int, where: str) -> None:
    entries = mixed_entries(10, 4)
    with DiskIndex(tmp_path) as index:
        index.add_entries(entries)
    record = 3 if where == "middle" else len(entries) - 1
    offset = lf.HEADER_SIZE + record * lf.RECORD.itemsize + word * 8 + 3
    with open(tmp_path / LOG, "r+b") as file:
        file.seek(offset)
        byte = file.read(1)[0]
        file.seek(offset)
        file.write(bytes([byte ^ 0x10]))
    if where == "middle":  # followed by valid records: corruption, not a crash
        with pytest.raises(IndexFormatError, match="corrupt record #3"):
            DiskIndex(tmp_path)
        return
    with DiskIndex(tmp_path) as index:  # the last record: a torn write, dropped
        assert index.describe()["truncated_tail_bytes"] == lf.RECORD.itemsize
        assert sorted(index.entries(), key=lambda e: e[1]) == sorted(entries[:-1], key=lambda e: e[1])


def test_a_record_is_one_write_after_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sketch = random_sketch(random.Random(8))
    writes: list[bytes] = []
    real_write = os.write

    def spy(fd: int, data: bytes) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    with DiskIndex(tmp_path) as index:
        monkeypatch.setattr(os, "write", spy)
        index.add(BASE, "https://example.com/k", sketch)
        index.add_entries([(1, "a", sketch), (2, "bc", None)])
        monkeypatch.undo()
    key, record, keys, records = writes
    assert key == b"https://example.com/k" and keys == b"abc"
    stored = np.frombuffer(record, dtype=lf.RECORD)
    assert len(record) == lf.RECORD.itemsize and int(stored["fingerprint"][0]) == BASE
    assert stored["sketch"][0].tobytes() == sketch
    assert stored["check"][0] == lf.check_values(stored)[0]
    bulk = np.frombuffer(records, dtype=lf.RECORD)
    assert bulk["sketch"][0].tobytes() == sketch and not bulk["sketch"][1].any()  # zeros: no sketch


def test_a_bad_sketch_writes_nothing(tmp_path: Path) -> None:
    with DiskIndex(tmp_path) as index:
        size = os.path.getsize(tmp_path / LOG), os.path.getsize(tmp_path / KEYS)
        with pytest.raises(ValueError, match="32 bytes"):
            index.add(BASE, "short", b"\x01" * 31)
        with pytest.raises(TypeError):
            index.add_entries([(BASE, "ok", None), (BASE, "text", "not bytes")])  # type: ignore[list-item]
        assert (os.path.getsize(tmp_path / LOG), os.path.getsize(tmp_path / KEYS)) == size
        assert len(index) == 0
