"""The add-on: one line of ADDONS is the whole set-up."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from conftest import RecordingSpider, crawl
from scrapy.utils.test import get_crawler

from scrapy_simhash import Addon, SimhashMiddleware, SimhashPipeline, SimhashSpiderMiddleware
from scrapy_simhash.addon import MIDDLEWARE_PRIORITY, PIPELINE_PRIORITY, SPIDER_MIDDLEWARE_PRIORITY


def path(component: type) -> str:
    """The import path the add-on lists a component under (Scrapy logs it)."""
    return f"{component.__module__}.{component.__qualname__}"


def crawler_settings(**settings: Any) -> Any:
    return get_crawler(settings_dict={"ADDONS": {Addon: 300}, **settings}).settings


def test_enables_the_middleware_after_retry_redirect_and_decompression() -> None:
    settings = crawler_settings()
    assert settings.getdict("DOWNLOADER_MIDDLEWARES")[path(SimhashMiddleware)] == MIDDLEWARE_PRIORITY
    assert 0 < MIDDLEWARE_PRIORITY < 550  # RetryMiddleware; responses travel from 900 down to 0
    assert path(SimhashPipeline) not in settings.getdict("ITEM_PIPELINES")


def test_enables_the_spider_middleware_that_drops_the_items_of_unchanged_pages() -> None:
    assert crawler_settings().getdict("SPIDER_MIDDLEWARES")[path(SimhashSpiderMiddleware)] == SPIDER_MIDDLEWARE_PRIORITY


@pytest.mark.parametrize("settings", [{"SIMHASH_ITEM_FIELDS": ["body"]}, {"SIMHASH_ACTION": "mark"}])
def test_enables_the_pipeline_when_items_need_it(settings: dict[str, Any]) -> None:
    assert crawler_settings(**settings).getdict("ITEM_PIPELINES")[path(SimhashPipeline)] == PIPELINE_PRIORITY


def test_a_project_priority_wins() -> None:
    settings = crawler_settings(DOWNLOADER_MIDDLEWARES={"scrapy_simhash.SimhashMiddleware": 700})
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares == {"scrapy_simhash.SimhashMiddleware": 700}


def test_a_bad_setting_stops_the_crawl_before_it_starts() -> None:
    with pytest.raises(ValueError, match="SIMHASH_MAX_DISTANCE"):
        crawler_settings(SIMHASH_MAX_DISTANCE=64)


def test_scrapy_names_the_components_by_their_import_path(demo_url: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="scrapy.middleware"):
        crawl(RecordingSpider, {"SIMHASH_ITEM_FIELDS": ["title"]}, start_url=demo_url)
    enabled = "\n".join(record.getMessage() for record in caplog.records if "Enabled" in record.getMessage())
    for component in (SimhashMiddleware, SimhashSpiderMiddleware, SimhashPipeline):
        assert f"'{path(component)}'" in enabled
    assert "<class" not in enabled
