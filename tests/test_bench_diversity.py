"""The template-diversity benchmark's reference rules, on hand-made pages (no download):
a rule must keep a page's own text and drop the generator's navigation inside its
content area, or the benchmark scores extractors against the wrong text."""

from __future__ import annotations

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import diversity_data  # noqa: E402
import scale_data  # noqa: E402


def reference(generator: str, html: str) -> str:
    """The page's reference main text, its lines joined by a space."""
    return " ".join(scale_data.rule_text(scale_data.parse(html), diversity_data.SOURCES[generator].rule).split())


def test_javadoc_index_keeps_its_entries_and_drops_the_letter_bar() -> None:
    html = """<html><body><header><nav>Overview Package Class</nav></header><main role="main">
    <div class="contentContainer"><a href="#I:A">A</a>&nbsp;<a href="#I:B">B</a>&nbsp;<br>
    <a href="allclasses-index.html">All&nbsp;Classes</a>
    <h2 class="title">A</h2><dl><dt><a href="Node.html#absUrl">absUrl(String)</a> - Method in class
    Node</dt><dd>Get an absolute URL.</dd></dl></div></main><footer>Copyright</footer></body></html>"""
    assert reference("javadoc", html) == "A absUrl(String) - Method in class Node Get an absolute URL."


def test_texinfo_drops_the_node_header_and_the_jump_to_bar() -> None:
    html = """<html><head><meta name="Generator" content="makeinfo"></head><body>
    <div class="header"><p>Next: <a href="b.html">Broadcasting</a></p></div><hr>
    <h2>Concept Index</h2><table><tr><th>Jump to: &nbsp; </th><td>
    <a class="summary-letter" href="#A"><b>A</b></a></td></tr></table>
    <table class="index-cp"><tr><td><a href="a.html">arrays</a>:</td><td><a href="a.html">Arrays</a></td></tr></table>
    </body></html>"""
    assert reference("texinfo", html) == "Concept Index arrays: Arrays"


def test_every_source_names_a_package_kept_apart_by_no_other_check() -> None:
    # The issue keeps these apart to check that the work carries over: none may be used here.
    kept_apart = ("python3.", "gimp-help-", "debian-handbook", "debian-reference-", "libreoffice-help-",
                  "openjdk-", "vtk", "rust-doc", "libdeal.ii-doc", "python-statsmodels-doc", "lazarus-doc",
                  "lilypond-doc")
    for source in diversity_data.SOURCES.values():
        assert not source.package.startswith(kept_apart), source.package
