"""Indexes of 64-bit fingerprints searchable by Hamming distance, and :func:`open_index`."""

from __future__ import annotations

import functools
import logging
import os
import re
from typing import Any
from urllib.parse import urlsplit

from .base import (
    DEFAULT_MAX_DISTANCE,
    DEFAULT_MIN_SIMILARITY,
    IndexFormatError,
    IndexUnavailableError,
    Match,
    SimhashIndex,
    SimhashIndexError,
    Verdict,
    check_ttl,
)
from ._diskstore import LOG_NAME
from ._logfile import read_header
from ._urls import shown_url
from .disk import DiskIndex
from .memory import MemoryIndex

logger = logging.getLogger(__name__)
_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
# "scheme://": a URL, as opposed to a path (which may hold ":" but not a scheme first).
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# A Redis URL with a slash missing ("redis:/host:6379", "unix:/tmp/redis.sock", "redis:host").
_MISTYPED_URL = re.compile(r"^(?:rediss?|unix):(?!//)", re.IGNORECASE)
# The path of a redis:// URL: none, or the database number.
_DATABASE_PATH = re.compile(r"(/\d*)?/?")

__all__ = [
    "DiskIndex",
    "IndexFormatError",
    "IndexUnavailableError",
    "Match",
    "MemoryIndex",
    "SimhashIndex",
    "SimhashIndexError",
    "Verdict",
    "check_index_spec",
    "is_shared_spec",
    "open_index",
    "uses_disk",
]


def open_index(
    spec: str | os.PathLike[str] | None = None,
    *,
    max_distance: int = DEFAULT_MAX_DISTANCE,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    expected_size: int = 1_000_000,
    namespace: str = "",
    signature: str = "",
    reset: bool = False,
    ttl: float | None = None,
    create: bool = True,
    fsync_seconds: float | None = None,
    client: Any = None,
) -> SimhashIndex:
    """Open the index that *spec* names.

    * ``None`` or ``"memory"``: a fresh in-memory index.
    * a ``redis://`` / ``rediss://`` URL: the shared Redis index.
    * anything else: a path to the on-disk store, a directory (created if missing).

    *namespace* keeps indexes of several scopes (spiders, domains) apart in one
    store; *min_similarity* is the Jaccard similarity two sketches must estimate to
    confirm a match (:class:`SimhashIndex`); *signature*
    (:meth:`FingerprintOptions.signature`) lets a stored index refuse fingerprints
    made with other options; *reset* starts it empty; *ttl*
    (seconds) lets an entry expire where the backend supports it; *fsync_seconds* makes a
    disk store ``fsync`` at most that long after a write (0: after each; ``None``: only when
    flushed and closed); *client* is a ``redis.Redis`` to share between the indexes of
    one URL (its owner closes it); *create* false
    refuses a Redis namespace that does not exist yet (:exc:`SimhashIndexError`)
    instead of making it empty (tools that only read a path open it read-only,
    :class:`DiskIndex`, and check it exists themselves).
    """
    text = "memory" if spec is None else check_index_spec(spec)
    if ttl is not None:  # checked everywhere: where it is ignored, a bad one is still a mistake
        check_ttl(ttl)
    if fsync_seconds is not None and (text == "memory" or is_shared_spec(text)):
        _warn_fsync_ignored("Redis" if is_shared_spec(text) else "memory")
    if is_shared_spec(text):
        return _open_redis(text, max_distance, min_similarity, expected_size, namespace, signature, reset, ttl,
                           create, client)
    if ttl is not None:
        _warn_ttl_ignored("memory" if text == "memory" else "disk")
    if text == "memory":
        return MemoryIndex(max_distance, expected_size=expected_size, min_similarity=min_similarity)
    return DiskIndex(text, max_distance, expected_size=expected_size, namespace=namespace, fsync_seconds=fsync_seconds,
                     signature=signature, reset=reset, min_similarity=min_similarity)


