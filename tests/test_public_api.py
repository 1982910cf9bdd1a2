"""The public API: a sorted ``__all__`` whose every name imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

import scrapy_simhash


def test_all_is_sorted() -> None:
    assert scrapy_simhash.__all__ == sorted(scrapy_simhash.__all__)


@pytest.mark.parametrize("name", scrapy_simhash.__all__)
def test_every_name_imports(name: str) -> None:
    assert getattr(scrapy_simhash, name) is not None


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        scrapy_simhash.NoSuchThing  # noqa: B018


def test_the_core_imports_without_scrapy() -> None:
    code = "import sys, scrapy_simhash, scrapy_simhash.index; print('scrapy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_the_addon_path_of_the_readme_loads() -> None:
    from scrapy.utils.misc import load_object

    assert load_object("scrapy_simhash.Addon") is scrapy_simhash.Addon
