"""A page fetched again: a repeat crawl, a changed page, a resumed crawl killed with kill -9.

The README's "What happens to a page" table, case by case, on real crawls of a copy of
the demo site (the shared-index case is in ``test_concurrency.py``).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import DEMO_SITE, RecordingSpider, crawl
from redis_server import redis_url, shared_redis_server  # noqa: F401  (fixtures)
from serve_demo import start_server

from scrapy_simhash import from_hex, open_index

HERE = Path(__file__).parent
CHANGED = "articles/jupiter.html"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A copy of the demo site that a test may change, served on 127.0.0.1."""
    root = tmp_path / "site"
    shutil.copytree(DEMO_SITE, root)
    server = start_server(root)
    yield root, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def rewrite(page: Path) -> None:
    """Give *page* new paragraphs: a changed page, like no other of the site."""
    words = re.findall(r"[a-z]{4,}", (DEMO_SITE / "about.html").read_text() + page.read_text())
    rng = random.Random(5)
    paragraphs = "".join(f"<p>{' '.join(rng.choice(words) for _ in range(60))}.</p>\n" for _ in range(6))
    html = page.read_text()
    page.write_text(re.sub(r"(<h1>.*?</h1>).*(</article>)", rf"\1{paragraphs}\2", html, flags=re.S))


def fingerprinted(items: list[dict[str, Any]]) -> list[str]:
    """The URLs of the items of checked pages (short pages are passed unchecked)."""
    return sorted(item["url"] for item in items if item["simhash"])


@pytest.fixture(params=["disk", "redis"])
def index_spec(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The persistent indexes: a disk store, and a namespace of a real Redis server."""
    if request.param == "disk":
        return {"SIMHASH_INDEX": str(tmp_path / "store")}
    return {"SIMHASH_INDEX": request.getfixturevalue("redis_url"), "SIMHASH_NAMESPACE": uuid.uuid4().hex}


def test_a_repeat_crawl_adds_nothing_and_hands_on_only_the_changed_page(
    site: tuple[Path, str], index_spec: dict[str, str]
) -> None:
    root, url = site
    settings = index_spec
    first = crawl(RecordingSpider, settings, start_url=url)
    stored = first.stats.get_value("simhash/index_size/close")
    assert stored == first.stats.get_value("simhash/kept") > 0

    again = crawl(RecordingSpider, settings, start_url=url)
    assert fingerprinted(again.spider.items) == []  # no page of the index reaches the items again
    assert again.stats.get_value("simhash/index_size/close") == stored  # 0 entries added
    assert again.stats.get_value("simhash/unchanged") == stored
    assert again.stats.get_value("simhash/unchanged/items_dropped") == stored
    # its links were followed: the same pages were fetched
    assert again.stats.get_value("response_received_count") == first.stats.get_value("response_received_count")

    rewrite(root / CHANGED)
    changed = crawl(RecordingSpider, settings, start_url=url)
    assert fingerprinted(changed.spider.items) == [url + CHANGED]
    assert changed.stats.get_value("simhash/kept") == changed.stats.get_value("simhash/changed") == 1
    assert changed.stats.get_value("simhash/index_size/close") == stored  # its record replaced
    with open_index(index_spec["SIMHASH_INDEX"], namespace=index_spec.get("SIMHASH_NAMESPACE", "")) as index:
        [(fingerprint, _)] = [(fp, key) for fp, key in index.items() if key == url + CHANGED]
    [new_item] = [item for item in changed.spider.items if item["url"] == url + CHANGED]
    assert fingerprint == from_hex(new_item["simhash"]["fingerprint"])  # the new version's

    # and the new version is what a next crawl finds unchanged
    after = crawl(RecordingSpider, settings, start_url=url)
    assert fingerprinted(after.spider.items) == []
    assert after.stats.get_value("simhash/unchanged") == stored
    assert after.stats.get_value("simhash/changed") is None


def test_keep_unchanged_hands_every_page_on_again(site: tuple[Path, str], tmp_path: Path) -> None:
    _, url = site
    settings = {"SIMHASH_INDEX": str(tmp_path / "store")}
    first = crawl(RecordingSpider, settings, start_url=url)
    again = crawl(RecordingSpider, {**settings, "SIMHASH_KEEP_UNCHANGED": True}, start_url=url)
    assert fingerprinted(again.spider.items) == fingerprinted(first.spider.items)
    assert again.stats.get_value("simhash/index_size/close") == first.stats.get_value("simhash/index_size/close")
    assert again.stats.get_value("simhash/unchanged/items_dropped") is None


def run_crawl(url: str, jobdir: Path, stats: Path, *args: str) -> tuple[int, dict[str, Any], set[str]]:
    """Crawl in another process: its exit code, stats and the URLs of its items."""
    command = [sys.executable, str(HERE / "refetch_spider.py"), url, str(jobdir), str(stats), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    items = Path(f"{stats}.items")
    return (done.returncode, json.loads(stats.read_text()) if stats.exists() else {},
            set(items.read_text().split()) if items.exists() else set())


def test_a_crawl_killed_with_sigkill_and_resumed_loses_no_page(site: tuple[Path, str], tmp_path: Path) -> None:
    _, url = site
    code, _, everything = run_crawl(url, tmp_path / "whole", tmp_path / "whole.json")
    assert code == 0 and url + CHANGED in everything

    job = tmp_path / "job"
    killed, _, before = run_crawl(url, job, tmp_path / "killed.json", "--kill-at", url + CHANGED)
    assert killed == -9 and url + CHANGED not in before
    with open_index(str(job / "simhash.index")) as index:
        assert url + CHANGED in {key for _, key in index.items()}  # recorded before its callback ran
    code, resumed, after = run_crawl(url, job, tmp_path / "resumed.json")
    assert code == 0
    assert before | after == everything
    assert "simhash/unchanged" not in resumed


def test_a_page_recorded_before_a_kill_reaches_the_spider_when_the_resumed_crawl_fetches_it(
    site: tuple[Path, str], tmp_path: Path
) -> None:
    """The page in flight at the kill was recorded: fetched again in the resumed crawl, it
    is seen again, not unchanged; fetched by another crawl into the same index, it is unchanged."""
    _, url = site
    job = tmp_path / "job"
    killed, _, _ = run_crawl(url, job, tmp_path / "killed.json", "--kill-at", url + CHANGED)
    assert killed == -9
    code, resumed, items = run_crawl(url, job, tmp_path / "resumed.json", "--only", url + CHANGED)
    assert code == 0 and url + CHANGED in items
    assert resumed["simhash/seen_again"] >= 1 and "simhash/unchanged" not in resumed

    code, other, items = run_crawl(url, tmp_path / "other-job", tmp_path / "other.json", "--only", url + CHANGED,
                                   "-s", f"SIMHASH_INDEX={job / 'simhash.index'}")
    assert code == 0 and url + CHANGED not in items  # (its links were followed: new pages have items)
    assert other["simhash/unchanged"] >= 1 and other["simhash/unchanged/items_dropped"] >= 1
