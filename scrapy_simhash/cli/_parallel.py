"""Fingerprint pages on many cores or machines, in input order, for ``dedup``.

Fingerprinting is ~97% of ``dedup``'s time (about 1 ms a page, where a check of the
index takes ~25 us), and each page's fingerprint is its own business: it is what runs
in parallel, on local processes (``--jobs N``) or a Dask cluster (``--engine dask``).
The check-and-record that follows stays one pass in input order, in this process, so
every verdict is exactly the one of a local run (crawl order is the semantics).

Pages go out in chunks, a bounded number of chunks ahead (memory stays flat over a
100M-page archive), and come back in order.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import ExitStack
from itertools import islice
from typing import Any, NamedTuple, TypeVar

from ..core.fingerprinter import Fingerprinter, FingerprintOptions, FingerprintResult

#: Pages a task fingerprints: enough to make the round trip small beside the work (~0.3 s).
CHUNK_PAGES = 256
#: Tasks in flight per worker: the workers never wait for the reader, memory stays bounded.
_AHEAD_PER_WORKER = 3
ENGINES = ("local", "dask")

T = TypeVar("T")


class PageInput(NamedTuple):
    """What a worker needs of a record: its HTML (or plain text), URL and declared encoding."""

    html: str | bytes | None
    text: str | None
    url: str | None
    encoding: str | None


def fingerprint_all(
    options: FingerprintOptions, pages: Iterable[T], to_input: Callable[[T], PageInput], *,
    engine: str = "local", jobs: int = 1, scheduler: str | None = None,
) -> Iterator[tuple[T, FingerprintResult]]:
    """Each page with its fingerprint, in input order. ``engine="local"`` with ``jobs=1``
    runs here; otherwise chunks go to *jobs* local processes, or to the Dask cluster at
    *scheduler* (a local one of *jobs* workers when ``None``)."""
    if engine == "local" and jobs == 1:
        fingerprinter = Fingerprinter(options)
        for page in pages:
            yield page, fingerprint_input(fingerprinter, to_input(page))
        return
    with ExitStack() as stack:
        submit, workers = _executor(stack, engine, jobs, scheduler)
        for chunk, results in _in_order(submit, options, _chunks(pages), to_input, _AHEAD_PER_WORKER * workers):
            yield from zip(chunk, results)


def fingerprint_input(fingerprinter: Fingerprinter, page: PageInput) -> FingerprintResult:
    if page.text is not None:
        return fingerprinter.from_text(page.text)
    return fingerprinter.from_html(page.html or "", url=page.url, encoding=page.encoding)


def fingerprint_chunk(options: FingerprintOptions, chunk: list[PageInput]) -> list[FingerprintResult]:
    """A worker's task: one :class:`Fingerprinter` per process and options (its caches warm)."""
    fingerprinter = _FINGERPRINTERS.get(options)
    if fingerprinter is None:
        fingerprinter = _FINGERPRINTERS[options] = Fingerprinter(options)
    return [fingerprint_input(fingerprinter, page) for page in chunk]


_FINGERPRINTERS: dict[FingerprintOptions, Fingerprinter] = {}


def _executor(stack: ExitStack, engine: str, jobs: int, scheduler: str | None) -> tuple[Callable[..., Any], int]:
    """``submit(fn, *args) -> future`` of the engine, and how many workers it has."""
    if engine == "local":
        pool = stack.enter_context(ProcessPoolExecutor(jobs))
        return pool.submit, jobs
    if engine != "dask":
        raise ValueError(f"--engine must be one of {ENGINES}, not {engine!r}")
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise ImportError("--engine dask needs Dask: pip install 'scrapy-simhash[dask]'") from exc
    # Chunks of pages travel with their tasks, a few MB each, which Dask warns of.
    stack.enter_context(warnings.catch_warnings())
    warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
    if scheduler is None:
        # silence_logs: a worker that heartbeats while the cluster shuts down logs an ERROR
        # (CommClosedError) after a run that went well; a task's error reaches us as its
        # future's exception all the same.
        cluster = stack.enter_context(LocalCluster(
            n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.CRITICAL
        ))
        client = stack.enter_context(Client(cluster))
    else:
        client = stack.enter_context(Client(scheduler))
    workers = max(1, sum(info.get("nthreads", 1) for info in client.scheduler_info()["workers"].values()))
    # pure=False: two equal chunks are two tasks (Dask would otherwise run one of them).
    return (lambda fn, *args: client.submit(fn, *args, pure=False)), workers


def _chunks(pages: Iterable[T]) -> Iterator[list[T]]:
    iterator = iter(pages)
    while chunk := list(islice(iterator, CHUNK_PAGES)):
        yield chunk


def _in_order(
    submit: Callable[..., Any], options: FingerprintOptions, chunks: Iterator[list[T]],
    to_input: Callable[[T], PageInput], ahead: int,
) -> Iterator[tuple[list[T], list[FingerprintResult]]]:
    pending: deque[tuple[list[T], Future[list[FingerprintResult]]]] = deque()
    for chunk in chunks:
        pending.append((chunk, submit(fingerprint_chunk, options, [to_input(page) for page in chunk])))
        if len(pending) >= ahead:
            done, future = pending.popleft()
            yield done, future.result()
    while pending:
        done, future = pending.popleft()
        yield done, future.result()


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
