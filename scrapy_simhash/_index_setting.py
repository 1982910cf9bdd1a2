"""SIMHASH_INDEX in the errors of a crawl: an index that cannot be opened, named by the
setting, a Redis URL's password hidden (:func:`naming_the_index`); the index of one host
that cannot be (:class:`UnusableHostIndex`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from .index import IndexFormatError, IndexUnavailableError, SimhashIndexError, is_shared_spec
from .index._urls import shown_url


class UnusableHostIndex(IndexUnavailableError):
    """The index of one host (``SIMHASH_SCOPE = "domain"``) cannot be opened, for a reason of
    its own: unavailable for its pages, while the store and other hosts' indexes answer."""


def shown_spec(spec: str | None) -> str | None:
    """SIMHASH_INDEX as messages show it: a Redis URL without its password."""
    return shown_url(spec) if spec is not None and is_shared_spec(spec) else spec


@contextmanager
def naming_the_index(spec: str | None) -> Iterator[None]:
    """Opening the index at *spec* at a crawl's start: what the setting asks for and cannot
    be (a path that cannot be a directory, a store of other options, a database Redis does
    not have) is a ``ValueError`` that names SIMHASH_INDEX; an unreachable server stays an
    :class:`IndexUnavailableError`."""
    try:
        yield
    except OSError as exc:  # a path that cannot be a directory, no permission, a full disk
        reason = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
        raise ValueError(f"SIMHASH_INDEX={shown_spec(spec)!r}: cannot open or create the index: {reason}") from exc
    except IndexFormatError as exc:  # a file, a foreign or corrupt store, other options
        raise IndexFormatError(f"SIMHASH_INDEX={shown_spec(spec)!r}: {exc}") from exc
    except IndexUnavailableError:
        raise  # (a server that does not answer: its message names it)
    except SimhashIndexError as exc:  # a disk store in use by another crawl
        raise SimhashIndexError(f"SIMHASH_INDEX={shown_spec(spec)!r}: {exc}") from exc
    except Exception as exc:
        if not _refused_by_redis(exc, spec):
            raise
        raise ValueError(f"SIMHASH_INDEX={shown_spec(spec)!r}: {exc}") from exc


def _refused_by_redis(exc: Exception, spec: str | None) -> bool:
    """Whether *exc* is Redis (or redis-py) refusing what the URL asks for: a database it
    does not have (or ``SELECT`` in a cluster), an argument in the URL's query it does not
    take. (A server that does not answer is an :class:`IndexUnavailableError`.)"""
    if not is_shared_spec(spec):
        return False
    redis = sys.modules.get("redis")  # (loaded by then: the index is a Redis one)
    return (
        isinstance(exc, ValueError)  # redis-py's "Invalid value for 'db' in connection URL"
        or (isinstance(exc, TypeError) and "unexpected keyword argument" in str(exc))  # ?no_such_argument=1
        or (redis is not None and isinstance(exc, redis.ResponseError))
    )
