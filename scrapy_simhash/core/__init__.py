"""The pure core: HTML -> text -> features -> 64-bit SimHash.

Nothing in this package imports Scrapy, so it can be used (and tested) on its own.
"""
