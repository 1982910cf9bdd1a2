"""Freeing a compaction's old columns a part a step (:mod:`._dropping`).

Freed at once when a compaction ends, the old columns of a 10M-row index (~1.3 GB of NumPy
arrays on huge pages, ~1 ms a GB) and the key lookup's rows added since its last merge (a
``dict`` of up to ``n / 64`` CRCs: 3.6 ms for 156k) held that call 3.7 ms more.
:func:`release_steps` drops one part a step, and empties a dict :data:`DICT_ENTRIES` a step.
"""

from __future__ import annotations

from collections.abc import Iterator

from ._pages import release_later

#: Entries of a dict dropped a step (~0.7 ms).
DICT_ENTRIES = 1 << 15


def release_steps(parts: list[object]) -> Iterator[None]:
    """Steps that free *parts* (which nothing else holds any more), one a step; their large
    arrays' memory goes a slice a call after (:func:`._pages.release_later`)."""
    while parts:
        part = parts.pop()
        while isinstance(part, dict) and part:
            for _ in range(min(DICT_ENTRIES, len(part))):
                part.popitem()
            yield
        release_later(part)
        del part
        yield