def check_index_spec(spec: object) -> str:
    """*spec* as a string if :func:`open_index` can open it, else ``ValueError`` saying why.

    >>> check_index_spec("htps://redis.internal")
    Traceback (most recent call last):
    ...
    ValueError: 'htps://redis.internal' is neither a redis://, rediss:// or unix:// URL nor a path
    """
    if not isinstance(spec, (str, os.PathLike)):
        raise ValueError(f"expected 'memory', a path or a Redis URL, not {spec!r}")
    text = os.fspath(spec)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"expected 'memory', a path or a Redis URL, not {spec!r}")
    schemes = ", ".join(_REDIS_SCHEMES[:-1]) + " or " + _REDIS_SCHEMES[-1]
    if text != text.lstrip() and (_URL.match(text.lstrip()) or _MISTYPED_URL.match(text.lstrip())):
        raise ValueError(f"{shown_url(text)!r}: a URL with spaces before it (else a directory of that name)")
    if _URL.match(text) and not text.startswith(_REDIS_SCHEMES):
        raise ValueError(f"{shown_url(text)!r} is neither a {schemes} URL nor a path")
    if _MISTYPED_URL.match(text):  # (else a directory of that name: each crawler of a fleet its own index)
        raise ValueError(
            f"{shown_url(text)!r} looks like a Redis URL, mistyped: {schemes} (redis://host:6379/0);"
            f" a directory of that name: ./{shown_url(text)}"
        )
    if text.startswith(("redis://", "rediss://")):
        _check_redis_url(text)
    return text


def _check_redis_url(url: str) -> None:
    """What redis-py would take silently (a path that is no database number: database 0,
    another crawl's maybe) or refuse deep in a connection (a port that is no number)."""
    parts = urlsplit(url)
    # (a password that holds one of "#?/" unencoded cuts the URL there: say how to write it)
    hint = "; a password holding '#', '?' or '/' is written percent-encoded (%23, %3F, %2F)" if "@" in url else ""
    if not _DATABASE_PATH.fullmatch(parts.path):
        raise ValueError(f"{shown_url(url)!r}: a Redis URL's path is its database number (redis://host:6379/0){hint}")
    try:
        parts.port
    except ValueError:  # (urllib's message quotes what it read: part of a password, maybe)
        raise ValueError(f"{shown_url(url)!r}: its port is not a number from 0 to 65535{hint}") from None


def is_shared_spec(spec: str | os.PathLike[str] | None) -> bool:
    """Whether *spec* names a network index (Redis), whose every call may block."""
    return spec is not None and os.fspath(spec).startswith(_REDIS_SCHEMES)


def uses_disk(spec: str | os.PathLike[str] | None) -> bool:
    """Whether *spec* names an on-disk store (a path: neither memory nor Redis)."""
    return spec is not None and os.fspath(spec) != "memory" and not is_shared_spec(spec)


def stored_signature(spec: str | os.PathLike[str] | None, namespace: str = "") -> str:
    """The fingerprint options (:meth:`FingerprintOptions.signature`) an existing index was
    made with, read from its header or meta alone, without loading its entries; ``""``
    when there is none yet, or it cannot be read (opening it says why)."""
    if spec is None or os.fspath(spec) == "memory":
        return ""
    if is_shared_spec(spec):
        return _redis_signature(os.fspath(spec), namespace)
    try:
        return str(read_header(os.path.join(spec, LOG_NAME)).get("signature") or "")
    except (OSError, SimhashIndexError):
        return ""


def _redis_signature(url: str, namespace: str) -> str:
    try:
        import redis

        from .redis._client import connect
        from .redis._layout import Names
    except ImportError:
        return ""
    try:
        with connect(url) as client:  # (a cluster node answers MOVED for another's slot: "")
            value = client.hget(Names.of(namespace).meta, "signature")
    except redis.RedisError:
        return ""
    return value.decode() if isinstance(value, bytes) else ""


@functools.cache  # once per process, not once per namespace
def _warn_ttl_ignored(kind: str) -> None:
    logger.warning("Entries never expire in the %(kind)s index: SIMHASH_TTL ignored (only Redis has TTL)",
                   {"kind": kind})


@functools.cache
def _warn_fsync_ignored(kind: str) -> None:
    logger.warning("The %(kind)s index writes no files: SIMHASH_FSYNC ignored (only a disk store fsyncs)",
                   {"kind": kind})


def _open_redis(url: str, max_distance: int, min_similarity: float, expected_size: int, namespace: str,
                signature: str, reset: bool, ttl: float | None, create: bool, client: Any) -> SimhashIndex:
    try:
        from redis.cluster import RedisCluster

        from .redis import RedisIndex
        from .redis._client import is_cluster
        from .redis.cluster import ClusterIndex
    except ImportError as exc:
        raise ImportError(f"the Redis index needs redis-py: install the package's [redis] extra ({exc})") from exc
    # The same URL names one server or any node of a cluster: the node says which.
    cluster = isinstance(client, RedisCluster) if client is not None else is_cluster(url)
    return (ClusterIndex if cluster else RedisIndex)(url, max_distance, expected_size=expected_size, namespace=namespace,
                      signature=signature, reset=reset, ttl=ttl, create=create, min_similarity=min_similarity,
                      client=client)
