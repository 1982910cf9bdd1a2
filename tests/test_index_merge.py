"""No insert into the in-memory index does O(n) work: the write buffer is merged a step per
insert (``index/_merge.py``), and a column moves to its larger copy a slice per append."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probe_kernels import KERNELS, using_kernel
from scrapy_simhash.index import _merge, _pages, _release
from scrapy_simhash.index._buckets import SortedBuckets
from scrapy_simhash.index._design_choice import design_for_size
from scrapy_simhash.index._pages import HUGE_PAGE, PageToucher, advises_pages
from scrapy_simhash.index._growable import GrowableArray
from scrapy_simhash.index._storage import KeyStore
from scrapy_simhash.index._tables import make_design
from scrapy_simhash.index.brute import BruteForceIndex
from scrapy_simhash.index.memory import MemoryIndex


@pytest.fixture
def small_steps(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Steps of a few entries: a merge stays under way across many inserts."""
    monkeypatch.setattr(_merge, "STEP_ENTRIES", 16)
    yield


def around(rng: random.Random, bases: list[int], flips: int) -> int:
    fingerprint = rng.choice(bases)
    for _ in range(rng.randint(0, flips)):
        fingerprint ^= 1 << rng.randrange(64)
    return fingerprint


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), buffer_limit=st.integers(2, 40), wildcard_bits=st.sampled_from([0, 6, 14]))
def test_checks_during_a_merge_find_what_brute_force_finds(
    small_steps: None, kernel: str, seed: int, buffer_limit: int, wildcard_bits: int
) -> None:
    rng = random.Random(seed)
    bases = [rng.getrandbits(64) for _ in range(6)]
    with using_kernel(kernel):
        index, reference = MemoryIndex(3, expected_size=0), BruteForceIndex(3)
        index.buffer_limit = buffer_limit
        under_way = 0
        for i in range(300):
            fingerprint, key = around(rng, bases, 6), f"https://example.com/{i % 250}"
            wildcard = sum(1 << p for p in rng.sample(range(64), wildcard_bits))
            if i % 7 == 3:
                assert index.remove_key(key) == reference.remove_key(key)
            assert index.add_if_new(fingerprint, key, wildcard) == reference.add_if_new(fingerprint, key, wildcard)
            under_way += index._tables.merging is not None
            probe = around(rng, bases, 5)
            assert index.query(probe, wildcard) == reference.query(probe, wildcard)
        assert under_way > 0
        queries = [around(rng, bases, 5) for _ in range(30)]
        assert index.query_many(queries) == [reference.query(q) for q in queries]
        assert sorted(index.items()) == sorted(reference.items())


