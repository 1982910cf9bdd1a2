"""Run core tests on the Python twins of the C modules (as where they were not built)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from scrapy_simhash.core import content, features, fingerprint, sketch, templates, text

#: Where each C module is looked up (None there: the Python code runs).
_USERS: dict[str, tuple[tuple[ModuleType, str], ...]] = {
    "extraction": ((content, "_extract"), (text, "_extract"), (templates, "_extract")),
    "features": ((features, "_features"), (fingerprint, "_features"), (sketch, "_features")),
}


@contextmanager
def python_instead_of(name: str) -> Iterator[None]:
    """Inside the block, the core runs the Python twin of the C module *name*
    ("extraction": extraction, normalisation and block keys; "features": features, votes and sketches).

    A context manager, not a fixture: hypothesis tests may not use function-scoped ones.
    """
    saved = [getattr(module, attribute) for module, attribute in _USERS[name]]
    for module, attribute in _USERS[name]:
        setattr(module, attribute, None)
    try:
        yield
    finally:
        for (module, attribute), value in zip(_USERS[name], saved):
            setattr(module, attribute, value)
