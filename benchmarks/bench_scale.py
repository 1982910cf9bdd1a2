"""Same-site scale benchmark: false drops by position in a crawl of big real documentation sites.

    python benchmarks/scale_data.py                      # once: builds the sites (see there)
    python benchmarks/bench_scale.py [-k 3] [--wildcard-bits 14] [--min-similarity 0.77] [--sites rust,dealii] [--show 15]
    python benchmarks/bench_scale.py --sites rust --simulate 100000
    python benchmarks/bench_scale.py --exact-confirmation 0.8   # the confirmation without estimation error
    python benchmarks/bench_scale.py --shuffle 1   # each site's pages in a random order

The dev corpus measures precision on ~2,600 pages. A crawl of one big site checks every page
against all the pages it kept before, in one template, many of them generated and alike: the
chance of a false drop grows with the index. This runs the library on each site of
``scale_data.py`` (rustdoc, Doxygen, Sphinx, FPDoc; texi2html in Chinese) in crawl order as
the middleware does (``check_page``), with one ``Fingerprinter`` and one in-memory index per
site, and scores every drop by the exact Jaccard J of the 5-token shingles of the two pages'
reference main texts (the dev corpus's ground truth): false (J <= 0.5), ambiguous
(0.5 < J < 0.8), real (J >= 0.8), per 1,000 pages and by position in the crawl.

Recall: a page is a true near-duplicate when an earlier page of its site has J >= 0.8 with it
(found exactly: AllPairs prefix filtering over the shingle sets, then exact J); the table says
how many of them were dropped.

``--simulate N`` goes on where a site's pages run out, up to N pages, with synthetic distinct
pages: a real page of the site (its template) whose content area holds runs of blocks
(paragraphs, headings, code, rows, list items) of several other pages of the site, each run at
most a third of the page's text, as many tokens as the template page had. They share the
site's template and vocabulary but not their text: the J of a sample of them to every page is
checked (MinHash, then exact J for the closest). It reports false drops by position in 10,000s.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import math
import random
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import lxml.html
import numpy as np
import scale_data
from lxml import etree

from scrapy_simhash import Fingerprinter, FingerprintOptions, SimhashIndex, open_index
from scrapy_simhash.index.base import DEFAULT_MIN_SIMILARITY

DEFAULT_DATA = scale_data.DEFAULT_CACHE / "sites"
DUP, DISTINCT = 0.8, 0.5
BUCKETS = (1_000, 2_000, 5_000, 10_000)  # position buckets: 1-1k, 1k-2k, 2k-5k, 5k-10k, 10k+
SIMULATION_BUCKET = 10_000


def check_page(fingerprinter: Fingerprinter, index: SimhashIndex, html: str, url: str) -> tuple[str | None, int | None]:
    """What a crawl does with one page: the page it repeats and their distance, or (None, None)
    when it is kept (or not fingerprinted: too short, not HTML)."""
    result = fingerprinter.from_html(html, url=url)
    if result.fingerprint is None:
        return None, None
    match = index.add_if_new(result.fingerprint, url, result.wildcard, result.sketch)
    return (match.key, match.distance) if match else (None, None)


class ExactConfirmation:
    """``--exact-confirmation J``: the confirmation step as it would be with no estimation
    error. The index finds the candidates within k (no sketch), and a candidate is a
    near-duplicate when the exact Jaccard of the 5-token shingles of the two pages'
    extracted text (``Fingerprinter.main_blocks``, the ground truth's tokens) is at least J.
    What is left is the extraction's doing; the gap to a run with the sketch is the
    estimate's (256 bits: a standard error of 0.037 at J = 0.8, more on short pages)."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.vocabulary: dict[str, int] = {}
        self.kept: dict[str, np.ndarray] = {}

    def check(self, fingerprinter: Fingerprinter, index: SimhashIndex, html: str, url: str) -> tuple[str | None, int | None]:
        result = fingerprinter.from_html(html, url=url)
        if result.fingerprint is None:
            return None, None
        shingles = scale_data.shingles(" ".join(fingerprinter.main_blocks(html)), self.vocabulary)
        for match in index.query(result.fingerprint, result.wildcard):
            if scale_data.jaccard(shingles, self.kept[match.key]) >= self.threshold:
                return match.key, match.distance
        index.add(result.fingerprint, url)
        self.kept[url] = shingles
        return None, None


# -- scoring ---------------------------------------------------------------------------


@dataclass
class Drop:
    position: int  # 0-based, in crawl order
    url: str
    original: str
    distance: int
    jaccard: float


@dataclass
class Tally:
    """Drops of a run of pages, by verdict."""

    pages: int = 0
    false: int = 0
    ambiguous: int = 0
    real: int = 0
    #: False drops at distance 0: the same fingerprint, so the same extracted text (the
    #: extraction's doing, not the hash's).
    false_exact: int = 0
    #: Distinct pages with a *sibling*: an earlier page at 0.5 < J < 0.8 and none at J >= 0.8.
    #: Only they can be dropped ambiguously, and more of them come as a crawl goes on.
    siblings: int = 0
    #: How many of those were dropped: the error per exposed page, which must not grow.
    siblings_dropped: int = 0

    def add(self, drop: Drop) -> None:
        if drop.jaccard >= DUP:
            self.real += 1
        elif drop.jaccard > DISTINCT:
            self.ambiguous += 1
        else:
            self.false += 1
            self.false_exact += drop.distance == 0

    def merge(self, other: Tally) -> None:
        for name in ("pages", "false", "ambiguous", "real", "false_exact", "siblings", "siblings_dropped"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def per_1000(self, count: int) -> float:
        return 1000 * count / max(self.pages, 1)

    def row(self, label: str) -> str:
        drops = self.false + self.ambiguous + self.real
        rates = " ".join(f"{self.per_1000(n):>9.2f}" for n in (self.false, self.ambiguous, self.real))
        sibling_rate = 1000 * self.siblings_dropped / max(self.siblings, 1)
        return (f"{label:<12} {self.pages:>7} {drops:>6} {self.false:>6} {self.false_exact:>6} {rates}"
                f" {self.siblings:>8} {sibling_rate:>10.1f}")


_COLUMNS = (f"{'pages':>7} {'drops':>6} {'false':>6} {'f, d=0':>6} {'false/1k':>9} {'ambig/1k':>9} {'real/1k':>9}"
            f" {'siblings':>8} {'dropped/1k':>10}")
TABLE_HEADER = f"{'position':<12} {_COLUMNS}"


def bucket_labels(edges: tuple[int, ...]) -> list[str]:
    names = ["1"] + [_short(edge) for edge in edges]
    return [f"{low}-{high}" for low, high in itertools.pairwise(names)] + [f"{names[-1]}+"]


def _short(number: int) -> str:
    return f"{number // 1000}k" if number % 1000 == 0 else str(number)


@dataclass
class SiteResult:
    site: str
    package: str
    version: str
    pages: int
    seconds_check: float
    seconds_truth: float
    buckets: dict[str, Tally]
    total: Tally
    true_duplicates: int
    true_duplicates_dropped: int
    drops: list[Drop] = field(repr=False)
    simulation: dict[str, object] | None = None


def tally(
    drops: list[Drop], pages: int, edges: tuple[int, ...], siblings: frozenset[int] = frozenset()
) -> tuple[dict[str, Tally], Tally]:
    """Drops counted by position bucket (*edges*) and in all, and the pages with a sibling
    (the positions *siblings*) and how many of them were dropped."""
    labels = bucket_labels(edges)
    buckets = {label: Tally() for label in labels}
    bounds = (0, *edges, max(pages, edges[-1]))
    for label, low, high in zip(labels, bounds, bounds[1:]):
        buckets[label].pages = max(0, min(pages, high) - low)
    total = Tally(pages=pages)
    for drop in drops:
        buckets[labels[bisect.bisect_right(edges, drop.position)]].add(drop)
        total.add(drop)
    dropped = {drop.position for drop in drops}
    for position in siblings:
        for counted in (buckets[labels[bisect.bisect_right(edges, position)]], total):
            counted.siblings += 1
            counted.siblings_dropped += position in dropped
    return {label: bucket for label, bucket in buckets.items() if bucket.pages}, total


# -- ground truth: true near-duplicates --------------------------------------------------


def earlier_similar(sets: list[np.ndarray], threshold: float = DUP) -> list[list[int]]:
    """For each set, the earlier sets with Jaccard >= *threshold*.

    Exact, by AllPairs prefix filtering (Bayardo et al., WWW 2007): shingles ordered rarest
    first, two sets with J >= t share a shingle within each one's first |s| - ceil(t |s|) + 1.
    """
    values, counts = np.unique(np.concatenate([s for s in sets if len(s)] or [np.zeros(0, np.uint64)]),
                               return_counts=True)
    rank = np.empty(len(values), np.int64)
    rank[np.lexsort((values, counts))] = np.arange(len(values))
    postings: dict[int, list[int]] = defaultdict(list)
    found: list[list[int]] = []
    for number, shingle_set in enumerate(sets):
        size = len(shingle_set)
        prefix = np.sort(rank[np.searchsorted(values, shingle_set)])[: size - math.ceil(threshold * size - 1e-9) + 1]
        candidates: set[int] = set()
        for token in prefix.tolist():
            candidates.update(postings[token])
            postings[token].append(number)
        found.append([other for other in sorted(candidates) if _similar(shingle_set, sets[other], threshold)])
    return found


def _similar(a: np.ndarray, b: np.ndarray, threshold: float) -> bool:
    """J(a, b) >= threshold, the sizes compared first."""
    return threshold * len(a) <= len(b) and threshold * len(b) <= len(a) and scale_data.jaccard(a, b) >= threshold


# -- a site --------------------------------------------------------------------------


def options_from(args: argparse.Namespace) -> FingerprintOptions:
    return FingerprintOptions(wildcard_bits=args.wildcard_bits)


def run_site(site_dir: Path, args: argparse.Namespace) -> SiteResult:
    """Check every page of a site in crawl order; score the drops; find the true duplicates."""
    info = json.loads((site_dir / "site.json").read_text(encoding="utf-8"))
    fingerprinter = Fingerprinter(options_from(args))
    check = check_page
    if args.exact_confirmation is not None:
        check = ExactConfirmation(args.exact_confirmation).check
        index = open_index(None, max_distance=args.k, min_similarity=0.0)
    else:
        index = open_index(None, max_distance=args.k, min_similarity=args.min_similarity)
    vocabulary: dict[str, int] = {}
    sets: list[np.ndarray] = []
    positions: dict[str, int] = {}
    found: list[tuple[int, str, str, int]] = []
    seconds = 0.0
    for position, page in enumerate(_in_order(site_dir, args)):
        url = str(page["url"])
        start = time.process_time()
        original, distance = check(fingerprinter, index, str(page["html"]), url)
        seconds += time.process_time() - start
        positions[url] = position
        sets.append(scale_data.shingles(str(page["main_text"]), vocabulary))
        if original is not None and distance is not None:
            found.append((position, url, original, distance))
    drops = [Drop(p, url, original, d, scale_data.jaccard(sets[p], sets[positions[original]]))
             for p, url, original, d in found]
    start = time.process_time()
    duplicates = earlier_similar(sets)
    near = earlier_similar(sets, DISTINCT + 1e-9)
    siblings = frozenset(p for p, (dups, nears) in enumerate(zip(duplicates, near)) if nears and not dups)
    truth_seconds = time.process_time() - start
    dropped = {drop.position for drop in drops}
    true_positions = [p for p, earlier in enumerate(duplicates) if earlier]
    buckets, total = tally(drops, len(sets), BUCKETS, siblings)
    result = SiteResult(
        str(info["site"]), str(info["package"]), str(info["version"]), len(sets), seconds, truth_seconds,
        buckets, total, len(true_positions), len(dropped.intersection(true_positions)), drops,
    )
    if args.simulate > len(sets):
        result.simulation = simulate(site_dir, args, fingerprinter, index, sets, vocabulary, drops)
    return result


def _in_order(site_dir: Path, args: argparse.Namespace) -> Iterator[dict[str, object]]:
    """A site's pages in crawl order, or shuffled with ``--shuffle SEED``."""
    pages = _limited(scale_data.read_pages(site_dir / "pages.jsonl.gz"), args.max_pages)
    if args.shuffle is None:
        return pages
    shuffled = list(pages)
    random.Random(args.shuffle).shuffle(shuffled)
    return iter(shuffled)


def _limited(pages: Iterator[dict[str, object]], limit: int) -> Iterator[dict[str, object]]:
    for number, page in enumerate(pages):
        if number == limit:
            return
        yield page


# -- simulation: synthetic distinct pages past the real ones --------------------------------


@dataclass
class Block:
    html: str
    text: str
    tokens: int


@dataclass
class Shell:
    before: str
    after: str
    tokens: int  # the tokens of the template page's main text: the synthetic page's size


# Elements read as one block of a synthetic page (the outermost such element), and the
# element that must wrap them to be valid where they land.
_BLOCK_WRAPPER = {
    "p": "", "pre": "", "h1": "", "h2": "", "h3": "", "h4": "", "h5": "", "h6": "", "blockquote": "",
    "li": "ul", "dt": "dl", "dd": "dl", "tr": "table",
}
_LONG_BLOCK = 500  # characters
_MIN_SYNTHETIC_TOKENS = 60
_MARKER = "<!--scale-synthetic-content-->"


def page_parts(html: str) -> tuple[Shell | None, list[Block]]:
    """The shell (the page with its content area emptied, the rule's dropped parts kept)
    and the content blocks of one real page."""
    root = scale_data.parse(html)
    generator = scale_data.generator_of(root, html)
    elements = scale_data.content_elements(root, generator)
    if not elements:
        return None, []
    rule = scale_data.RULES[generator]
    drop = f"{scale_data._ALWAYS_DROPPED}, {rule.drop}" if rule.drop else scale_data._ALWAYS_DROPPED
    dropped = {e for element in elements for e in element.cssselect(drop)}  # (alive: lxml's proxies)
    found = [e for element in elements for e in _outermost_blocks(element, dropped)]
    sources = [(e, lxml.html.tostring(e, encoding="unicode", with_tail=False)) for e in found]
    main = scale_data.main_text(root, generator)  # drops the unwanted parts: now read the blocks
    blocks = []
    for element, source in sources:
        text = "\n".join(scale_data.text_lines(element))
        count = len(scale_data.tokens(text))
        if count:
            blocks.append(Block(f"<{_BLOCK_WRAPPER[element.tag]}>{source}</{_BLOCK_WRAPPER[element.tag]}>"
                                if _BLOCK_WRAPPER[element.tag] else source, text, count))
    return _shell(html, generator, len(scale_data.tokens(main))), blocks


def _outermost_blocks(
    element: lxml.html.HtmlElement, dropped: set[lxml.html.HtmlElement]
) -> Iterator[lxml.html.HtmlElement]:
    """The outermost block elements under *element*, a long one (a ``<dd>`` holding a
    function's whole description) split into the blocks inside it when it has some."""
    for child in element:
        if not isinstance(child.tag, str) or child in dropped:
            continue
        if child.tag in _BLOCK_WRAPPER and (len(child.text_content()) <= _LONG_BLOCK or not _has_blocks(child)):
            yield child
        else:
            yield from _outermost_blocks(child, dropped)


def _has_blocks(element: lxml.html.HtmlElement) -> bool:
    return any(isinstance(e.tag, str) and e.tag in _BLOCK_WRAPPER for e in element.iterdescendants())


def _shell(html: str, generator: str, tokens: int) -> Shell | None:
    """The page with its content area's children removed, but for the rule's dropped parts
    (navigation bars inside the area stay), and a marker where the first removed child was."""
    root = scale_data.parse(html)
    elements = scale_data.content_elements(root, generator)
    rule = scale_data.RULES[generator]
    kept = {e for element in elements for e in element.cssselect(rule.drop)} if rule.drop else set()
    target = max(elements, key=lambda e: len(e.text_content()))
    place = 0
    for element in elements:
        element.text = None
        for position, child in reversed(list(enumerate(element))):
            if child not in kept:
                element.remove(child)
                place = position if element is target else place
    target.insert(place, etree.Comment(_MARKER[4:-3]))
    text = lxml.html.tostring(root, encoding="unicode", doctype="<!DOCTYPE html>")
    before, marker, after = text.partition(_MARKER)
    return Shell(before, after, tokens) if marker else None


class SyntheticPages:
    """Distinct pages made of a site's template and runs of its pages' blocks."""

    def __init__(self, shells: list[Shell], pages_blocks: list[list[Block]], seed: int) -> None:
        self.shells = shells
        self.pages_blocks = [blocks for blocks in pages_blocks if blocks]
        self.random = random.Random(seed)

    def make(self) -> tuple[str, str]:
        """(html, reference main text) of a new page."""
        shell = self.random.choice(self.shells)
        target = max(_MIN_SYNTHETIC_TOKENS, shell.tokens)
        chosen: list[Block] = []
        total = 0
        while total < target:
            run = self._run(target // 3)
            chosen.extend(run)
            total += sum(block.tokens for block in run)
        html = shell.before + "\n".join(block.html for block in chosen) + shell.after
        return html, "\n".join(block.text for block in chosen)

    def _run(self, budget: int, tries: int = 20) -> list[Block]:
        """Consecutive blocks of a random page, at most *budget* tokens: a third of the page
        at most, so that no page shares much of its text (the smallest first block of
        *tries* random picks when none fits)."""
        smallest: Block | None = None
        for _ in range(tries):
            blocks = self.random.choice(self.pages_blocks)
            start = self.random.randrange(len(blocks))
            if blocks[start].tokens <= budget:
                return self._extend(blocks, start, budget)
            if smallest is None or blocks[start].tokens < smallest.tokens:
                smallest = blocks[start]
        assert smallest is not None
        return [smallest]

    @staticmethod
    def _extend(blocks: list[Block], start: int, budget: int) -> list[Block]:
        run, size = [blocks[start]], blocks[start].tokens
        for block in blocks[start + 1:]:
            if size + block.tokens > budget:
                break
            run.append(block)
            size += block.tokens
        return run


def synthetic_source(site_dir: Path, pages: int, seed: int) -> SyntheticPages:
    """Shells of up to 500 and blocks of up to 3,000 of the site's pages, drawn at random."""
    chooser = random.Random(seed)
    shell_pages = set(chooser.sample(range(pages), min(500, pages)))
    block_pages = set(chooser.sample(range(pages), min(3_000, pages)))
    shells: list[Shell] = []
    blocks: list[list[Block]] = []
    for number, page in enumerate(_limited(scale_data.read_pages(site_dir / "pages.jsonl.gz"), pages)):
        if number in shell_pages or number in block_pages:
            shell, page_blocks = page_parts(str(page["html"]))
            if number in shell_pages and shell is not None and shell.tokens >= 10:
                shells.append(shell)
            if number in block_pages:
                blocks.append(page_blocks)
    return SyntheticPages(shells, blocks, seed)


def simulate(
    site_dir: Path, args: argparse.Namespace, fingerprinter: Fingerprinter, index: SimhashIndex,
    sets: list[np.ndarray], vocabulary: dict[str, int], real_drops: list[Drop],
) -> dict[str, object]:
    """Grow the site's index with synthetic distinct pages to ``args.simulate`` pages; score
    all drops (*real_drops*, those of the real pages, included) by position."""
    real = len(sets)
    maker = synthetic_source(site_dir, real, args.seed)
    host = json.loads((site_dir / "site.json").read_text(encoding="utf-8"))["host"]
    urls: list[str] = []
    drops: list[Drop] = []
    started = time.monotonic()
    for position in range(real, args.simulate):
        html, text = maker.make()
        url = f"http://{host}/_synthetic/{position}.html"
        sets.append(scale_data.shingles(text, vocabulary))
        urls.append(url)
        original, distance = check_page(fingerprinter, index, html, url)
        if original is not None and distance is not None:
            drops.append(Drop(position, url, original, distance, 0.0))
        if (position + 1) % 10_000 == 0:
            print(f"  simulate {site_dir.name}: {position + 1} pages, {len(drops)} drops, "
                  f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    where = _positions(site_dir, real, urls)
    for drop in drops:
        drop.jaccard = scale_data.jaccard(sets[drop.position], sets[where[drop.original]])
    edges = tuple(range(SIMULATION_BUCKET, args.simulate, SIMULATION_BUCKET)) or (args.simulate,)
    buckets, total = tally(real_drops + drops, len(sets), edges)
    return {
        "pages": len(sets), "real_pages": real, "seconds": time.monotonic() - started,
        "buckets": {label: asdict(bucket) for label, bucket in buckets.items()}, "total": asdict(total),
        "worst_false": [asdict(drop) for drop in sorted(drops, key=_badness)[: args.show] if drop.jaccard <= DISTINCT],
        "check_distinct": check_distinct(sets, real, args.seed),
    }


def _positions(site_dir: Path, real: int, urls: list[str]) -> dict[str, int]:
    """Position of every page by URL: the real ones, then the synthetic ones."""
    where = {str(page["url"]): number for number, page in
             enumerate(_limited(scale_data.read_pages(site_dir / "pages.jsonl.gz"), real))}
    where.update({url: real + number for number, url in enumerate(urls)})
    return where


def check_distinct(sets: list[np.ndarray], real: int, seed: int, sample: int = 200) -> dict[str, object]:
    """The largest J of a sample of synthetic pages to any other page: MinHash (64 hashes)
    picks the 5 closest pages of each, exact J decides."""
    sketches = np.stack([_minhash(s) for s in sets])
    chooser = random.Random(seed)
    picked = chooser.sample(range(real, len(sets)), min(sample, len(sets) - real))
    largest: list[float] = []
    for number in picked:
        estimate = (sketches == sketches[number]).mean(axis=1)
        estimate[number] = -1.0
        closest = np.argsort(estimate)[-5:]
        largest.append(max(scale_data.jaccard(sets[number], sets[other]) for other in closest))
    values = np.array(largest)
    return {"sample": len(picked), "median_max_j": float(np.median(values)), "max_j": float(values.max()),
            "over_0.5": int((values > DISTINCT).sum())}


_SEEDS = np.random.default_rng(12345).integers(0, 2**63, 64, dtype=np.uint64)


def _minhash(shingle_set: np.ndarray) -> np.ndarray:
    if not len(shingle_set):
        return np.arange(64, dtype=np.uint64)  # (matches nothing)
    return scale_data._splitmix(shingle_set[:, None] ^ _SEEDS[None, :]).min(axis=0)


def _badness(drop: Drop) -> tuple[float, int]:
    return drop.jaccard, drop.distance


# -- report ----------------------------------------------------------------------------


def print_site(result: SiteResult, show: int) -> None:
    print(f"\n== {result.site} ({result.package} {result.version}): {result.pages} pages; "
          f"checks {result.seconds_check:.0f} s CPU, ground truth {result.seconds_truth:.0f} s")
    print(TABLE_HEADER)
    for label, bucket in result.buckets.items():
        print(bucket.row(label))
    print(result.total.row("all"))
    print(f"true near-duplicates (an earlier page with J >= {DUP}): {result.true_duplicates}, "
          f"dropped {result.true_duplicates_dropped} (recall {_ratio(result.true_duplicates_dropped, result.true_duplicates)})")
    worst = [drop for drop in sorted(result.drops, key=_badness) if drop.jaccard <= DISTINCT][:show]
    for drop in worst:
        print(f"  false: J={drop.jaccard:.3f} d={drop.distance:<2} {drop.url}\n"
              f"         {'':>13}repeats {drop.original}")
    if result.simulation:
        print_simulation(result.site, result.simulation)


def print_simulation(site: str, simulation: dict[str, object]) -> None:
    print(f"-- {site}, simulated to {simulation['pages']} pages ({simulation['real_pages']} real, "
          f"{simulation['seconds']:.0f} s); synthetic pages' largest J to any page, sample: "
          f"{simulation['check_distinct']}")
    print(TABLE_HEADER)
    for label, values in dict(simulation["buckets"]).items():  # type: ignore[call-overload]
        print(Tally(**values).row(label))
    print(Tally(**simulation["total"]).row("all"))  # type: ignore[arg-type]
    for drop in simulation["worst_false"]:  # type: ignore[attr-defined]
        print(f"  false: J={drop['jaccard']:.3f} d={drop['distance']:<2} {drop['url']} repeats {drop['original']}")


def _ratio(part: int, whole: int) -> str:
    return f"{part / whole:.3f}" if whole else "n/a"


def print_overall(results: list[SiteResult]) -> None:
    print("\n== all sites")
    print(f"{'site':<12} {_COLUMNS} {'true dups':>9} {'recall':>7}")
    combined = Tally()
    for result in results:
        print(f"{result.total.row(result.site)} {result.true_duplicates:>9} "
              f"{_ratio(result.true_duplicates_dropped, result.true_duplicates):>7}")
        combined.merge(result.total)
    true, dropped = sum(r.true_duplicates for r in results), sum(r.true_duplicates_dropped for r in results)
    print(f"{combined.row('all')} {true:>9} {_ratio(dropped, true):>7}")
    for label in bucket_labels(BUCKETS):
        bucket = Tally()
        for result in results:
            bucket.merge(result.buckets.get(label, Tally()))
        if bucket.pages:
            print(bucket.row(f"  {label}"))


def to_json(results: list[SiteResult], args: argparse.Namespace) -> dict[str, object]:
    return {
        "options": {"k": args.k, "wildcard_bits": args.wildcard_bits, "max_pages": args.max_pages,
                    "shuffle": args.shuffle},
        "sites": {
            r.site: {
                "package": r.package, "version": r.version, "pages": r.pages,
                "seconds_check": r.seconds_check, "seconds_truth": r.seconds_truth,
                "buckets": {label: asdict(bucket) for label, bucket in r.buckets.items()},
                "total": asdict(r.total), "true_duplicates": r.true_duplicates,
                "true_duplicates_dropped": r.true_duplicates_dropped,
                "drops": [asdict(drop) for drop in r.drops], "simulation": r.simulation,
            } for r in results
        },
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", type=int, default=3, help="max Hamming distance (SIMHASH_MAX_DISTANCE)")
    parser.add_argument("--wildcard-bits", type=int, default=FingerprintOptions().wildcard_bits,
                        help="SIMHASH_WILDCARD_BITS (default: the library's)")
    parser.add_argument("--min-similarity", type=float, default=DEFAULT_MIN_SIMILARITY,
                        help="SIMHASH_MIN_SIMILARITY (default: the library's; 0: no confirmation)")
    parser.add_argument("--exact-confirmation", type=float, metavar="J",
                        help="confirm each candidate by the exact Jaccard of the extracted texts instead of the sketches "
                             "(the confirmation step without estimation error; not with --simulate)")
    parser.add_argument("--sites", default=",".join(scale_data.SITES), help="comma-separated site names")
    parser.add_argument("--max-pages", type=int, default=scale_data.DEFAULT_MAX_PAGES, help="pages per site at most")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the sites scale_data.py wrote")
    parser.add_argument("--show", type=int, default=15, help="worst false drops listed per site")
    parser.add_argument("--simulate", type=int, default=0, metavar="N",
                        help="grow each site to N pages with synthetic distinct pages (0: off)")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the simulation")
    parser.add_argument("--shuffle", type=int, metavar="SEED",
                        help="check each site's pages in a random order (this seed), not in crawl order: whether the "
                             "rates by position follow the index's size or the order a site lists its pages in")
    parser.add_argument("--json", type=Path, help="write the numbers (and every drop) to this file")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.exact_confirmation is not None and args.simulate:
        raise SystemExit("--exact-confirmation does not run with --simulate")
    if args.shuffle is not None and args.simulate:
        raise SystemExit("--shuffle does not run with --simulate")
    confirmation = (f"exact Jaccard >= {args.exact_confirmation}" if args.exact_confirmation is not None
                    else f"min similarity={args.min_similarity}")
    print(f"k={args.k}, wildcard bits={args.wildcard_bits}, {confirmation}, up to {args.max_pages} pages per site; "
          f"false: J <= {DISTINCT}, ambiguous: {DISTINCT} < J < {DUP}, real: J >= {DUP} (per 1,000 pages)")
    results = []
    for name in args.sites.split(","):
        result = run_site(args.data / name, args)
        print_site(result, args.show)
        results.append(result)
    print_overall(results)
    if args.json:
        args.json.write_text(json.dumps(to_json(results, args), indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
