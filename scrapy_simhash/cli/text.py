"""``text``: the main text of pages as they are fingerprinted ("why was this page dropped?")."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from lxml import etree

from ..core import digests, text
from ..core.boilerplate import boilerplate_elements, is_credit_line
from ..core.fingerprinter import Fingerprinter, content_blocks
from ..core.threads import thread_replies
from ._common import file_url
from ._io import warn
from ._options import add_fingerprint_arguments, fingerprinter_from_args


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "text",
        help="print the main text of HTML files as it is fingerprinted",
        description="Print each page's main text as it is fingerprinted: normalised (NFKC, case-folded, "
        "whitespace collapsed), a block a line. With --verbose, every visible block of the page, in "
        "order: '+' kept, '-' left out, with why.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="HTML files")
    parser.add_argument("-v", "--verbose", action="store_true", help="also the blocks left out, and why")
    add_fingerprint_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    fingerprinter = fingerprinter_from_args(args)
    status = 0
    for name in args.files:
        if len(args.files) > 1:
            print(f"==> {name} <==")
        try:
            body = Path(name).read_bytes()
            url = file_url(name)
            lines = annotated(fingerprinter, body, url) if args.verbose else fingerprinter.main_blocks(body, url=url)
        except OSError as exc:
            warn(f"text: {name}: {exc.strerror}")
            status = 1
            continue
        except text.NotHtmlError as exc:
            warn(f"text: {name}: not fingerprinted ({exc.reason})")
            status = 1
            continue
        print("\n".join(lines))
    return status


def annotated(fingerprinter: Fingerprinter, html: bytes, url: str | None = None) -> list[str]:
    """Every visible block of the page, in order: ``+ block`` when it is fingerprinted,
    ``- block  [why]`` when it is left out."""
    kept = Counter(fingerprinter.main_blocks(html, url=url))
    root = text.parse_html(html, strip_invisible=False)
    copied = digests.digest_parts(root, url)
    text.strip_invisible_elements(root)
    body = text.body_of(root)
    reasons = _boilerplate_reasons(body)
    for part in copied:
        for block in content_blocks(text.split_blocks(part)):
            reasons[block] = _DIGEST
    lines = []
    for raw in text.split_blocks(body):
        normalised = content_blocks([raw])
        if not normalised:
            continue  # blank, or no letter: not text
        block = normalised[0]
        if kept[block] > 0:
            kept[block] -= 1
            lines.append(f"+ {block}")
        else:
            lines.append(f"- {block}  [{_why_left_out(raw, reasons.get(block))}]")
    return lines


def _boilerplate_reasons(body: etree._Element) -> dict[str, str]:
    """Each block inside an element the extraction takes for boilerplate, and why."""
    reasons: dict[str, str] = {}
    replies = set(thread_replies(body))
    for element in reversed(boilerplate_elements(body)):  # the outermost last: its reason wins
        attributes = " ".join(f'{name}="{value}"' for name, value in element.items() if name in _NAMING)
        why = f"<{element.tag}{' ' + attributes if attributes else ''}>"
        why = f"a thread's reply, {why}" if element in replies else why
        for block in content_blocks(text.split_blocks(element)):
            reasons[block] = why
    return reasons


_NAMING = ("class", "id", "role", "style", "hidden", "aria-hidden")


#: The reason of a block in a part that copies another document's entries.
_DIGEST = "digest"


def _why_left_out(raw: str, boilerplate: str | None) -> str:
    if boilerplate == _DIGEST:
        return "copies another page's entries, linking to them (a digest)"
    if boilerplate is not None:
        return f"boilerplate: inside {boilerplate}"
    if is_credit_line(raw.strip()):
        return "a credit or legal line"
    return "not the main content: another column, or a list of links"
