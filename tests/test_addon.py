"""The add-on: one line of ADDONS is the whole set-up."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.utils.test import get_crawler

from scrapy_simhash import Addon, SimhashMiddleware, SimhashPipeline, SimhashSpiderMiddleware
from scrapy_simhash.addon import MIDDLEWARE_PRIORITY, PIPELINE_PRIORITY, SPIDER_MIDDLEWARE_PRIORITY


def crawler_settings(**settings: Any) -> Any:
    return get_crawler(settings_dict={"ADDONS": {Addon: 300}, **settings}).settings


def test_enables_the_middleware_after_retry_redirect_and_decompression() -> None:
    settings = crawler_settings()
    assert settings.getdict("DOWNLOADER_MIDDLEWARES")[SimhashMiddleware] == MIDDLEWARE_PRIORITY
    assert 0 < MIDDLEWARE_PRIORITY < 550  # RetryMiddleware; responses travel from 900 down to 0
    assert SimhashPipeline not in settings.getdict("ITEM_PIPELINES")


def test_enables_the_spider_middleware_that_drops_the_items_of_unchanged_pages() -> None:
    assert crawler_settings().getdict("SPIDER_MIDDLEWARES")[SimhashSpiderMiddleware] == SPIDER_MIDDLEWARE_PRIORITY


@pytest.mark.parametrize("settings", [{"SIMHASH_ITEM_FIELDS": ["body"]}, {"SIMHASH_ACTION": "mark"}])
def test_enables_the_pipeline_when_items_need_it(settings: dict[str, Any]) -> None:
    assert crawler_settings(**settings).getdict("ITEM_PIPELINES")[SimhashPipeline] == PIPELINE_PRIORITY


def test_a_project_priority_wins() -> None:
    settings = crawler_settings(DOWNLOADER_MIDDLEWARES={"scrapy_simhash.SimhashMiddleware": 700})
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares == {"scrapy_simhash.SimhashMiddleware": 700}


def test_a_bad_setting_stops_the_crawl_before_it_starts() -> None:
    with pytest.raises(ValueError, match="SIMHASH_MAX_DISTANCE"):
        crawler_settings(SIMHASH_MAX_DISTANCE=64)
