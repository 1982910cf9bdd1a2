"""Finding records by key (:mod:`scrapy_simhash.index._key_lookup`), against a plain scan."""

from __future__ import annotations

import logging
import random
from typing import Any

import numpy as np
import pytest

from scrapy_simhash.index import _merge
from scrapy_simhash.index import _key_crcs
from scrapy_simhash.index._key_crcs import crcs_of_keys, key_crc, python_crcs_of_keys
from scrapy_simhash.index._crc_table import CrcTable
from scrapy_simhash.index._key_lookup import KeyLookup
from scrapy_simhash.index._storage import KeyStore
from scrapy_simhash.index.brute import BruteForceIndex
from scrapy_simhash.index.memory import MemoryIndex


@pytest.mark.parametrize("start", [0, 1, 3, 5, 6])
@pytest.mark.parametrize("crcs_of", [crcs_of_keys, python_crcs_of_keys], ids=["c-if-built", "python"])
def test_crcs_of_keys_in_one_pass_are_each_keys_crc(start: int, crcs_of: Any) -> None:
    keys = KeyStore.from_keys(["https://a.example/x", "", "ü/é?q=1#f", "https://a.example/x", "中文/页面", "z"])
    expected = [key_crc(keys.encoded(row)) for row in range(start, len(keys))]
    assert crcs_of(keys.buffer, keys.ends, start).tolist() == expected
    keys.extend(["after a view was held"])  # the buffer still grows: no view outlives the call
    assert crcs_of(keys.buffer, keys.ends, 6).tolist() == [key_crc(b"after a view was held")]


@pytest.mark.skipif(_key_crcs._scan is None, reason="the index's C code was not built")
def test_the_c_key_crcs_are_zlibs() -> None:
    rng = np.random.default_rng(5)
    for size in (0, 1, 100, 5000):
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        ends = np.sort(rng.integers(0, size + 1, 300, dtype=np.uint64))
        for start in (0, 1, 299, 300):
            assert crcs_of_keys(data, ends, start).tolist() == python_crcs_of_keys(data, ends, start).tolist()
    with pytest.raises(ValueError, match="ends"):
        crcs_of_keys(b"abc", np.array([2, 1], dtype=np.uint64))
    with pytest.raises(ValueError, match="ends"):
        crcs_of_keys(b"abc", np.array([4], dtype=np.uint64))


def test_the_c_key_crcs_switch_off_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """SIMHASH_C_PROBE=0 (the switch of the index's C code) or a mismatch: zlib runs."""
    monkeypatch.setenv("SIMHASH_C_PROBE", "0")
    assert _key_crcs.c_crcs_mismatch() == "SIMHASH_C_PROBE=0"
    monkeypatch.delenv("SIMHASH_C_PROBE")

    class Wrong:
        @staticmethod
        def key_crcs(data: bytes, ends: Any, start: int) -> bytes:
            return bytes(4 * (len(ends) - start))

    monkeypatch.setattr(_key_crcs, "_scan", Wrong)
    assert _key_crcs.c_crcs_mismatch() == "they differ from zlib's on a sample"
    with caplog.at_level(logging.WARNING, logger="scrapy_simhash"):
        _key_crcs.check_c_crcs()  # as at import
    assert _key_crcs._scan is None and "in Python, not in C" in caplog.text
    keys = KeyStore.from_keys(["a", "b"])
    assert crcs_of_keys(keys.buffer, keys.ends).tolist() == [key_crc(b"a"), key_crc(b"b")]


def test_crc_table_finds_every_row_across_merges_and_cuts() -> None:
    rng = random.Random(3)
    crcs = [rng.randrange(2000) for _ in range(20_000)]  # many rows a CRC, past several merges
    table = CrcTable()
    table.extend(crcs[:777])
    table.extend(crcs[777:6000])  # in bulk, as a mirror reading the log
    for start in range(6000, len(crcs), 777):
        table.extend(crcs[start : start + 777])
    for crc in (0, 5, 1999, 2000):
        assert table.rows_with(crc) == [row for row, value in enumerate(crcs) if value == crc]
    cut = table.without_rows_before(12_345)
    assert cut.rows == len(crcs) - 12_345
    cut.extend([5, 5])
    expected = [row - 12_345 for row, value in enumerate(crcs) if value == 5 and row >= 12_345]
    assert cut.rows_with(5) == [*expected, cut.rows - 2, cut.rows - 1]


def test_crc_table_answers_while_a_merge_is_under_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_merge, "STEP_ENTRIES", 64)  # a merge takes ~100 rows added
    rng = random.Random(4)
    crcs = [rng.randrange(500) for _ in range(12_000)]
    table, under_way = CrcTable(), 0
    for row, crc in enumerate(crcs):
        table.extend([crc])
        under_way += table._merging is not None
        if row % 97 == 0:
            probe = crcs[rng.randrange(row + 1)]
            assert table.rows_with(probe) == [r for r, value in enumerate(crcs[: row + 1]) if value == probe]
    assert under_way > 100