def test_no_insert_runs_a_whole_merge(small_steps: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """At the default buffer bound each merge ends, a step per insert, before the next one
    is due: no call finishes one at once."""
    finished: list[int] = []
    run_to_end = _merge.finish

    def finish(steps: _merge.MergeSteps) -> SortedBuckets:
        finished.append(1)
        return run_to_end(steps)

    monkeypatch.setattr(_merge, "finish", finish)
    monkeypatch.setattr(_merge, "STEP_ENTRIES", 256)
    rng = random.Random(4)
    index = MemoryIndex(3, expected_size=0)
    merges = 0
    for i in range(40_000):
        was_merging = index._tables.merging is not None
        index.add(rng.getrandbits(64), f"k{i}")
        merges += index._tables.merging is not None and not was_merging
    assert merges >= 5 and finished == []
    assert index.design == design_for_size(index.design, 40_000)  # widened on the way


@pytest.mark.parametrize(("size", "new", "step"), [(5000, 700, 64), (70_000, 3000, 1000), (0, 50, 8), (100, 0, 8)])
def test_a_merge_in_steps_gives_a_fresh_build(monkeypatch: pytest.MonkeyPatch, size: int, new: int, step: int) -> None:
    monkeypatch.setattr(_merge, "STEP_ENTRIES", step)
    fingerprints = np.random.default_rng(size).integers(0, 2**64 - 1, size + new, dtype=np.uint64)
    design = make_design(3, 4, 12)
    old = SortedBuckets.build(design, fingerprints[:size])
    steps = _merge.merge_steps(old, fingerprints[size:], size, design)
    taken = sum(1 for _ in steps)  # (a for loop runs the steps and drops what they return)
    merged = _merge.merged(old, fingerprints[size:], size, design)
    assert merged.same_as(SortedBuckets.build(design, fingerprints))
    assert taken >= len(design.tables) * (size + new) // (step * 2)


def test_a_growing_column_moves_to_its_larger_copy_a_slice_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    copied_whole: list[int] = []
    reserve = GrowableArray._reserve

    def spy(column: GrowableArray, needed: int) -> None:
        copied_whole.append(needed)
        reserve(column, needed)

    monkeypatch.setattr(GrowableArray, "_reserve", spy)
    column = GrowableArray(np.uint64, np.arange(5000))
    for value in range(5000, 30_000):
        column.append(value)
    for start in range(30_000, 90_000, 4):  # as a sketch store appends: 4 words a row
        column.extend(np.arange(start, start + 4))
    assert copied_whole == []
    assert np.array_equal(column.values, np.arange(90_000))
    assert column.nbytes <= 90_000 * 8 * 1.2 * 2  # (a larger copy may be under way)


def test_the_pages_a_merge_fills_are_touched_a_step_each() -> None:
    """Each fresh 2 MB page is faulted in by a step of its own (see index/_pages.py)."""
    values = np.empty(3 * HUGE_PAGE // 8 + 5, dtype=np.uint64)
    toucher = PageToucher(values)
    assert sum(1 for _ in toucher.steps_until(10)) == 1  # the page of the first values
    steps = sum(1 for _ in toucher.steps_until(len(values)))
    first_page = -values.ctypes.data % HUGE_PAGE  # where the first whole page starts
    assert steps == len(range(first_page, values.nbytes, HUGE_PAGE)) - (first_page == 0)
    assert sum(1 for _ in toucher.steps_until(len(values))) == 0  # (each page once)


def test_a_column_extended_by_bytes_holds_the_values_through_its_moves() -> None:
    column = GrowableArray(np.uint64, np.arange(3000))
    for start in range(3000, 40_000, 4):  # (as a sketch store appends a row's words)
        column.extend_bytes(np.arange(start, start + 4, dtype=np.uint64).tobytes())
        if start == 20_000:
            column.extend(np.arange(0))  # (the other ways of adding stay in step)
    assert np.array_equal(column.values, np.arange(40_000))


def test_a_growing_column_faults_in_each_page_of_its_copy_in_an_append_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    touched: list[bool] = []
    touch_next = PageToucher.touch_next

    def spy(toucher: PageToucher, stop: int) -> bool:
        touched.append(touch_next(toucher, stop))
        return touched[-1]

    monkeypatch.setattr(PageToucher, "touch_next", spy)
    column = GrowableArray(np.uint64, np.arange(600_000))  # (4.8 MB: its copy spans 2 MB pages)
    for value in range(600_000, 640_000):
        column.append(value)
    assert np.array_equal(column.values, np.arange(640_000))
    assert sum(touched) >= 3 and not column._next_pages  # (the copy done: 5.4 MB, a page an append)


@pytest.mark.parametrize("bulk_values", [10_000, 20_000])  # (over a row's 4 KB: copied, not touched)
def test_a_bulk_extend_while_a_column_moves_leaves_no_value_to_a_later_page_touch(bulk_values: int) -> None:
    """A bulk extend copies a slice into the larger copy without touching its pages; the
    appends after it must not touch (write into) those pages again. A long URL's key bytes
    or a batch of rows (``add_entries``) does that in the middle of a move."""
    offset = 0x1111_1111_1111_1111  # (no value has a zero byte a touch could leave unseen)
    column = GrowableArray(np.uint64, np.arange(2_000_000, dtype=np.uint64) + np.uint64(offset))
    size = 2_000_000
    while column._next is None:  # (appends until its move to a 2.4 MB-page copy starts)
        column.append(offset + size)
        size += 1
    column.extend(np.arange(size, size + bulk_values, dtype=np.uint64) + np.uint64(offset))
    size += bulk_values
    for value in range(size, size + 200_000):  # (the move ends among these)
        column.append(offset + value)
    size += 200_000
    assert column._next is None
    assert np.array_equal(column.values, np.arange(size, dtype=np.uint64) + np.uint64(offset))


def test_long_urls_stored_while_the_keys_move_leave_the_other_keys_whole() -> None:
    stored = [
        f"https://example.com/search?page={number}&q=" + "x" * 6000  # (over a row's 4 KB: copied, not touched)
        if number % 2000 == 1999 else f"https://example.com/page/{number:09d}?session=abc"
        for number in range(120_000)  # (5.9 MB of keys: each move's copy spans 2 MB pages)
    ]
    store = KeyStore()
    for key in stored:
        store.append(key)
    assert list(store) == stored


@pytest.mark.parametrize(("size", "new", "step"), [(5000, 700, 64), (3000, 0, 1000), (20_000, 300, 4096)])
def test_a_widening_in_steps_gives_a_fresh_build(
    monkeypatch: pytest.MonkeyPatch, size: int, new: int, step: int
) -> None:
    """Buckets a bit wider: every row sorted in again, a slice of rows a step (index/_widen.py)."""
    monkeypatch.setattr(_merge, "STEP_ENTRIES", step)
    fingerprints = np.random.default_rng(size).integers(0, 2**64 - 1, size + new, dtype=np.uint64)
    old = SortedBuckets.build(make_design(3, 4, 11), fingerprints[:size])
    steps = _merge.merge_steps(old, fingerprints[size:], size, make_design(3, 4, 12))
    taken = sum(1 for _ in steps)
    widened = _merge.merged(old, fingerprints[size:], size, make_design(3, 4, 12))
    assert widened.same_as(SortedBuckets.build(make_design(3, 4, 12), fingerprints))
    assert taken >= 2 * len(widened.design.tables) * (size + new) // step


def _mapping_line(address: int, field: str) -> list[str]:
    """The words of line *field* of the mapping that holds *address* (``/proc/self/smaps``)."""
    with open("/proc/self/smaps") as smaps:
        inside = False
        for line in smaps:
            first = line.split(" ", 1)[0]
            if "-" in first and not first.endswith(":"):
                low, high = (int(bound, 16) for bound in first.split("-"))
                inside = low <= address < high
            elif inside and line.startswith(f"{field}:"):
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def _vm_flags(address: int) -> set[str]:
    """The kernel's flags of the mapping that holds *address*."""
    return set(_mapping_line(address, "VmFlags"))


def _resident_bytes(address: int) -> int:
    """The resident bytes of the mapping that holds *address*."""
    return int(_mapping_line(address, "Rss")[0]) * 1024


@pytest.mark.skipif(not advises_pages(), reason="madvise of transparent huge pages: Linux only")
def test_a_fresh_array_is_faulted_in_4_kb_pages_then_given_back_to_huge_pages() -> None:
    values = np.empty(5 * HUGE_PAGE // 8, dtype=np.uint64)
    first_page = values.ctypes.data + (-values.ctypes.data % HUGE_PAGE)  # (the first whole huge page)
    toucher = PageToucher(values)
    assert "nh" in _vm_flags(first_page) and "nh" in _vm_flags(first_page + 2 * HUGE_PAGE)
    steps = sum(1 for _ in toucher.steps_until((first_page - values.ctypes.data + HUGE_PAGE) // 8))
    assert steps == 1 + (first_page != values.ctypes.data)  # (the part before it, if any, then it)
    assert "hg" in _vm_flags(first_page)  # (touched: khugepaged may collapse it)
    assert "nh" in _vm_flags(first_page + HUGE_PAGE)  # (not yet: a fault there takes a 4 KB page)


@pytest.mark.skipif(not advises_pages(), reason="madvise: Linux only")
def test_a_dropped_array_is_handed_back_a_slice_a_call() -> None:
    values = np.ones(6 * _release.RELEASED_PER_STEP // 8, dtype=np.uint64)  # (96 MB, every page touched)
    middle = values.ctypes.data + values.nbytes // 2
    resident = _resident_bytes(middle)
    _release.release_later(values)  # (outside an index's call: left to be freed at once)
    assert not _release._released
    with _pages.one_call():
        _release.release_later(values)
        del values
        _release.release_step()
        _release.release_step()  # (one slice a call)
    assert resident - _resident_bytes(middle) <= _release.RELEASED_PER_STEP + HUGE_PAGE
    assert resident - _resident_bytes(middle) >= _release.RELEASED_PER_STEP - HUGE_PAGE
    steps = 1
    while _release._released:
        _release.release_step()
        steps += 1
    assert 6 <= steps <= 8  # (slices on whole huge pages; then the array goes)


@pytest.mark.skipif(not advises_pages(), reason="madvise: Linux only")
def test_a_dropped_array_that_a_view_still_reads_is_left_whole() -> None:
    values = np.arange(6 * _release.RELEASED_PER_STEP // 8, dtype=np.uint64)
    view = values[1000:]
    with _pages.one_call():
        _release.release_later(values)
    del values
    while _release._released:
        _release.release_step()
    assert np.array_equal(view[:5], np.arange(1000, 1005)) and int(view[-1]) == len(view) + 999


@pytest.mark.skipif(not advises_pages(), reason="madvise: Linux only")
def test_an_index_closing_hands_back_what_its_upkeep_dropped() -> None:
    with _pages.one_call():
        for _ in range(3):
            _release.release_later(np.ones(3 * _release.RELEASED_PER_STEP // 8, dtype=np.uint64))
    assert len(_release._released) == 3
    MemoryIndex(max_distance=3).close()
    assert not _release._released
