"""Only the optional C extensions: everything else is in setup.cfg.

Each is built when a C compiler and Python's headers are there; without them the
install goes on and the same code runs in Python (same results, slower):

- ``scrapy_simhash.index._scan``: the index probe (else NumPy);
- ``scrapy_simhash.core._features``: tokens -> shingle hashes and counts (else regex + NumPy);
- ``scrapy_simhash.core._extract``: main-content extraction on lxml's tree (else lxml calls
  from Python). It reads libxml2's nodes directly, with the headers lxml ships.
"""

from setuptools import Extension, setup


def _lxml_include_dirs() -> list[str]:
    try:
        import lxml
    except ImportError:  # no lxml in the build environment: that extension is skipped
        return []
    return list(lxml.get_include())


_LXML_INCLUDES = _lxml_include_dirs()

setup(
    ext_modules=[
        Extension("scrapy_simhash.index._scan", ["scrapy_simhash/index/_scan.c"], optional=True),
        Extension("scrapy_simhash.core._features", ["scrapy_simhash/core/_features.c"], optional=True),
        *(
            [
                Extension(
                    "scrapy_simhash.core._extract",
                    ["scrapy_simhash/core/_extract.c"],
                    include_dirs=_LXML_INCLUDES,
                    optional=True,
                )
            ]
            if _LXML_INCLUDES
            else []
        ),
    ]
)
