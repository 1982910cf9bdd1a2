"""The Scrapy add-on: ``ADDONS = {"scrapy_simhash.Addon": 300}`` is the whole set-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

from .config import SimhashSettings
from .middlewares import SimhashMiddleware
from .pipelines import SimhashPipeline
from .spidermiddlewares import SimhashSpiderMiddleware

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: After RetryMiddleware (550), HttpCompressionMiddleware (590) and
#: RedirectMiddleware (600): responses come up from 900 to 0, so at 540 the
#: middleware sees final, decompressed pages, and retries are not fingerprinted.
MIDDLEWARE_PRIORITY = 540
#: Near the spider: the items of unchanged pages are dropped before other middlewares see them.
SPIDER_MIDDLEWARE_PRIORITY = 950
#: Early, so near-duplicate items are dropped before costly pipelines (images, exports).
PIPELINE_PRIORITY = 100


class Addon:
    """Enable :class:`SimhashMiddleware` and :class:`SimhashSpiderMiddleware` (which drops
    the items of unchanged pages), and :class:`SimhashPipeline` when items need it
    (``SIMHASH_ITEM_FIELDS`` is set or ``SIMHASH_ACTION = "mark"``).

    Components a project already lists keep the project's priority. The settings
    are validated here, so a bad ``SIMHASH_*`` value stops the crawl before it starts.
    """

    def update_settings(self, settings: BaseSettings) -> None:
        config = SimhashSettings.from_settings(settings)
        _enable(settings, "DOWNLOADER_MIDDLEWARES", SimhashMiddleware, MIDDLEWARE_PRIORITY)
        _enable(settings, "SPIDER_MIDDLEWARES", SimhashSpiderMiddleware, SPIDER_MIDDLEWARE_PRIORITY)
        if config.item_fields or config.action == "mark":
            _enable(settings, "ITEM_PIPELINES", SimhashPipeline, PIPELINE_PRIORITY)


def _enable(settings: BaseSettings, name: str, component: type, priority: int) -> None:
    """``setdefault_in_component_priority_dict``, under the component's import path: Scrapy's
    "Enabled ..." log line then names it as a project's own settings would, not ``<class ...>``."""
    components = settings.getdict(name)
    if any(load_object(listed) is component for listed in components):
        return  # the project's priority wins
    components[f"{component.__module__}.{component.__qualname__}"] = priority
    settings.set(name, components, settings.getpriority(name) or 0)
