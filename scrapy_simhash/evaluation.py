"""Score near-duplicate detection against labelled page pairs (pure: no I/O, no Scrapy).

Labels come as pairs ``(id_a, id_b, label, kind)`` with label ``dup``, ``distinct`` or
``ambiguous``; a same-language pair that is not listed is ``distinct`` (kind
``unlisted``), and ambiguous pairs are not scored. Two scores:

* *pairwise*: every same-language pair within Hamming distance k is predicted
  a near-duplicate; precision and recall over the labelled pairs, per language and
  per kind;
* *crawl order*: pages go through ``add_if_new`` in order, as ``scrapy-simhash
  dedup`` and the crawl do; a dropped page is right when the page it was matched to
  is a labelled dup of it, and a page should be dropped when a labelled dup of it
  came earlier.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .core.fingerprint import hamming_distance
from .index.base import DEFAULT_MIN_SIMILARITY
from .index.memory import MemoryIndex

DUP, DISTINCT, AMBIGUOUS = "dup", "distinct", "ambiguous"
UNLISTED = "unlisted"


def pair_key(a: str, b: str) -> tuple[str, str]:
    """The order-free key of a pair of page ids."""
    return (a, b) if a <= b else (b, a)


@dataclass
class Labels:
    """Labelled pairs: ``pairs[pair_key(a, b)] == (label, kind)``."""

    pairs: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, object]]) -> Labels:
        labels = cls()
        for record in records:
            key = pair_key(str(record["id_a"]), str(record["id_b"]))
            labels.pairs[key] = (str(record["label"]), str(record.get("kind") or UNLISTED))
        return labels

    def restricted_to(self, pages: Container[str]) -> Labels:
        """The pairs whose two pages are both in *pages* (the others cannot be scored)."""
        return Labels({key: value for key, value in self.pairs.items() if key[0] in pages and key[1] in pages})

    def get(self, a: str, b: str) -> tuple[str, str]:
        return self.pairs.get(pair_key(a, b), (DISTINCT, UNLISTED))

    def dups(self) -> list[tuple[tuple[str, str], str]]:
        return [(key, kind) for key, (label, kind) in self.pairs.items() if label == DUP]


@dataclass
class Score:
    """Counts behind a precision/recall figure."""

    true_positives: int = 0
    false_positives: int = 0
    false_negatives: int = 0

    @property
    def precision(self) -> float:
        found = self.true_positives + self.false_positives
        return self.true_positives / found if found else 1.0

    @property
    def recall(self) -> float:
        wanted = self.true_positives + self.false_negatives
        return self.true_positives / wanted if wanted else 1.0

    @property
    def f1(self) -> float:
        total = self.precision + self.recall
        return 2 * self.precision * self.recall / total if total else 0.0


@dataclass
class Report:
    """A score overall, per language and per pair kind."""

    overall: Score = field(default_factory=Score)
    by_language: dict[str, Score] = field(default_factory=lambda: defaultdict(Score))
    by_kind: dict[str, Score] = field(default_factory=lambda: defaultdict(Score))

    def count(self, language: str, kind: str, outcome: str) -> None:
        for score in (self.overall, self.by_language[language], self.by_kind[kind]):
            setattr(score, outcome, getattr(score, outcome) + 1)


class _PairDistance:
    """A pair's distance as a crawl sees it: outside the wildcard bits of its later page."""

    def __init__(self, fingerprints: Mapping[str, int], wildcards: Mapping[str, int] | None) -> None:
        self.fingerprints, self.wildcards = fingerprints, wildcards or {}
        self.position = {page: number for number, page in enumerate(fingerprints)}

    def __call__(self, a: str, b: str) -> int:
        later = a if self.position[a] > self.position[b] else b
        ignoring = self.wildcards.get(later, 0)
        return hamming_distance(self.fingerprints[a], self.fingerprints[b], ignoring=ignoring)


