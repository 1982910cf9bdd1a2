# The C probe (scan_c/); see _buckets.SortedBuckets.matches and WriteBuffer.matches.
import numpy as np
import numpy.typing as npt

def sorted_matches(
    layout: npt.NDArray[np.uint64],
    directories: npt.NDArray[np.uint32],
    slices: npt.NDArray[np.uint32],
    tails: npt.NDArray[np.uint16] | npt.NDArray[np.uint32],
    rows: npt.NDArray[np.uint32],
    fingerprint: int,
    wildcard: int,
    max_distance: int,
    /,
) -> dict[int, int]: ...
def buffer_matches(
    layout: npt.NDArray[np.uint64],
    newest: npt.NDArray[np.int32],
    older: npt.NDArray[np.int32],
    fingerprints: npt.NDArray[np.uint64],
    count: int,
    first_row: int,
    fingerprint: int,
    wildcard: int,
    max_distance: int,
    /,
) -> dict[int, int]: ...
def buffer_add(
    layout: npt.NDArray[np.uint64],
    newest: npt.NDArray[np.int32],
    older: npt.NDArray[np.int32],
    fingerprints: npt.NDArray[np.uint64],
    count: int,
    fingerprint: int,
    /,
) -> int: ...
def key_crcs(data: bytes | bytearray | npt.NDArray[np.uint8], ends: npt.NDArray[np.uint64], start: int, /) -> bytes: ...
