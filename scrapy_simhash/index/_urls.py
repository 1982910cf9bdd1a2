"""A Redis URL as messages and logs show it: without its password.

Read as text where it does not parse: the URLs to show are also those that did not (a port
that is no number, a scheme mistyped), and a password may hold what a parser splits on
(``#``, ``/``, ``//``). redis-py also takes the password (and user name) in the query, its
names percent-decoded: ``?password=``, ``?pass%77ord=``.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

_QUERY_PAIR = re.compile(r"([?&])([^=&#]*)=([^&#]*)")
_SECRET_NAMES = frozenset({"password", "username"})
#: The scheme and the slashes after it ("redis://", "redis:/" mistyped).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/*")
#: A host and port with no user in front: "127.0.0.1:6379", "[::1]:6379", "host".
_PLAIN_HOST = re.compile(r"(\[[0-9A-Fa-f:.]*\]|[^:@]*)(:\d*)?")


def shown_url(url: str) -> str:
    """*url* with its password (and a user name given in its query) as ``***``.

    >>> shown_url("redis://user:s3cret@host:6379/0"), shown_url("redis://:se#c/ret@host:63a9/0")
    ('redis://user:***@host:6379/0', 'redis://:***@host:63a9/0')
    >>> shown_url("unix:///run/redis.sock?db=0&pass%77ord=s3cret"), shown_url("redis:/u:pa//ss@host")
    ('unix:///run/redis.sock?db=0&pass%77ord=***', 'redis:/u:***@host')
    >>> shown_url("redis://127.0.0.1:6379/0?client_name=a@b")
    'redis://127.0.0.1:6379/0?client_name=a@b'
    """
    url = _QUERY_PAIR.sub(_hide_secret, url)
    scheme = _SCHEME.match(url, len(url) - len(url.lstrip()))  # (spaces before it: a URL all the same)
    start = scheme.end() if scheme else 0
    at = _user_end(url, start)
    colon = url.find(":", start, at) if at >= 0 else -1
    return f"{url[: colon + 1]}***{url[at:]}" if colon >= 0 else url


def _hide_secret(pair: re.Match[str]) -> str:
    separator, name, _ = pair.groups()
    return f"{separator}{name}=***" if unquote(name).lower() in _SECRET_NAMES else pair.group(0)


def _user_end(url: str, start: int) -> int:
    """Where the user part of *url* ends (its ``@``), or -1 when it has none. The host part
    ends at the first ``/``, ``?`` or ``#``; one that is no plain host and port holds a
    password that holds one of them: its ``@`` is then the last one."""
    ends = [at for at in (url.find(mark, start) for mark in "/?#") if at >= 0]
    host = url[start : min(ends, default=len(url))]
    if "@" in host:
        return start + host.rfind("@")
    return -1 if _PLAIN_HOST.fullmatch(host) else url.rfind("@")
