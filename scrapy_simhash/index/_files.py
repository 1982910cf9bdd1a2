"""Low-level file I/O of the on-disk store: the lock, whole writes, atomic creation.

Plain ``os`` calls, no buffering: a write that returns is in the kernel, so a
killed process loses nothing it acknowledged (see :mod:`.disk`).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable

from .base import IndexFormatError, IndexUnavailableError, SimhashIndexError

LOCK_NAME = "lock"
#: Bytes per read of :func:`read_into`.
READ_CHUNK = 64 << 20


def lock_directory(directory: str) -> int:
    """Create *directory* if needed and lock it (``flock``): one process per store,
    released by the kernel even when the process is killed."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise IndexFormatError(
            f"{directory} is a file, not an index directory: give a directory path"
        )
    os.makedirs(directory, exist_ok=True)
    fd = os.open(os.path.join(directory, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SimhashIndexError(
            f"{directory} is in use by another process (one crawl at a time)"
        ) from None
    return fd


def write_new(path: str, data: bytes) -> None:
    """Write a whole new file under a temporary name, then rename: all or nothing. A
    failure (a full disk) leaves no temporary file, and its error names *path*."""
    temporary = path + ".tmp"
    try:
        write_synced(temporary, [data], named=path)
        try:
            os.replace(temporary, path)
        except OSError as exc:
            raise unwritable(path, exc) from exc
    except IndexUnavailableError:
        remove_if_there(temporary)
        raise


def write_synced(path: str, parts: Iterable[bytes | memoryview], *, named: str | None = None) -> None:
    """Write *parts* to a new file at *path* (made as ``open()`` makes it: ``0o666`` less the
    umask, a group's store staying its own) and ``fsync`` it; a failure names *named*, else *path*."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            for part in parts:
                write_all(fd, part)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise unwritable(named or path, exc) from exc


def remove_if_there(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def fsync_file(fd: int, path: str) -> None:
    """``fsync`` the file *fd*, opened as *path* (named by the error, a full disk's too)."""
    try:
        os.fsync(fd)
    except OSError as exc:
        raise unwritable(path, exc) from exc


def unwritable(path: str, exc: OSError) -> IndexUnavailableError:
    """A failed write (disk full, I/O error): like an unreachable server, the Scrapy
    glue applies ``SIMHASH_ON_INDEX_ERROR`` (keep the page unchecked by default)."""
    return IndexUnavailableError(f"cannot write {path}: {exc.strerror or exc}")


def write_all(fd: int, data: bytes | memoryview) -> None:
    """``os.write`` until all of *data* is written (it may write less)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_directory(directory: str) -> None:
    """Make the renames and new names of *directory* durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_into(fd: int, target: memoryview, offset: int) -> int:
    """Fill *target* from *fd* at *offset*; the bytes read (fewer only at the end of the file).

    For the files a reopen reads whole into memory (the keys of 100M entries: 5.5 GB): the
    kernel is told the reads are sequential (a larger read-ahead), and to drop each part
    from its cache once copied, where it would only push out what the process allocates
    next. At a cold reopen of 100M entries, one read of the keys took 28-32 s; these,
    9.7-23.5 s (README, "disk store, reopen").
    """
    advise = getattr(os, "posix_fadvise", None)  # (Linux, not macOS)
    if advise is not None:
        advise(fd, offset, len(target), os.POSIX_FADV_SEQUENTIAL)
    done = 0
    while done < len(target):
        read = os.preadv(fd, [target[done : done + READ_CHUNK]], offset + done)
        if read <= 0:
            break
        if advise is not None:
            advise(fd, offset + done, read, os.POSIX_FADV_DONTNEED)
        done += read
    if advise is not None:
        advise(fd, offset, len(target), os.POSIX_FADV_NORMAL)  # (the file's later reads are a key here and there)
    return done
