"""A Redis URL as messages and logs show it: without its password.

Read as text, not parsed: the URLs to show are also those that did not parse (a port that
is no number, a scheme mistyped), and a password may hold what a parser splits on (``#``,
``/``). redis-py also takes the password (and user name) in the query: ``?password=``.
"""

from __future__ import annotations

import re

_QUERY_SECRET = re.compile(r"([?&](?:password|username)=)[^&#]*", re.IGNORECASE)


def shown_url(url: str) -> str:
    """*url* with its password (and a user name given in its query) as ``***``.

    >>> shown_url("redis://user:s3cret@host:6379/0"), shown_url("redis://:se#c/ret@host:63a9/0")
    ('redis://user:***@host:6379/0', 'redis://:***@host:63a9/0')
    >>> shown_url("unix:///run/redis.sock?db=0&password=s3cret"), shown_url("redis:/u:s3cret@host")
    ('unix:///run/redis.sock?db=0&password=***', 'redis:/u:***@host')
    """
    url = _QUERY_SECRET.sub(r"\1***", url)
    at = url.rfind("@")
    if at < 0:
        return url
    scheme_end = url.find("//")
    start = scheme_end + 2 if 0 <= scheme_end < at else url.find(":") + 1
    colon = url.find(":", start, at)
    return f"{url[: colon + 1]}***{url[at:]}" if colon >= 0 else url