def test_key_lookup_compares_the_keys_of_rows_whose_crc_matches() -> None:
    keys = KeyStore.from_keys(f"https://site.example/{n % 3000}" for n in range(9000))
    lookup = KeyLookup()
    assert lookup.rows_of("https://site.example/7", keys) == [7, 3007, 6007]
    keys.append("https://site.example/7")
    assert lookup.rows_of("https://site.example/7", keys) == [7, 3007, 6007, 9000]
    assert lookup.rows_of("https://elsewhere.example/", keys) == []


def test_memory_index_replaces_as_brute_force_through_merges_and_compaction() -> None:
    """Thousands of re-fetches, small buffers: the lookup survives merges and renumbering."""
    rng = random.Random(7)
    index, reference = MemoryIndex(3, expected_size=1000), BruteForceIndex(3)
    index.buffer_limit = 256
    for _ in range(4000):
        fingerprint, key = rng.getrandbits(64), f"page{rng.randrange(1000)}"
        assert index.replace_if_new(fingerprint, key) == reference.replace_if_new(fingerprint, key)
    assert index.memory_usage()["key_bytes"] > 0 and index.describe()["removed_pending"] < 1000  # compacted
    assert len(index) == len(reference) == len({key for _, key in reference.items()})
    assert sorted(index.items()) == sorted(reference.items())


def test_a_compaction_renumbers_the_key_lookup_instead_of_dropping_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Removed rows dropped for good (a compaction) leave a built key lookup right, without
    computing any key's CRC again."""
    from scrapy_simhash.index import _key_lookup as module

    rng = random.Random(12)
    entries = [(rng.getrandbits(64), f"https://example.com/{n % 15_000}") for n in range(20_000)]  # some keys twice
    index = MemoryIndex.from_arrays([f for f, _ in entries], [k for _, k in entries])
    index.prepare_key_lookups()
    monkeypatch.setattr(module, "crcs_of_keys", lambda *args: pytest.fail("a key's CRC computed again"))
    removed = {f"https://example.com/{n}" for n in range(0, 15_000, 2)}
    for key in removed:
        index.remove_key(key)
    assert len(index._hints) < len(entries) - 5000  # rows dropped for good (past 1/4 of them)
    expected: dict[str, list[int]] = {}
    for fingerprint, key in entries:
        if key not in removed:
            expected.setdefault(key, []).append(fingerprint)
    checked = list(expected)[::7] + sorted(removed)[:50]
    assert [index.fingerprints_of(key) for key in checked] == [expected.get(key, []) for key in checked]


def test_a_key_fetched_again_and_again_is_found_as_brute_force_finds_it() -> None:
    """A few hot keys replaced thousands of times among others (their live rows remembered,
    ``REMEMBERED_FROM``), with keys that share their CRC, removals, merges and
    compactions: every lookup as a plain scan's."""
    rng = random.Random(21)
    index, reference = MemoryIndex(3, expected_size=1000), BruteForceIndex(3)
    index.buffer_limit = 256
    hot = ["https://shop.example/List.aspx?cat=1", "https://shop.example/List.aspx?cat=2"]
    remembered = 0
    for step in range(6000):
        fingerprint = rng.getrandbits(64)
        key = rng.choice(hot) if rng.random() < 0.3 else f"page{rng.randrange(2000)}"
        if step % 97 == 0:
            assert index.remove_key(key) == reference.remove_key(key)
        elif step % 13 == 0:  # a second record of one key, beside its first (add, not replace)
            index.add(fingerprint, key)
            reference.add(fingerprint, key)
        else:
            assert index.replace_if_new(fingerprint, key) == reference.replace_if_new(fingerprint, key)
        if step % 50 == 0:
            checked = [*hot, f"page{rng.randrange(2000)}"]
            assert [index.fingerprints_of(k) for k in checked] == [reference.fingerprints_of(k) for k in checked]
            remembered = max(remembered, len(index._key_lookup._remembered))
    assert index.describe()["removed_pending"] < 6000 * 0.3  # compacted on the way
    assert remembered >= len(hot)  # (the hot keys' rows were remembered, until a compaction)
    assert sorted(index.items()) == sorted(reference.items())


def test_remembered_rows_of_a_crc_keep_every_key_that_shares_it() -> None:
    """Two keys of one CRC: each lookup compares the keys of the remembered rows."""
    keys = KeyStore()
    lookup = KeyLookup()
    first, second = _two_keys_of_one_crc()
    for n in range(100):
        keys.append(first if n % 3 else second)
        assert lookup.rows_of(first, keys) == [row for row in range(n + 1) if row % 3]
        assert lookup.rows_of(second, keys) == [row for row in range(n + 1) if not row % 3]
    assert lookup.rows_of(first, keys, live=lambda row: row > 50) == [row for row in range(51, 100) if row % 3]


def _two_keys_of_one_crc() -> tuple[str, str]:
    """Two keys whose CRCs collide (a birthday search over short keys)."""
    seen: dict[int, str] = {}
    rng = random.Random(3)
    for _ in range(1 << 20):  # (~128 collisions expected among 2**20 random keys of 32 bits)
        key = f"https://example.com/{rng.getrandbits(64):016x}"
        crc = key_crc(key.encode())
        if crc in seen:
            return seen[crc], key
        seen[crc] = key
    raise AssertionError("no collision found")
