"""``evaluate``: precision/recall of the default fingerprinter on labelled page pairs."""

from __future__ import annotations

import argparse
import importlib.util
from collections import Counter
from typing import Any

from .. import evaluation
from ..core.fingerprinter import Fingerprinter
from ..index.base import MAX_DISTANCE_LIMIT
from ._common import add_similarity_argument
from ._io import Progress, read_jsonl, warn
from ._options import add_fingerprint_arguments, fingerprinter_from_args

#: Distances 0..N-1 get a row each in the printed histogram, the farther ones one row.
_HISTOGRAM_ROWS = 16

_DEFAULT_KS = "3,4,5,6,7,8"


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="score near-duplicate detection on labelled page pairs",
        description="Fingerprints every page (in file order, with its URL, as a crawl would), "
        "then prints precision/recall/F1 for each max distance k: pairwise (every same-language "
        "pair within k) and in crawl order (the check-and-record of `dedup`), overall, per "
        "language and per pair kind, and the distance histogram of dup vs distinct pairs. "
        "Pairs not listed in PAIRS count as distinct; ambiguous pairs are not scored.",
    )
    parser.add_argument("--pages", required=True, metavar="PAGES.jsonl[.gz]",
                        help="records with id, url, lang and html")
    parser.add_argument("--pairs", required=True, metavar="PAIRS.jsonl[.gz]",
                        help="records with id_a, id_b, label (dup/distinct/ambiguous), kind")
    parser.add_argument("-k", "--k", "--max-distance", dest="max_distance", default=_DEFAULT_KS, type=k_list,
                        metavar="K[,K...]",
                        help=f"distances to score, 0..{MAX_DISTANCE_LIMIT} (default: %(default)s)")
    add_similarity_argument(parser)
    add_fingerprint_arguments(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="draw the distance histogram (needs the 'plot' extra: matplotlib)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ks = _check_ks(args.max_distance)
    if args.plot and importlib.util.find_spec("matplotlib") is None:  # before the long run
        raise ValueError("--plot needs matplotlib: pip install 'scrapy-simhash[plot]'")
    fingerprints, wildcards, sketches, languages, order = _fingerprint_pages(
        args.pages, fingerprinter_from_args(args), quiet=args.quiet
    )
    labels = _read_labels(args.pairs, languages)
    if not labels.pairs:
        raise ValueError(f"{args.pairs}: no labelled pair between pages of {args.pages}: nothing to evaluate")
    close = evaluation.close_pairs(fingerprints, languages, max(ks), wildcards, sketches, args.min_similarity)
    print(f"{len(languages)} pages, {len(fingerprints)} fingerprinted, "
          f"{len(labels.pairs)} labelled pairs")
    for k in ks:
        pairwise = evaluation.score_pairs(close, labels, languages, k)
        _print_report(f"pairwise, k={k}", pairwise, by_kind=True)
        matched = evaluation.crawl_matches(fingerprints, order, k, wildcards, sketches, args.min_similarity)
        _print_report(f"crawl order, k={k}", evaluation.score_crawl(order, matched, labels, languages))
    histogram = evaluation.distance_histogram(close, labels, fingerprints, wildcards)
    _print_histogram(histogram)
    if args.plot:
        return _plot(histogram, args.plot)
    return 0


def _read_labels(path: str, languages: dict[str, str]) -> evaluation.Labels:
    """The labelled pairs of *path* between pages of the pages file; the rest reported."""
    records = []
    for line_number, record in read_jsonl(path):
        if any(record.get(name) is None for name in ("id_a", "id_b", "label")):
            warn(f"{path}:{line_number}: skipped, needs 'id_a', 'id_b' and 'label'")
        else:
            records.append(record)
    labels = evaluation.Labels.from_records(records)
    known = labels.restricted_to(languages)
    if len(known.pairs) < len(labels.pairs):
        warn(f"{len(labels.pairs) - len(known.pairs)} labelled pairs name pages that are not "
             "in --pages: not scored")
    return known


def k_list(text: str) -> list[int]:
    """The value of ``-k``: not integers is a command-line error (exit 2), as ``dedup -k abc`` is."""
    try:
        return sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None


def _check_ks(ks: list[int]) -> list[int]:
    # Out of range: exit 1, as dedup -k 40 is (the index refuses it there).
    if not ks or not all(0 <= k <= MAX_DISTANCE_LIMIT for k in ks):
        raise ValueError(f"--max-distance: each k must be 0..{MAX_DISTANCE_LIMIT}, not {','.join(map(str, ks))!r}")
    return ks


def _fingerprint_pages(
    path: str, fingerprinter: Fingerprinter, *, quiet: bool = False
) -> tuple[dict[str, int], dict[str, int], dict[str, bytes], dict[str, str], list[str]]:
    fingerprints: dict[str, int] = {}
    wildcards: dict[str, int] = {}
    sketches: dict[str, bytes] = {}
    languages: dict[str, str] = {}
    order: list[str] = []
    skipped: Counter[str] = Counter()
    progress = Progress("evaluate: fingerprinting", ("skipped",), enabled=not quiet)
    for line_number, record in read_jsonl(path):
        page = str(record.get("id", line_number))
        languages[page] = str(record.get("lang") or "all")
        order.append(page)
        result = fingerprinter.from_html(record.get("html") or "", url=record.get("url"))
        progress.update("skipped" if result.fingerprint is None else None)
        if result.fingerprint is None:
            skipped[result.skip_reason or "skipped"] += 1
        else:
            fingerprints[page] = result.fingerprint
            wildcards[page] = result.wildcard
            if result.sketch is not None:
                sketches[page] = result.sketch
    progress.finish()
    if skipped:
        warn("not fingerprinted: " + ", ".join(f"{n} {reason}" for reason, n in skipped.most_common()))
    if not fingerprints:
        raise ValueError(f"{path}: no page could be fingerprinted ({len(order)} records): nothing to evaluate")
    return fingerprints, wildcards, sketches, languages, order


def _line(name: str, score: evaluation.Score) -> str:
    counts = (
        f"tp {score.true_positives:5d}  fp {score.false_positives:4d}  "
        f"fn {score.false_negatives:4d}"
    )
    # "-": no pair found (precision), or no duplicate to find (recall, e.g. template siblings)
    precision = f"{score.precision:.3f}" if score.true_positives + score.false_positives else "  -  "
    recall = f"{score.recall:.3f}" if score.true_positives + score.false_negatives else "  -  "
    f1 = f"{score.f1:.3f}" if score.true_positives else "  -  "
    return f"  {name:<24} P {precision}  R {recall}  F1 {f1}   {counts}"


def _print_report(title: str, report: evaluation.Report, by_kind: bool = False) -> None:
    print(f"\n{title}")
    print(_line("overall", report.overall))
    for language in sorted(report.by_language):
        print(_line(language, report.by_language[language]))
    if by_kind:
        for kind in sorted(report.by_kind):
            print(_line(f"kind {kind}", report.by_kind[kind]))


def _print_histogram(histogram: dict[str, Counter[int]]) -> None:
    print("\nHamming distance (outside the later page's wildcard bits) of every labelled pair,")
    print("and of the unlisted pairs (distinct) within the largest k")
    print(f"  {'distance':>8} {'dup':>7} {'distinct':>9}")
    for distance in range(_HISTOGRAM_ROWS):
        dup, distinct = histogram[evaluation.DUP][distance], histogram[evaluation.DISTINCT][distance]
        print(f"  {distance:>8} {dup:>7} {distinct:>9}")
    farther = [sum(n for d, n in histogram[label].items() if d >= _HISTOGRAM_ROWS) for label in
               (evaluation.DUP, evaluation.DISTINCT)]
    print(f"  {'>=' + str(_HISTOGRAM_ROWS):>8} {farther[0]:>7} {farther[1]:>9}")


def _plot(histogram: dict[str, Counter[int]], path: str) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    distances = list(range(max(max(counts, default=0) for counts in histogram.values()) + 1))
    figure, axes = plt.subplots(figsize=(7, 4))
    width = 0.4
    for offset, label in ((-width / 2, evaluation.DUP), (width / 2, evaluation.DISTINCT)):
        counts = [histogram[label][d] for d in distances]
        axes.bar([d + offset for d in distances], counts, width, label=label)
    axes.set_xlabel("Hamming distance")
    axes.set_ylabel("pairs")
    axes.set_yscale("log")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path)
    print(f"\nhistogram written to {path}")
    return 0
