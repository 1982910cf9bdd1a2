# The C probe (_scan.c); see _buckets.SortedBuckets.matches and WriteBuffer.matches.
import numpy as np
import numpy.typing as npt

def sorted_matches(
    directories: npt.NDArray[np.uint32],
    rows: npt.NDArray[np.uint32],
    fingerprints: npt.NDArray[np.uint64],
    bases: tuple[int, ...],
    frees: tuple[int, ...],
    fingerprint: int,
    wildcard: int,
    max_distance: int,
    /,
) -> dict[int, int]: ...
def range_matches(
    fingerprints: npt.NDArray[np.uint64], start: int, stop: int, fingerprint: int, wildcard: int, max_distance: int, /
) -> dict[int, int]: ...
