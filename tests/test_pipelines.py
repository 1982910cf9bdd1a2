"""SimhashPipeline, built with build_from_crawler, on dict, dataclass and scrapy.Item items."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import scrapy
from conftest import DEMO_SITE
from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from scrapy_simhash import NearDuplicateItem, SimhashPipeline, to_hex
from scrapy_simhash.pipelines import content_key

ARTICLE_HTML = (DEMO_SITE / "articles" / "jupiter.html").read_text(encoding="utf-8")
TEXT = (
    "Jupiter is the easiest planet to enjoy with a small telescope, and even steady binoculars show its four "
    "largest moons as tiny points of light strung along a line. The moons move fast enough to see change in "
    "a single evening, and sometimes a moon disappears behind the planet or into its shadow."
)
OTHER_TEXT = (
    "A healthy compost heap smells of damp soil, not of rot. When a heap stinks it is almost always because "
    "it is too wet, too dense, or has too much fresh green material and not enough brown. Turn it with a fork "
    "every week or two and keep it as moist as a wrung-out sponge."
)


def pipeline(**settings: Any) -> SimhashPipeline:
    return build_from_crawler(SimhashPipeline, get_crawler(settings_dict=settings))


def process(pipe: SimhashPipeline, item: Any) -> Any:
    return asyncio.run(pipe.process_item(item))


def stats(pipe: SimhashPipeline) -> dict[str, Any]:
    return pipe._checker._crawler.stats.get_stats()


@dataclasses.dataclass
class Article:
    url: str
    body: str


class ArticleItem(scrapy.Item):
    url = scrapy.Field()
    body = scrapy.Field()
    simhash = scrapy.Field()


def test_disabled_raises_not_configured() -> None:
    with pytest.raises(NotConfigured):
        pipeline(SIMHASH_ENABLED=False)


@pytest.mark.parametrize("make", [dict, Article, ArticleItem], ids=["dict", "dataclass", "Item"])
def test_a_copy_is_dropped_at_debug_level(make: Any) -> None:
    pipe = pipeline(SIMHASH_ITEM_FIELDS=["body"], SIMHASH_MIN_TOKENS=10)
    first = make(url="http://a.example/1", body=TEXT)
    assert process(pipe, first) is first
    with pytest.raises(NearDuplicateItem) as raised:
        process(pipe, make(url="http://a.example/2", body=TEXT))
    error = raised.value
    assert isinstance(error, DropItem)
    assert error.log_level == "DEBUG"
    assert (error.key, error.duplicate_of, error.distance) == ("http://a.example/2", "http://a.example/1", 0)
    assert stats(pipe)["simhash/items/dropped"] == 1


def test_distinct_items_are_kept() -> None:
    pipe = pipeline(SIMHASH_ITEM_FIELDS=["body"], SIMHASH_MIN_TOKENS=10)
    process(pipe, {"body": TEXT})
    process(pipe, {"body": OTHER_TEXT})
    assert stats(pipe)["simhash/items/kept"] == 2


def test_with_an_index_per_host_a_copy_on_another_host_is_kept_and_a_malformed_url_is_checked() -> None:
    pipe = pipeline(SIMHASH_ITEM_FIELDS=["body"], SIMHASH_MIN_TOKENS=10, SIMHASH_SCOPE="domain")
    process(pipe, {"url": "http://a.example/1", "body": TEXT})
    process(pipe, {"url": "http://b.example/1", "body": TEXT})  # b's own index: kept
    with pytest.raises(NearDuplicateItem):
        process(pipe, {"url": "http://a.example/2", "body": TEXT})
    # urlsplit raises ValueError on it: checked in the index of no host, not an error.
    process(pipe, {"url": "http://[::1/x", "body": TEXT})
    with pytest.raises(NearDuplicateItem):
        process(pipe, {"url": "http://[::1/y", "body": TEXT})
    assert stats(pipe)["simhash/items/kept"] == 3


def test_fields_are_joined_and_html_is_read_as_html() -> None:
    pipe = pipeline(SIMHASH_ITEM_FIELDS=["title", "html"])
    process(pipe, {"url": "http://a.example/jupiter", "title": "Jupiter", "html": ARTICLE_HTML})
    with pytest.raises(NearDuplicateItem):
        process(pipe, {"url": "http://b.example/jupiter", "title": "Jupiter", "html": ARTICLE_HTML})


def test_items_without_the_fields_pass() -> None:
    pipe = pipeline(SIMHASH_ITEM_FIELDS=["body"])
    item = {"url": "http://a.example/1", "title": "no body"}
    assert process(pipe, item) is item
    assert stats(pipe)["simhash/items/skipped/no_fields"] == 1


def test_an_item_of_a_marked_page_is_dropped_without_fingerprinting() -> None:
    pipe = pipeline()
    page = {"fingerprint": to_hex(12345), "duplicate_of": "http://a.example/original", "distance": 2}
    with pytest.raises(NearDuplicateItem) as raised:
        process(pipe, {"url": "http://a.example/copy", "simhash": page})
    assert (raised.value.fingerprint, raised.value.duplicate_of, raised.value.distance) == (
        12345,
        "http://a.example/original",
        2,
    )
    assert "simhash/items/checked" not in stats(pipe)


def test_the_page_fingerprint_is_reused_instead_of_the_fields() -> None:
    """Two items whose text differs but whose pages had one fingerprint: the second is dropped."""
    pipe = pipeline(SIMHASH_ITEM_FIELDS=["body"], SIMHASH_MIN_TOKENS=10)
    page = {"fingerprint": to_hex(0xABCDEF), "duplicate_of": None, "distance": None}
    process(pipe, ArticleItem(url="http://a.example/1", body=TEXT, simhash=page))
    with pytest.raises(NearDuplicateItem):
        process(pipe, ArticleItem(url="http://a.example/2", body=OTHER_TEXT, simhash=page))


@pytest.mark.parametrize("carried", ["not a dict", {"fingerprint": "zz"}, {"duplicate_of": "x"}])
def test_a_malformed_carried_value_is_ignored(carried: Any) -> None:
    pipe = pipeline(SIMHASH_ITEM_FIELDS=["body"], SIMHASH_MIN_TOKENS=10)
    item = {"body": TEXT, "simhash": carried}
    assert process(pipe, item) is item
    assert stats(pipe)["simhash/items/kept"] == 1


def test_an_item_without_url_of_any_json_like_fields_has_one_key_in_every_process() -> None:
    # Mixed dict keys made json.dumps(sort_keys=True) raise TypeError: the item was lost.
    item = {"body": TEXT, "extra": {1: "x", "a": "y", None: 0, (2, 3): "t"}, "tags": {"moons", "jupiter", "io"},
            "by_pair": {(1, 2): "x"}, "by_bytes": {b"k": "y"}}
    pipe = pipeline(SIMHASH_ITEM_FIELDS=["body"], SIMHASH_MIN_TOKENS=10)
    assert process(pipe, item) is item
    with pytest.raises(NearDuplicateItem) as raised:
        process(pipe, {**item, "extra": {}})
    assert raised.value.duplicate_of.startswith("item-")
    script = (
        "from itemadapter import ItemAdapter; from scrapy_simhash.pipelines import content_key; "
        "print(content_key(ItemAdapter({'tags': {'moons', 'jupiter', 'io', 'europa'}, 'n': {1: 'x', 'a': 2}})))"
    )
    keys = {
        subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONHASHSEED": seed},
                       capture_output=True, text=True, check=True).stdout
        for seed in ("1", "2", "3")
    }
    assert len(keys) == 1 and keys.pop().startswith("item-")


def test_the_key_of_an_item_of_plain_fields_is_the_one_earlier_releases_gave() -> None:
    # (Stored in disk and Redis indexes by earlier crawls: it must not move.)
    fields = {"body": TEXT, "n": 3, "parts": ["a", "b"], "meta": {"b": 1, "a": [1.5, None]}, "by_id": {10: "x", 2: "y"}}
    text = json.dumps(fields, sort_keys=True, default=repr, ensure_ascii=False)
    assert content_key(ItemAdapter(fields)) == "item-" + hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


@pytest.mark.parametrize("with_url", [False, True])
def test_the_same_item_twice_in_a_crawl_is_dropped_as_a_copy(with_url: bool) -> None:
    # (two pages yield it: a product in two categories) - its key is its own record's, as
    # for a page fetched again, but no retry repeats an item
    pipe = pipeline(SIMHASH_ITEM_FIELDS=["body"], SIMHASH_MIN_TOKENS=10)
    item = {"body": TEXT, **({"url": "http://a.example/product"} if with_url else {})}
    assert process(pipe, dict(item)) == item
    with pytest.raises(NearDuplicateItem) as raised:
        process(pipe, dict(item))
    assert raised.value.distance == 0
    assert stats(pipe)["simhash/items/dropped"] == 1 and "simhash/items/seen_again" not in stats(pipe)


def test_an_item_a_killed_run_recorded_is_passed_on_again_once_when_the_crawl_resumes(tmp_path: Path) -> None:
    # (it may not have reached the feed before the kill) - then a copy, as any item twice in a run
    settings = {"SIMHASH_ITEM_FIELDS": ["body"], "SIMHASH_MIN_TOKENS": 10, "JOBDIR": str(tmp_path / "job")}
    item = {"body": TEXT}
    assert process(pipeline(**settings), dict(item)) == item  # the killed run (its files written as it went)
    resumed = pipeline(**settings)
    assert process(resumed, dict(item)) == item
    with pytest.raises(NearDuplicateItem):
        process(resumed, dict(item))
    assert stats(resumed)["simhash/items/seen_again"] == 1 and stats(resumed)["simhash/items/dropped"] == 1


def test_without_item_fields_the_pipeline_says_what_it_checks(caplog: pytest.LogCaptureFixture) -> None:
    """Enabled alone, without SIMHASH_ITEM_FIELDS, it checks no item of its own: an INFO line says so."""
    with caplog.at_level("INFO", logger="scrapy_simhash.pipelines"):
        pipeline()
    assert any("SIMHASH_ITEM_FIELDS is empty" in record.getMessage() for record in caplog.records)
    caplog.clear()
    with caplog.at_level("INFO", logger="scrapy_simhash.pipelines"):
        pipeline(SIMHASH_ITEM_FIELDS=["body"])
    assert not any("SIMHASH_ITEM_FIELDS is empty" in record.getMessage() for record in caplog.records)