def close_pairs(
    fingerprints: Mapping[str, int],
    languages: Mapping[str, str],
    max_distance: int,
    wildcards: Mapping[str, int] | None = None,
    sketches: Mapping[str, bytes] | None = None,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
) -> dict[tuple[str, str], int]:
    """Every same-language pair within *max_distance*, with its distance (via the index).

    A pair's distance is counted outside the *wildcards* bits of its later page (in
    the order of *fingerprints*), as when that page is checked in a crawl. With
    *sketches*, a pair counts only when they confirm it (*min_similarity*).
    """
    distance = _PairDistance(fingerprints, wildcards)
    sketches = sketches or {}
    found: dict[tuple[str, str], int] = {}
    for language in sorted(set(languages[page] for page in fingerprints)):
        pages = [page for page in fingerprints if languages[page] == language]
        index = MemoryIndex(max_distance, expected_size=max(len(pages), 1), min_similarity=min_similarity)
        index.add_entries((fingerprints[page], page, sketches.get(page)) for page in pages)
        for page in pages:
            for match in index.query(fingerprints[page], distance.wildcards.get(page, 0), sketches.get(page)):
                if distance.position[match.key] < distance.position[page]:
                    found[pair_key(page, match.key)] = distance(page, match.key)
    return found


def score_pairs(
    close: Mapping[tuple[str, str], int], labels: Labels, languages: Mapping[str, str], max_distance: int
) -> Report:
    """Pairwise precision/recall at *max_distance* (*close* may hold pairs beyond it)."""
    report = Report()
    predicted = {key for key, distance in close.items() if distance <= max_distance}
    for a, b in predicted:
        label, kind = labels.get(a, b)
        if label != AMBIGUOUS:
            report.count(languages[a], kind, "true_positives" if label == DUP else "false_positives")
    for key, kind in labels.dups():
        if key not in predicted:
            report.count(languages[key[0]], kind, "false_negatives")
    return report


def distance_histogram(
    close: Mapping[tuple[str, str], int],
    labels: Labels,
    fingerprints: Mapping[str, int],
    wildcards: Mapping[str, int] | None = None,
) -> dict[str, Counter[int]]:
    """How many dup and distinct pairs lie at each distance (ambiguous ones left out).

    Every labelled pair counts, however far apart (so the missed duplicates show),
    and the unlisted pairs in *close*; a distance is counted as in :func:`close_pairs`.
    """
    distance = _PairDistance(fingerprints, wildcards)
    distances = dict(close)
    for a, b in labels.pairs:
        if a in fingerprints and b in fingerprints:
            distances[a, b] = distance(a, b)
    histogram: dict[str, Counter[int]] = {DUP: Counter(), DISTINCT: Counter()}
    for (a, b), distance in distances.items():
        label = labels.get(a, b)[0]
        if label != AMBIGUOUS:
            histogram[label][distance] += 1
    return histogram


def crawl_matches(
    fingerprints: Mapping[str, int],
    order: Sequence[str],
    max_distance: int,
    wildcards: Mapping[str, int] | None = None,
    sketches: Mapping[str, bytes] | None = None,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
) -> dict[str, str]:
    """What ``dedup`` does: ``add_if_new`` page by page; each dropped page -> the page it named."""
    wildcards, sketches = wildcards or {}, sketches or {}
    matched: dict[str, str] = {}
    with MemoryIndex(max_distance, expected_size=max(len(order), 1), min_similarity=min_similarity) as index:
        for page in order:
            if page in fingerprints:
                match = index.add_if_new(fingerprints[page], page, wildcards.get(page, 0), sketches.get(page))
                if match is not None:
                    matched[page] = match.key
    return matched


def score_crawl(
    order: Sequence[str], matched: Mapping[str, str], labels: Labels, languages: Mapping[str, str]
) -> Report:
    """Crawl-order precision/recall; *matched* maps each dropped page to the page it named."""
    dups_of: dict[str, set[str]] = defaultdict(set)
    for (a, b), _ in labels.dups():
        dups_of[a].add(b)
        dups_of[b].add(a)
    report = Report()
    seen: set[str] = set()
    for page in order:
        language, should_drop = languages[page], bool(dups_of[page] & seen)
        seen.add(page)
        named = matched.get(page)
        if named is None:
            if should_drop:
                report.count(language, "crawl", "false_negatives")
            continue
        label = labels.get(page, named)[0]
        if label == DUP:
            report.count(language, "crawl", "true_positives")
        elif label == DISTINCT:
            report.count(language, "crawl", "false_positives")
            if should_drop:
                report.count(language, "crawl", "false_negatives")
    return report
