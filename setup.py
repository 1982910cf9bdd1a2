"""Only the optional C extensions: everything else is in setup.cfg.

Each is built when a C compiler and Python's headers are there; without them the
install goes on and the same code runs in Python (same results, slower):

- ``scrapy_simhash.index._scan`` (``index/scan_c/``): the index probe (else NumPy);
- ``scrapy_simhash.core._features`` (``core/features_c/``): tokens -> shingle hashes and
  counts, SimHash votes and the wildcard's weakest bits (else regex + NumPy);
- ``scrapy_simhash.core._extract`` (``core/extract_c/``): main-content extraction on lxml's
  tree (else lxml calls from Python). It reads libxml2's nodes directly, with the
  headers lxml ships, so lxml is a build requirement (pyproject.toml).
"""

from pathlib import Path

from setuptools import Extension, setup

CORE = Path("scrapy_simhash", "core")
INDEX = Path("scrapy_simhash", "index")


def _lxml_include_dirs() -> list[str]:
    try:
        import lxml
    except ImportError:  # no lxml in the build environment: that extension is skipped
        return []
    return list(lxml.get_include())


def _lxml_version() -> str:
    import lxml

    return lxml.__version__


def _c_extension(name: str, folder: Path, **options: object) -> Extension:
    """One module from the .c files of *folder*; its headers rebuild it when they change."""
    return Extension(
        name,
        sources=sorted(str(path) for path in folder.glob("*.c")),
        depends=sorted(str(path) for path in folder.glob("*.h")),
        optional=True,
        **options,
    )


_LXML_INCLUDES = _lxml_include_dirs()

setup(
    ext_modules=[
        _c_extension("scrapy_simhash.index._scan", INDEX / "scan_c"),
        _c_extension("scrapy_simhash.core._features", CORE / "features_c"),
        # The lxml it is built against is recorded: content.py runs it only with that lxml
        # (and its libxml2), whose structures it reads.
        *([_c_extension("scrapy_simhash.core._extract", CORE / "extract_c", include_dirs=_LXML_INCLUDES,
                        define_macros=[("SIMHASH_BUILT_LXML", f'"{_lxml_version()}"')])]
          if _LXML_INCLUDES else []),
    ]
)
