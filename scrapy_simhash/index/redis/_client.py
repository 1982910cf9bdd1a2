"""The connection side of the Redis index: connect, map failures, keep secrets out.

Failures that mean "try again later" (down, unreachable, loading, out of memory, a
read-only replica) become :class:`IndexUnavailableError`; the Scrapy glue applies
``SIMHASH_ON_INDEX_ERROR`` to them. Every call reconnects by itself.
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from types import TracebackType

import redis
from redis.backoff import ExponentialBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from .._urls import shown_url
from ..base import IndexUnavailableError

_UNAVAILABLE = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.OutOfMemoryError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.MasterDownError,
    redis.exceptions.TryAgainError,
    # a cluster with slots not served (ClusterDownError, a node down), or its redirections
    # or retries exhausted
    redis.exceptions.ClusterError,
    redis.exceptions.SlotNotCoveredError,
)
# The same conditions met inside a script come back as a script error; Redis
# refuses only a script's first write when out of memory, so nothing half-written.
_UNAVAILABLE_REPLY = re.compile(r"-(OOM|READONLY|MASTERDOWN|LOADING|BUSY)\b")
# What the scripts answer when the namespace's meta hash is gone (restart, flush).
NO_META = "SIMHASH_NOMETA"


def connect(url: str) -> redis.Redis:
    """A client for *url*, with its thread-safe connection pool."""
    # A few quick retries ride out a blip; a dead server fails in about a second,
    # and the next call tries again, so the index recovers when Redis is back.
    # Not on a timeout: the script may have run, and running check-and-add again
    # would find the page's own entry and drop the page as a copy of itself.
    retry = Retry(ExponentialBackoff(cap=0.5, base=0.05), retries=2,
                  supported_errors=(redis.ConnectionError,))
    return redis.Redis.from_url(
        url,
        socket_timeout=5,
        socket_connect_timeout=2,
        retry=retry,
        retry_on_error=[redis.ConnectionError],
        health_check_interval=30,
    )


def connect_cluster(url: str) -> RedisCluster:
    """A cluster client for *url* (any node): it finds the others, follows ``MOVED``/``ASK``,
    and keeps a connection pool per node."""
    return RedisCluster.from_url(url, socket_timeout=5, socket_connect_timeout=2)


def is_cluster(url: str) -> bool:
    """Whether the node *url* names is in a Redis Cluster (``cluster_enabled`` of INFO);
    ``False`` when it cannot be asked now (opening the index then says it is unavailable)."""
    client = connect(url)
    try:
        return _cluster_enabled(client)
    finally:
        client.connection_pool.disconnect()  # (not left open beside the crawl's own pool)


def connect_any(url: str) -> redis.Redis | RedisCluster:
    """:func:`connect_cluster` where *url* names a node of a cluster, else :func:`connect`."""
    return connect_cluster(url) if is_cluster(url) else connect(url)


def _cluster_enabled(client: redis.Redis) -> bool:
    try:
        return bool(client.info("cluster").get("cluster_enabled"))
    except redis.RedisError:
        return False


class UnavailableAsIndexError(AbstractContextManager[None]):
    """Turn Redis' "try again later" failures into :class:`IndexUnavailableError`.

    A class, not ``@contextmanager``: it is entered on every call of the index, and a
    generator-based one costs about a microsecond more each time.
    """

    def __init__(self, url: str) -> None:
        self._url = url

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is None:
            return
        if isinstance(exc, _UNAVAILABLE) or (
            isinstance(exc, redis.ResponseError) and _UNAVAILABLE_REPLY.search(str(exc))
        ):
            raise IndexUnavailableError(f"Redis at {safe_url(self._url)} is unavailable: {exc}") from exc


def is_no_meta(reply: object) -> bool:
    return isinstance(reply, redis.ResponseError) and NO_META in str(reply)


def safe_url(url: str) -> str:
    """*url* without its password, for messages (:func:`.._urls.shown_url`).

    >>> safe_url("redis://user:secret@host:6379/0")
    'redis://user:***@host:6379/0'
    """
    return shown_url(url)


def glob_escape(text: str) -> str:
    """*text* matched literally by SCAN's MATCH pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
