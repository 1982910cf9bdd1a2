"""The indexes of one Scrapy component: one per namespace (the crawl, the spider, or each host).

Opened from the parsed settings, on demand (a host's index with its first page), once
each, even when Redis calls of several worker threads ask for it at the same time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from .index import SimhashIndex, is_shared_spec, open_index, uses_disk
from .index.disk import hold_store

if TYPE_CHECKING:
    from .config import SimhashSettings

#: An empty in-memory index sized for SIMHASH_EXPECTED_SIZE holds ~1 MB of bucket
#: directory: one per host would add up, so host indexes start this small (their buckets
#: widen as they grow).
_HOST_INDEX_START_SIZE = 1024
#: What the INFO line at open says of an index (from its ``describe()``), in this order.
_SUMMARY_FIELDS = ("backend", "url", "path", "namespace", "size", "max_distance", "min_similarity", "ttl")


class ComponentIndexes:
    """The open indexes of one component ("page" or "item" *kind*), by namespace."""

    def __init__(self, config: SimhashSettings, kind: str, spider_name: str) -> None:
        self.config = config
        self._base = base_namespace(config, spider_name)
        # Pages keep the plain namespace (so JOBDIR files and Redis keys stay simple);
        # items get their own, so an item never matches the page it came from.
        self._kind = "" if kind == "page" else f"{kind}s"
        self._open: dict[str, SimhashIndex] = {}
        self._opening = threading.Lock()
        # One Redis client (and connection pool) for all the namespaces of the URL: with
        # SIMHASH_SCOPE = "domain", one per host would add up to thousands of sockets.
        self._client: Any = None
        #: Lets go of a disk store held open since the start (:meth:`check_store`).
        self._release_store: Callable[[], None] | None = None

    def for_host(self, host: str) -> SimhashIndex:
        """The index a page of *host* is checked in (the one index, unless scope is "domain")."""
        host = self._scoped(host)
        namespace = self._namespace(host)
        index = self._open.get(namespace)
        if index is None:
            with self._opening:  # checked again: another thread may have opened it meanwhile
                index = self._open.get(namespace)
                if index is None:  # (not `or`: an empty index is falsy, it has a __len__)
                    index = self._open[namespace] = self._open_index(namespace, host)
        return index

    def is_open(self, host: str) -> bool:
        """Whether the index a page of *host* is checked in is open already."""
        return self._namespace(self._scoped(host)) in self._open

    @property
    def opened(self) -> list[SimhashIndex]:
        """The indexes opened so far."""
        return list(self._open.values())

    def check_store(self) -> None:
        """Where each host has its index, opened with the host's first page: check now
        what they all share, so that a store the crawl cannot use stops it at its start,
        as the one index does (a disk store in use by another crawl or made with other
        options, held open until :meth:`close`; a Redis server that does not answer)."""
        spec = self.config.index
        if is_shared_spec(spec):
            client = self._shared_client()
            if client is None:  # no redis-py (an extra): opening the index says what to install
                open_index(spec)
            from .index.redis._client import UnavailableAsIndexError

            with UnavailableAsIndexError(str(spec)):
                client.ping()
        elif uses_disk(spec) and self._release_store is None:
            assert spec is not None
            self._release_store = hold_store(spec, self.config.fingerprint.signature(), self.config.index_reset,
                                             self.config.fsync)

    def close(self) -> None:
        """Flush and close every index, then the shared Redis client (or the disk store
        held open): each is closed even if a flush (or Redis, gone) fails."""
        indexes, self._open = self.opened, {}
        client, self._client = self._client, None
        release_store, self._release_store = self._release_store, None
        with ExitStack() as closing:
            if client is not None:
                closing.callback(client.close)  # (callbacks run last-in first: after the indexes)
            if release_store is not None:
                closing.callback(release_store)
            for index in indexes:
                closing.callback(index.close)
            for index in indexes:
                index.flush()

    def _scoped(self, host: str) -> str:
        """*host* where each host has its index (scope "domain"), else ``""``: the one index."""
        return host if self.config.scope == "domain" else ""

    def _namespace(self, scoped_host: str) -> str:
        return "/".join(part for part in (self._base, scoped_host, self._kind) if part)

    def _open_index(self, namespace: str, host: str) -> SimhashIndex:
        index = self._open_new(namespace, host)
        # Checks call replace_if_new: what it builds on its first call (a 10M-page store's
        # key lookup, ~2 s, unless its snapshot held it) is built now, when the crawl starts or a host's index opens (in a
        # worker thread), not in a check on the reactor.
        index.prepare_key_lookups()
        return index

    def _open_new(self, namespace: str, host: str) -> SimhashIndex:
        config = self.config
        return open_index(
            config.index,
            max_distance=config.max_distance,
            min_similarity=config.min_similarity,
            expected_size=self._expected_size(host),
            namespace=namespace,
            client=self._shared_client(),
            signature=config.fingerprint.signature(),
            reset=config.index_reset,
            ttl=config.ttl,
            fsync_seconds=config.fsync,
        )

    def _expected_size(self, host: str) -> int:
        # A host's index (in memory, or a Redis worker's copy) starts small (see
        # _HOST_INDEX_START_SIZE): its buckets widen as it grows.
        return min(self.config.expected_size, _HOST_INDEX_START_SIZE) if host else self.config.expected_size

    def _shared_client(self) -> Any:
        if not is_shared_spec(self.config.index):
            return None
        if self._client is None:
            try:
                from .index.redis._client import connect_any
            except ImportError:  # no redis-py: open_index says to install the [redis] extra
                return None
            assert self.config.index is not None
            self._client = connect_any(self.config.index)
        return self._client


def base_namespace(config: SimhashSettings, spider_name: str) -> str:
    """The namespace every index of a component starts with: the project's own
    (``SIMHASH_NAMESPACE``, else ``BOT_NAME``) on a shared server, then the spider's name
    with ``SIMHASH_SCOPE = "spider"``. (A disk store is the project's own directory.)"""
    project = config.namespace if is_shared_spec(config.index) else ""
    spider = spider_name if config.scope == "spider" else ""
    return "/".join(part for part in (project, spider) if part)


def summary(info: dict[str, Any]) -> str:
    """One line on an index: where it is, its size, k and table design (not its internals)."""
    parts = [f"{name}={info[name]}" for name in _SUMMARY_FIELDS if info.get(name) not in (None, "")]
    design = info.get("design")
    if isinstance(design, dict):
        parts.append(
            "tables={tables} (blocks of {blocks} bits, {prefix_bits}-bit keys)".format(
                tables=design.get("tables"),
                blocks="/".join(map(str, design.get("blocks", []))),
                prefix_bits=design.get("prefix_bits"),
            )
        )
    return ", ".join(parts)
