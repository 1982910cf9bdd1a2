"""The examples in the package's docstrings run, and stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import scrapy_simhash

# __main__ runs the command line when imported.
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(scrapy_simhash.__path__, "scrapy_simhash.")
    if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failed, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failed == 0
