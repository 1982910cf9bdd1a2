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

A call let through may still wait for a worker thread (the event loop's executor has 6
on 2 cores), behind calls that are waiting out the timeout. Taken up after one of them
failed, it must not ask in turn: hundreds of checks let through in the first seconds of
a hang would each wait out the timeout, 6 at a time, and the last items of a crawl then
passed its pipeline at about one a second. So a call looks again when its thread takes
it up (:meth:`Outage.began_since`), and a failure is noted in the thread where it
happens (the thread takes up its next call before the event loop hears of it): the
outage's state is locked.
"""

from __future__ import annotations

import threading
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
        self._failures = 0
        self._lock = threading.Lock()

    def skipping(self) -> bool:
        """Whether to leave the index alone now: an outage, within its pause or while
        another call probes the index. Past the pause, the first caller is the probe: it
        must then report :meth:`failed`, :meth:`recovered` or :meth:`probe_over`."""
        if self._pause == 0:  # (no outage: not worth the lock)
            return False
        with self._lock:
            if self._probing or self._clock() < self._until:
                return True
            self._probing = True
            return False

    @property
    def failures(self) -> int:
        """The calls failed so far: what a call let through passes to :meth:`began_since`."""
        return self._failures

    def began_since(self, failures: int) -> bool:
        """Whether an outage began, and goes on, since a call was let through when
        :attr:`failures` was *failures*: taken up by its thread only now, that call leaves
        the index alone."""
        with self._lock:
            return self._failures != failures and self._pause > 0

    def failed(self) -> None:
        """A call failed: pause, longer each time."""
        with self._lock:
            self._failures += 1
            self._probing = False
            self._pause = min(max(2 * self._pause, FIRST_PAUSE), MAX_PAUSE)
            self._until = self._clock() + self._pause

    def recovered(self) -> None:
        with self._lock:
            self._probing = False
            self._pause = self._until = 0.0

    def probe_over(self) -> None:
        """A call ended neither way (another error): the next one may probe."""
        with self._lock:
            self._probing = False

    @property
    def pause(self) -> float:
        """The current pause in seconds (0: no outage)."""
        return self._pause
