"""The keys a crawl checked, kept in JOBDIR: what tells a resumed crawl's re-fetch from an unchanged page."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from scrapy_simhash._checked import CheckedIn, CheckedKeys


def test_keys_are_remembered_across_processes_through_the_file(tmp_path: Path) -> None:
    path = tmp_path / "checked.bin"
    first = CheckedKeys(path)
    assert first.check_in("http://a/") is CheckedIn.NEW
    assert first.check_in("http://a/") is CheckedIn.THIS_RUN
    first.check_in("http://b/")
    first.found_unchanged("http://b/")
    # not closed: a kill -9 keeps what each unbuffered write wrote
    resumed = CheckedKeys(path)
    assert resumed.check_in("http://a/") is CheckedIn.EARLIER_RUN
    assert resumed.check_in("http://a/") is CheckedIn.THIS_RUN  # (checked by this run too, now)
    assert resumed.was_unchanged("http://b/") and not resumed.was_unchanged("http://a/")
    assert resumed.check_in("http://c/") is CheckedIn.NEW
    assert len(resumed) == 3
    first.close()
    resumed.close()


def test_a_torn_last_record_is_cut_off_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "checked.bin"
    with_keys = CheckedKeys(path)
    with_keys.check_in("http://a/")
    with_keys.close()
    path.write_bytes(path.read_bytes() + b"c\x01\x02")  # killed mid-write
    with caplog.at_level(logging.WARNING):
        resumed = CheckedKeys(path)
    assert "torn record" in caplog.text
    assert resumed.check_in("http://a/") is CheckedIn.EARLIER_RUN
    resumed.close()
    assert len(path.read_bytes()) == 9


def test_without_a_path_the_keys_live_in_memory() -> None:
    keys = CheckedKeys()
    assert keys.check_in("k") is CheckedIn.NEW and keys.check_in("k") is CheckedIn.THIS_RUN
    keys.close()
