"""CPU time of a crawl's stages, for ``bench_crawl_overhead.py``: where a page's time goes.

:func:`install` wraps the functions each stage calls (before the crawler is made) and
adds up their CPU time, each stage's *own* time: a stage called inside another one (the
parse inside the middleware) is taken out of the outer one. What the middleware spends
outside every named stage is its ``glue`` (meta, stats, the keys this crawl checked, and
the wrappers' own ~1 us a call). The async entry points are timed from their start to
their end: with the memory index they never wait, so nothing else runs in between.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any

#: Stage -> the functions it times, as (module, owner in that module or "", attribute).
STAGES: dict[str, tuple[tuple[str, str, str], ...]] = {
    # The spider's too: response.text, then response.selector, whose tree its selectors reuse.
    "decode": (("scrapy.http.response.text", "TextResponse", "text"),),
    "parse": (("scrapy.http.response.text", "TextResponse", "selector"),),
    "extraction": (
        ("scrapy_simhash.core.content", "", "extract_leaving_tree"),
        ("scrapy_simhash.core.content", "", "read_title"),
        ("scrapy_simhash.core.text", "", "page_title"),
        ("scrapy_simhash.core.text", "", "check_html"),
    ),
    "normalisation": (("scrapy_simhash.core.fingerprinter", "", "content_blocks"),),
    "features": (
        ("scrapy_simhash.core.features", "Featurizer", "features"),
        ("scrapy_simhash.core.features", "Featurizer", "shingle_set"),
        ("scrapy_simhash.core.features", "Featurizer", "features_and_shingle_set"),
    ),
    "simhash": (
        ("scrapy_simhash.core.fingerprinter", "", "simhash_margins"),
        ("scrapy_simhash.core.fingerprinter", "", "weakest_bits"),
    ),
    "sketch": (("scrapy_simhash.core.fingerprinter", "", "page_sketch"),),
    "index": (("scrapy_simhash._glue", "NearDuplicateChecker", "_replace_if_new"),),
    "glue": (("scrapy_simhash.middlewares", "SimhashMiddleware", "process_response"),),
    "pipeline": (("scrapy_simhash.pipelines", "SimhashPipeline", "process_item"),),
}
#: The stages that are scrapy-simhash's own work (the spider decodes and parses anyway).
OWN_STAGES = tuple(stage for stage in STAGES if stage not in ("decode", "parse"))


class StageClock:
    """Own CPU seconds per stage; a stack of the stages running, innermost last."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        #: The garbage collector's CPU inside the stages, taken out of them: a collection
        #: comes when the crawl's allocations reach a threshold, and falls in whatever
        #: allocates then (with the plugin, often one of its stages), whoever made the
        #: objects it walks. The crawl's whole GC time is reported apart.
        self.collecting = 0.0
        self._inner: list[float] = []  # per running stage: the CPU its inner stages took

    def enter(self) -> float:
        self._inner.append(0.0)
        return time.process_time()

    def collected(self, spent: float) -> None:
        """A collection took *spent*: out of the running stage, if any."""
        if self._inner:
            self._inner[-1] += spent
            self.collecting += spent

    def leave(self, stage: str, started: float) -> None:
        spent = time.process_time() - started
        self.seconds[stage] += spent - self._inner.pop()
        if self._inner:
            self._inner[-1] += spent


def time_collections(clock: StageClock | None = None) -> list[float]:
    """Add up the CPU seconds of the garbage collector's collections (all of the crawl's,
    wherever they fall: allocations anywhere bring the next one nearer); those inside a
    stage are taken out of *clock*'s stage (:attr:`StageClock.collecting`)."""
    import gc

    total, started = [0.0], [0.0]

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.process_time()
        else:
            spent = time.process_time() - started[0]
            total[0] += spent
            if clock is not None:
                clock.collected(spent)

    gc.callbacks.append(callback)
    return total


def install() -> StageClock:
    """Wrap every stage's functions; return the clock they add to."""
    import importlib

    clock = StageClock()
    for stage, targets in STAGES.items():
        for module_name, owner_name, attribute in targets:
            module = importlib.import_module(module_name)
            owner = getattr(module, owner_name) if owner_name else module
            found = vars(owner).get(attribute) if owner_name else None
            if isinstance(found, property):  # (response.text, response.selector)
                setattr(owner, attribute, property(_timed(found.fget, stage, clock)))  # type: ignore[arg-type]
            else:
                setattr(owner, attribute, _timed(getattr(owner, attribute), stage, clock))
    return clock


def _timed(function: Callable[..., Any], stage: str, clock: StageClock) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def timed_coroutine(*args: Any, **kwargs: Any) -> Any:
            started = clock.enter()
            try:
                return await function(*args, **kwargs)
            finally:
                clock.leave(stage, started)

        return timed_coroutine

    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = clock.enter()
        try:
            return function(*args, **kwargs)
        finally:
            clock.leave(stage, started)

    return timed
