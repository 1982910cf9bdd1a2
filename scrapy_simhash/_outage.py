"""A shared index that fails is left alone for a while: a hung server costs one timeout
per pause, not one per page.

Redis that stops answering (its connections open, no replies) makes each call wait out
the socket timeout (5 s) before it fails; a crawl that asked it for every page would
crawl a page every few seconds. After a failed call, the index is not asked again for
:data:`FIRST_PAUSE` seconds (the pages meanwhile are kept unchecked and counted, as
``SIMHASH_ON_INDEX_ERROR = "keep"`` says), then once: one call probes it, and the pages
checked while that probe waits are kept unchecked too (else every page in flight would
wait out the timeout with it: 16 with Scrapy's default concurrency). Each further failure
doubles the pause, up to :data:`MAX_PAUSE`. A call that succeeds ends the outage.
"""

from __future__ import annotations

import time
from typing import Callable

FIRST_PAUSE = 1.0
MAX_PAUSE = 30.0


class Outage:
    """When to ask a failing index again."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._pause = 0.0
        self._until = 0.0
        self._probing = False

    def skipping(self) -> bool:
        """Whether to leave the index alone now: an outage, within its pause or while
        another call probes the index. Past the pause, the first caller is the probe: it
        must then report :meth:`failed`, :meth:`recovered` or :meth:`probe_over`."""
        if self._pause == 0:
            return False
        if self._probing or self._clock() < self._until:
            return True
        self._probing = True
        return False

    def failed(self) -> None:
        """A call failed: pause, longer each time."""
        self._probing = False
        self._pause = min(max(2 * self._pause, FIRST_PAUSE), MAX_PAUSE)
        self._until = self._clock() + self._pause

    def recovered(self) -> None:
        self._probing = False
        self._pause = self._until = 0.0

    def probe_over(self) -> None:
        """A call ended neither way (another error): the next one may probe."""
        self._probing = False

    @property
    def pause(self) -> float:
        """The current pause in seconds (0: no outage)."""
        return self._pause
