"""Run index tests with the C probe (when it was built) and with the NumPy one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from scrapy_simhash.index import _buckets

KERNELS = ["c", "numpy"]


@contextmanager
def using_kernel(name: str) -> Iterator[None]:
    """Probe with *name*'s kernel inside the block (skip "c" when it was not built).

    A context manager, not a fixture: hypothesis tests may not use function-scoped ones.
    """
    built = _buckets._scan
    if name == "c" and built is None:
        pytest.skip("the C probe (scrapy_simhash.index._scan) was not built: no C compiler at install")
    _buckets._scan = built if name == "c" else None
    try:
        yield
    finally:
        _buckets._scan = built
