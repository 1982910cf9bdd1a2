"""The add-on: one line of ADDONS is the whole set-up."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import RecordingSpider, crawl
from scrapy.commands.shell import Command as ShellCommand
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from scrapy_simhash import Addon, SimhashMiddleware, SimhashPipeline, SimhashSpiderMiddleware
from scrapy_simhash.addon import MIDDLEWARE_PRIORITY, PIPELINE_PRIORITY, SPIDER_MIDDLEWARE_PRIORITY
from scrapy_simhash.config import SimhashSettings, enabled_settings, in_scrapy_shell


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


def _shell_settings(**cmdline: Any) -> Settings:
    """Settings as ``scrapy shell`` makes them: its command's own, then the command line's."""
    settings = Settings()
    settings.setdict(ShellCommand.default_settings, priority="command")
    settings.setdict({"ADDONS": {"scrapy_simhash.Addon": 300}, **cmdline}, priority="cmdline")
    return settings


def test_scrapy_simhash_is_off_in_scrapy_shell_unless_turned_on_there() -> None:
    """A page fetched in the shell to look at is neither dropped (no response left) nor
    stored in a persistent index (where the next crawl found it "unchanged")."""
    assert not in_scrapy_shell(Settings())
    assert in_scrapy_shell(_shell_settings())
    assert not SimhashSettings.from_settings(_shell_settings()).enabled
    with pytest.raises(NotConfigured, match="off in scrapy shell"):
        enabled_settings(_shell_settings())
    assert SimhashSettings.from_settings(_shell_settings(SIMHASH_ENABLED=True)).enabled
    assert SimhashSettings.from_settings(Settings({"SIMHASH_ENABLED": True})).enabled  # (a crawl's)


def test_a_real_scrapy_shell_leaves_the_index_alone(demo_url: str, tmp_path: Path) -> None:
    index = tmp_path / "simhash.index"
    shell = subprocess.run(
        [sys.executable, "-m", "scrapy.cmdline", "shell", f"{demo_url}articles/jupiter.html", "-c", "response.status",
         "-s", 'ADDONS={"scrapy_simhash.Addon": 300}', "-s", f"SIMHASH_INDEX={index}"],
        capture_output=True, text=True, cwd=tmp_path, check=True,
    )
    assert shell.stdout.strip() == "200"
    assert "off in scrapy shell" in shell.stderr
    assert not index.exists()
