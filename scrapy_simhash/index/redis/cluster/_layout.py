"""What a namespace holds in a Redis Cluster, seen from Python: key names and records.

The permutation tables of Manku, Jain & Das Sarma (WWW 2007, section 3) with each
bucket a key of its own, its hash tag ``{t.b}`` (table ``t``, bucket ``b``): one
bucket's records share a slot, the buckets spread over all 16384 slots.

* ``P{t.b}f`` a bucket: entries of 16 bytes, the fingerprint (8 bytes big-endian)
  and the record id (8 random bytes), appended;
* ``P{0.b}r`` and ``P{0.b}k`` the records whose table-0 bucket is ``b`` (their
  *home*), hashes by record id: the header (:func:`pack_header`: state, stamp,
  when it was put, fingerprint, sketch's 32 bytes, then a short page's shingles) and the
  stored key (coded, :mod:`.._keys`);
* ``P{u.c}`` the records of the keys whose CRC-32 ends in ``c`` (as many bits as a
  bucket key), entries as in a bucket
  (``replace_if_new`` and ``remove_key`` find a key's records there);
* ``Pstamp`` the stamp clock, ``Pmeta`` format, options and table design.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from ....core.sketch import SKETCH_BYTES
from ..._tables import TableDesign, make_design
from ...base import IndexFormatError
from .._layout import NO_SKETCH, Names

# "cluster-2": a short page's header ends with its shingles; "cluster-1" had none (still
# read and written, without them: its crawlers read headers of 53 bytes only).
FORMAT = "cluster-2"
#: The formats this version opens, and whether their headers may hold shingles.
READ_FORMATS = {FORMAT: True, "cluster-1": False}
ENTRY_BYTES = 16
#: Record states: put but not stamped yet, stamped (its check runs), kept.
CHOOSING, STAMPED, KEPT = b"p", b"s", b"k"
# state, stamp, put at (the home node's clock, seconds), fingerprint, sketch: 53 bytes,
# under the 64 of a small hash's listpack values; a short page's shingles follow (up to
# 400 bytes: its home hash is then a hashtable, ~50 bytes more a record). The scripts
# rewrite bytes 1-13 only and keep the rest (:mod:`._lua`).
_HEADER = struct.Struct(f">cQIQ{SKETCH_BYTES}s")
ENTRY = np.dtype([("fingerprint", ">u8"), ("rid", "S8")])


class Header(NamedTuple):
    """A record's header, as its home hash holds it."""

    state: bytes
    stamp: int
    put_at: int
    fingerprint: int
    sketch: bytes | None


def pack_header(state: bytes, stamp: int, fingerprint: int, sketch: bytes | None) -> bytes:
    """A header, with the whole sketch (a short page's shingles after the fixed part); the
    put time (4 bytes at 9) is written by the script that puts it."""
    sketch = NO_SKETCH if sketch is None else sketch
    return _HEADER.pack(state, stamp, 0, fingerprint, sketch[:SKETCH_BYTES]) + sketch[SKETCH_BYTES:]


def unpack_header(data: bytes) -> Header:
    state, stamp, put_at, fingerprint, sketch = _HEADER.unpack_from(data)
    return Header(state, stamp, put_at, fingerprint, None if sketch == NO_SKETCH else sketch + data[_HEADER.size :])


def entry(fingerprint: int, rid: bytes) -> bytes:
    return fingerprint.to_bytes(8, "big") + rid


def unpack_entries(data: bytes) -> npt.NDArray[np.void]:
    """Bucket entries as a structured array (a torn tail, impossible with APPEND, is cut)."""
    return np.frombuffer(data[: len(data) - len(data) % ENTRY_BYTES], dtype=ENTRY)


@dataclass(frozen=True)
class ClusterNames:
    """The Redis key names of one namespace in a cluster."""

    prefix: str

    @classmethod
    def of(cls, namespace: str) -> ClusterNames:
        return cls(Names.of(namespace).prefix)

    @property
    def meta(self) -> str:
        return self.prefix + "meta"

    @property
    def clock(self) -> str:
        return self.prefix + "stamp"

    def bucket(self, table: int, bucket: int) -> str:
        return f"{self.prefix}{{{table}.{bucket:x}}}f"

    def home(self, bucket: int) -> tuple[str, str, str]:
        """Table 0's bucket, the records' headers and keys: one slot."""
        tag = f"{self.prefix}{{0.{bucket:x}}}"
        return tag + "f", tag + "r", tag + "k"

    def key_records(self, crc: int, bits: int) -> str:
        """Where the records of the keys whose CRC ends in the same *bits* bits are
        (as many as a bucket's: one Redis key each would cost ~90 bytes a page)."""
        return f"{self.prefix}{{u.{crc & ((1 << bits) - 1):x}}}"

    @property
    def home_pattern(self) -> str:
        return self.prefix + "{0.*}r"


def new_cluster_meta(design: TableDesign, signature: str) -> dict[str, str]:
    return {"format": FORMAT, "signature": signature, "max_distance": str(design.max_distance),
            "blocks": str(len(design.blocks)), "prefix_bits": str(design.prefix_bits)}


def design_of(meta: dict[str, str], max_distance: int, where: str) -> TableDesign:
    """The table design a namespace was made with; refused when it cannot find *max_distance*."""
    if meta.get("format") not in READ_FORMATS:
        raise IndexFormatError(
            f"{where} has format {meta.get('format')!r}, not the cluster layout {FORMAT!r}: "
            "reset it (SIMHASH_INDEX_RESET=True on one worker) or use another namespace")
    design = make_design(int(meta["max_distance"]), int(meta["blocks"]), int(meta["prefix_bits"]))
    if max_distance > design.max_distance:
        raise ValueError(f"{where} was made for max_distance <= {design.max_distance} (its tables), "
                         f"not {max_distance}: reset it or use another namespace")
    return design
