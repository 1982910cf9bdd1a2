"""Only the optional C extension: everything else is in setup.cfg.

``scrapy_simhash.index._scan`` (the index probe in C) is built when a C compiler is
there; without one the install goes on and the index uses NumPy (same results, slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("scrapy_simhash.index._scan", ["scrapy_simhash/index/_scan.c"], optional=True),
    ]
)
