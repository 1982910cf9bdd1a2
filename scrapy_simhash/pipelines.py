"""The item pipeline that drops near-duplicate items."""

from __future__ import annotations

import logging
import html
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem

from ._glue import NearDuplicateChecker
from .config import enabled_settings
from .core.fingerprint import from_hex
from .core.sketch import check_sketch
from .exceptions import NearDuplicateItem
from .index import IndexUnavailableError
from .middlewares import META_KEY

if TYPE_CHECKING:
    from typing_extensions import Self

    from scrapy.crawler import Crawler

    from .core.fingerprinter import FingerprintResult

# A field value is treated as HTML when it starts with a tag (or a comment/doctype).
_LOOKS_LIKE_HTML = re.compile(r"^\s*<[!/a-zA-Z]")

logger = logging.getLogger(__name__)


class SimhashPipeline:
    """Drop items whose text nearly duplicates an earlier item's.

    An item is judged, in this order, by:

    1. its ``simhash`` field, when the spider copied ``response.meta["simhash"]``
       into it (``item["simhash"] = response.meta["simhash"]``; declare
       ``simhash = scrapy.Field()`` on Item classes): an item of a page the
       middleware marked as a near-duplicate (``SIMHASH_ACTION = "mark"``) is
       dropped; otherwise the page's fingerprint is reused, not computed again
       (so copy it only into the one item that stands for its page);
    2. the fields named in ``SIMHASH_ITEM_FIELDS`` (strings or lists of strings),
       joined; when one of them starts with a tag they are read as one HTML
       document (main text extracted), otherwise as plain text.

    Items with neither pass untouched (``simhash/items/skipped/no_fields``).
    Items are checked in their own index namespace, under their ``url`` field
    (or ``item-<digest of their fields>``, :func:`content_key`). A drop raises :exc:`~scrapy_simhash.NearDuplicateItem`, a
    :exc:`~scrapy.exceptions.DropItem` logged at DEBUG. Stats: ``simhash/items/...``.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.config = enabled_settings(crawler.settings)
        self._checker = NearDuplicateChecker(
            crawler, self.config, kind="item", stats_prefix="simhash/items", logger=logger
        )
        if not self.config.item_fields:  # (the add-on's, in "mark" mode; a project's by mistake)
            logger.info(
                "SimhashPipeline checks only the items that carry their page's verdict in a %(field)r field"
                " (SIMHASH_ITEM_FIELDS is empty): others pass, counted simhash/items/skipped/no_fields",
                {"field": META_KEY},
            )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        key = self._key(adapter)
        page = carried_page(adapter.get(META_KEY))
        if page is not None and page.duplicate_of is not None:
            self._checker.count("unchanged" if page.duplicate_of == key else "dropped")
            raise NearDuplicateItem(key, page.fingerprint, page.duplicate_of, page.distance or 0, page.similarity)
        found: CarriedPage | FingerprintResult | None = page or self._fingerprint(adapter, key)
        if found is None or found.fingerprint is None:
            return item
        host = self._checker.host_of(key)
        try:
            match = await self._checker.check(found.fingerprint, key, host, found.wildcard, found.sketch)
        except IndexUnavailableError as exc:
            raise DropItem(f"Simhash index unavailable (SIMHASH_ON_INDEX_ERROR='fail'): {exc}") from exc
        if match is not None:
            raise NearDuplicateItem(key, found.fingerprint, match.key, match.distance, match.similarity)
        return item

    def _fingerprint(self, adapter: ItemAdapter, key: str) -> FingerprintResult | None:
        """The fingerprint of the item's SIMHASH_ITEM_FIELDS."""
        values = self._field_values(adapter)
        if not values:
            self._checker.count("skipped/no_fields")
            return None
        if not any(_LOOKS_LIKE_HTML.match(value) for value in values):
            return self._checker.fingerprint_text("\n".join(values))
        # Some fields are HTML: read them all as one document, plain text as paragraphs.
        document = "\n".join(
            value if _LOOKS_LIKE_HTML.match(value) else f"<p>{html.escape(value)}</p>" for value in values
        )
        return self._checker.fingerprint_html(document, key if "://" in key else None)

    def _field_values(self, adapter: ItemAdapter) -> list[str]:
        values: list[str] = []
        for name in self.config.item_fields:
            value = adapter.get(name)
            if isinstance(value, str):
                values.append(value)
            elif isinstance(value, (list, tuple)):
                values.extend(part for part in value if isinstance(part, str))
        return [value for value in values if value.strip()]

    def _key(self, adapter: ItemAdapter) -> str:
        url = adapter.get("url")
        return url if isinstance(url, str) and url else content_key(adapter)


def content_key(adapter: ItemAdapter) -> str:
    """The key of an item without a ``url``: ``item-`` and a digest of its fields, the same
    in every run and crawler (a count would repeat across them and match in a shared index)."""
    fields = {name: _canonical(value) for name, value in adapter.items() if name != META_KEY}
    text = json.dumps(fields, sort_keys=True, default=repr, ensure_ascii=False)
    return "item-" + hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def _canonical(value: Any) -> Any:
    """*value* as JSON sorts it the same in every process: a dict whose keys cannot be
    sorted together (``1`` and ``"a"``) with them as the strings JSON makes of them, a set's
    members in the order of their JSON (``repr`` of a set of str follows the process's hash
    seed). Plain values, and dicts of keys that sort, stay as they are: the keys of earlier crawls."""
    if isinstance(value, dict):
        items = {key: _canonical(item) for key, item in value.items()}
        if all(isinstance(key, _JSON_KEYS) for key in items):
            try:
                sorted(items)
                return items
            except TypeError:
                pass
        return {_json_key(key): item for key, item in items.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(item) for item in value), key=_sorting_text)
    return value


#: The dict keys JSON writes (as strings): others (a tuple, bytes) it refuses, even with ``default``.
_JSON_KEYS = (str, int, float, bool, type(None))


def _json_key(key: Any) -> str:
    """The string JSON writes for a dict key (``1`` -> ``"1"``, ``None`` -> ``"null"``), or
    its ``repr`` where JSON takes none (a tuple)."""
    if isinstance(key, str):
        return key
    return json.dumps(key) if isinstance(key, (int, float)) or key is None else repr(key)


def _sorting_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr, ensure_ascii=False)


class CarriedPage(NamedTuple):
    fingerprint: int
    wildcard: int
    sketch: bytes | None
    duplicate_of: str | None
    distance: int | None
    similarity: float | None


def carried_page(value: Any) -> CarriedPage | None:
    """What an item carries from ``response.meta["simhash"]``, or ``None`` if nothing valid."""
    if not isinstance(value, dict):
        return None
    try:
        fingerprint = from_hex(value["fingerprint"])
        wildcard = from_hex(value.get("wildcard") or "0")
        sketch = check_sketch(bytes.fromhex(value["sketch"])) if value.get("sketch") else None
    except (KeyError, TypeError, ValueError):
        return None
    return CarriedPage(
        fingerprint, wildcard, sketch, value.get("duplicate_of"), value.get("distance"), value.get("similarity")
    )
