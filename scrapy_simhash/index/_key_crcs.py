"""The CRC-32 a key is looked up by (:mod:`._key_lookup`): the same in every process, unlike
``hash()``. A store's keys are CRCed in C (:mod:`._scan`, ``scan_c/crc.c``), or by their
Python twin here, which zlib computes one call a key.
"""

from __future__ import annotations

import logging
import os
import zlib
from itertools import pairwise

import numpy as np
import numpy.typing as npt

try:
    from . import _scan  # the index's C code, built at install time when a C compiler is there
except ImportError:  # pragma: no cover - depends on the install
    _scan = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)


def key_crc(stored_key: bytes | bytearray | memoryview) -> int:
    """The 32-bit CRC a key is looked up by, of its bytes as stored."""
    return zlib.crc32(stored_key)


def crcs_of_keys(
    data: bytes | bytearray | npt.NDArray[np.uint8], ends: npt.NDArray[np.uint64], start: int = 0
) -> npt.NDArray[np.uint32]:
    """:func:`key_crc` of keys ``start...`` of *data*, keys stored back to back that end at
    *ends*: in C (:mod:`._scan`, ~0.03 µs a ~50-byte key), else :func:`python_crcs_of_keys`."""
    if _scan is None:
        return python_crcs_of_keys(data, ends, start)
    return np.frombuffer(_scan.key_crcs(data, np.ascontiguousarray(ends, dtype=np.uint64), start), dtype=np.uint32)


def python_crcs_of_keys(
    data: bytes | bytearray | npt.NDArray[np.uint8], ends: npt.NDArray[np.uint64], start: int = 0
) -> npt.NDArray[np.uint32]:
    """:func:`crcs_of_keys` in Python: one pass over views of the buffer, a ``zlib.crc32``
    call a key (~0.36 µs a key: 3.5 of the 5.4 s a 10M-page index's lookup took to build)."""
    bounds = [int(ends[start - 1]) if start else 0, *ends[start:].tolist()]
    with data.data if isinstance(data, np.ndarray) else memoryview(data) as view:
        crcs = (zlib.crc32(view[low:high]) for low, high in pairwise(bounds))
        return np.fromiter(crcs, dtype=np.uint32, count=len(bounds) - 1)


def c_crcs_mismatch() -> str | None:
    """Why the C key CRCs must not run (``SIMHASH_C_PROBE=0``, the switch of the index's C
    code, or a sample on which they differ from zlib's), or None."""
    if os.environ.get("SIMHASH_C_PROBE", "1") == "0":
        return "SIMHASH_C_PROBE=0"
    rng = np.random.default_rng(2007)
    data = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
    ends = np.sort(rng.integers(0, len(data), 200, dtype=np.uint64))  # empty keys among them
    differ = _scan is not None and crcs_of_keys(data, ends, 3).tolist() != python_crcs_of_keys(data, ends, 3).tolist()
    return "they differ from zlib's on a sample" if differ else None


def check_c_crcs() -> None:
    """Switch the C key CRCs off, with a WARNING, if they must not run (at import)."""
    global _scan
    if _scan is not None and (mismatch := c_crcs_mismatch()) is not None:
        logger.warning("Simhash computes its index's key CRCs in Python, not in C: %s", mismatch)
        _scan = None


check_c_crcs()
