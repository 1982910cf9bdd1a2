"""Lists judged whole (core/entries.py) and links in code (content._NEVER_LINK_LISTS), in C and Python."""

from __future__ import annotations

import pytest

from c_modules import python_instead_of
from scrapy_simhash.core import content, entries, text
from scrapy_simhash.core.fingerprinter import Fingerprinter

PROSE = "<p>This is the complete list of members for the class, including all inherited members.</p>"


def both(html: str) -> list[str]:
    """The blocks, C and Python alike (the C extraction where it was built)."""
    blocks = content.extract_main_blocks(text.parse_html(html, strip_invisible=False))
    with python_instead_of("extraction"):
        assert content.extract_main_blocks(text.parse_html(html, strip_invisible=False)) == blocks
    return blocks


def _page(listing: str) -> str:
    return f"<html><body><div class='contents'>{PROSE}{listing}</div></body></html>"


def _member_rows(rows: list[tuple[str, str, str]]) -> str:
    return "<table class='directory'>" + "".join(
        f"<tr><td><a href='#{name}'>{name}</a>{args}</td><td><a href='c.html'>{owner}</a></td></tr>"
        for name, args, owner in rows
    ) + "</table>"


MEMBERS = [
    ("advance_time", "(const numbers::NumberTraits< double >::real_type delta_t)", "FunctionTime"),
    ("check_no_subscribers", "() const noexcept private", "Subscriptor"),
    ("counter", "", "Subscriptor"),
    ("dimension", "", "Function< dim, double >"),
    ("gradient", "(const Point< dim > &p, const unsigned int component=0) const override", "ConstantFunction"),
]


def test_a_member_list_keeps_its_rows_of_links() -> None:
    blocks = both(_page(_member_rows(MEMBERS)))
    assert any(block.startswith(" counter") for block in blocks)  # mostly links: kept with its list
    assert any(block.startswith(" dimension") for block in blocks)
    assert len(blocks) == 1 + len(MEMBERS)


def test_a_list_of_links_is_still_navigation() -> None:
    nav = "<ul>" + "".join(f"<li><a href='/{n}'>Section {n}</a></li>" for n in range(6)) + "</ul>"
    assert both(_page(nav)) == [PROSE[3:-4]]


def test_a_list_with_too_few_text_entries_stays_navigation() -> None:
    """One entry of text in four is under a third: the links are navigation."""
    items = [f"<li><a href='/{n}'>Section number {n}</a></li>" for n in range(6)]
    items[0] = "<li>You are here, in the part of the site about members of classes: <a href='/'>home</a></li>"
    blocks = both(_page("<ul>" + "".join(items) + "</ul>"))
    assert not any("Section number" in block for block in blocks)


@pytest.mark.parametrize("tag", ["code", "tt", "kbd", "samp", "var"])
def test_links_in_code_are_code(tag: str) -> None:
    includes = "".join(f"<{tag}>#include &lt;<a href='{n}.h'>deal.II/base/{n}.h</a>&gt;</{tag}><br>" for n in "abc")
    blocks = both(_page(f"<div class='textblock'>{includes}</div>"))
    assert any("#include <deal.II/base/a.h>" in block for block in blocks)


def test_an_entry_of_links_keeps_the_lists_inside_it() -> None:
    """The inner list alone is navigation (one entry of text in four); the outer entry that
    holds it is a link entry of a list of text: all its links are kept (once, in C as in Python)."""
    inner = "<ul>" + "".join(f"<li><a href='/{n}'>x{n}</a></li>" for n in range(3)) + "<li>text</li></ul>"
    outer = "<ul>" + f"<li><a href='/z'>zz</a>{inner}</li>" + "<li>an entry of text</li>" * 2 + "</ul>"
    blocks = both(_page(outer))
    assert [block for block in blocks if block.startswith("x")] == ["x0", "x1", "x2"]


# ---- Tables of contents (entries.contents_links) ---------------------------------------

INTRODUCTION = ("<p>This chapter gives an overview of the project and of the system. If you know its history "
                "and the distribution already, feel free to skip to the next chapter, where installing starts.</p>")


def _chapter(entries: list[str], nested: list[str] = ()) -> str:
    """A chapter's first page: its heading, a table of contents (*nested* in its last
    entry), an introduction that outweighs it, and a menu."""
    inner = "".join(f"<dt><span><a href='s{i}.html'>{entry}</a></span></dt>" for i, entry in enumerate(nested))
    toc = "".join(f"<dt><span><a href='c{i}.html'>{entry}</a></span></dt>" for i, entry in enumerate(entries))
    toc += f"<dd><dl>{inner}</dl></dd>" if nested else ""
    return (f"<html><body><div class='navheader'><a href='/'>Home</a> <a href='next.html'>Next</a></div>"
            f"<div class='chapter'><h1>Chapter 1. Welcome</h1><div class='toc'><p>Contents</p><dl>{toc}</dl></div>"
            f"{INTRODUCTION}</div></body></html>")


@pytest.mark.parametrize("entries, nested", [
    (["1.1. What is it?", "1.2. Getting it", "1.3. About this document"], []),
    (["1. Getting started", "2. First steps"], ["2.1. Choose your program", "2.2. Get the program"]),
    (["1.1 What is it?", "1.2\xa0Getting it", " 1.3  About this document "], []),
    (["1.1. 什么是 Debian？", "1.2. 获取 Debian", "1.3. 本文档的组织"], []),
    (["1.1. What is it?", "1.2. Getting it", "1.3. About this document", "1.4. Copyrights", "Index"], []),
])  # fmt: skip
def test_a_table_of_contents_is_content(entries: list[str], nested: list[str]) -> None:
    blocks = both(_chapter(entries, nested))
    kept = [block.strip() for block in blocks]
    assert [entry.strip() for entry in [*entries, *nested] if entry != "Index"] == [
        block for block in kept if block[:1].isdigit()
    ]
    assert INTRODUCTION[3:40] in "".join(blocks) and "Next" not in "".join(blocks)


@pytest.mark.parametrize("entries", [
    ["1. Top story of the day", "2. Another story", "3. A third story"],  # a ranking: no nested number
    ["1.1. What is it?", "1.2. Getting it"],  # too few
    ["1.1. What is it?", "Getting it", "About this document", "Contact"],  # too few numbered
    ["1.1.", "1.2.", "1.3."],  # numbers, no titles
    ["1.1a. What is it?", "1..2 Getting it", "v1.3 About this document"],  # not section numbers
    ["١.١ What is it?", "١.٢ Getting it", "١.٣ About this document"],  # digits of another script
])  # fmt: skip
def test_a_list_of_links_without_section_numbers_is_still_navigation(entries: list[str]) -> None:
    blocks = both(_chapter(entries))
    assert not any(entry.strip() in block for entry in entries for block in blocks)
    assert INTRODUCTION[3:40] in "".join(blocks)


SHOP_TEXT = (
    "<div class='category-text'><h2>Buying a laptop</h2><p>Choosing the right laptop depends on how you plan to use"
    " it: for browsing, email and streaming a recent processor, 8 GB of memory and a solid state drive are plenty,"
    " and students will appreciate a light chassis and a battery that lasts a full day.</p><p>Creative"
    " professionals who edit photos and video should look for 16 GB of memory, a fast drive and a wide colour"
    " display; gamers need a dedicated graphics card, a fast screen and good cooling.</p></div>"
)


def _product_card(name: str, price: str, extra: str = "<span class='rating'>4.5 (320)</span>", tag: str = "li") -> str:
    """A shop theme's product card: one link around the picture, the name, the price and the rating."""
    slug = name.lower().replace(" ", "-")
    return (f"<{tag} class='product-card'><a href='/p/{slug}.html'><img src='/img/{slug}.jpg' alt=''>"
            f"<span class='title'>{name}</span><span class='price'>{price}</span>{extra}</a></{tag}>")


def _category_page(products: list[str], grid: tuple[str, str] = ("ul", "li")) -> str:
    """Page N of a category: its products as cards in a *grid* (its tag, its cards' tag),
    then the text every page of the category shows."""
    cards = "".join(_product_card(name, f"${499 + 100 * i}.99", tag=grid[1]) for i, name in enumerate(products))
    return (
        "<html><head><title>Laptops | VoltMart</title></head><body><nav><a href='/'>Home</a></nav><main>"
        f"<h1>Laptops</h1><div class='results'><{grid[0]} class='product-grid'>{cards}</{grid[0]}></div>{SHOP_TEXT}"
        "</main></body></html>"
    )


FIRST_PAGE = ["Lenovo ThinkPad X1 Carbon", "Dell XPS 13 Plus", "HP Spectre x360", "Asus ZenBook 14", "Acer Swift 3"]
SECOND_PAGE = ["Apple MacBook Air M2", "Microsoft Surface Laptop 5", "Razer Blade 15", "MSI Stealth 16", "LG Gram 17"]


def _link_cards(products: list[str]) -> str:
    """A theme's grid whose cards are the links themselves: <div class=grid><a class=card>..."""
    cards = "".join(f"<a class='card' href='/p/{i}.html'><img src='/i/{i}.jpg'><h3>{name}</h3><span>${499 + i}.99</span>"
                    f"<span>In stock</span></a>" for i, name in enumerate(products))
    return (f"<html><body><main><h1>Laptops</h1><div class='grid'>{cards}</div>{SHOP_TEXT}</main></body></html>")


def test_cards_that_are_the_links_themselves() -> None:
    first, second = both(_link_cards(FIRST_PAGE)), both(_link_cards(SECOND_PAGE))
    assert any("Lenovo ThinkPad X1 Carbon" in block for block in first)
    assert any("Apple MacBook Air M2" in block for block in second)


@pytest.mark.parametrize("grid", [("ul", "li"), ("div", "div"), ("section", "article")])
def test_the_cards_of_a_listing_are_its_content(grid: tuple[str, str]) -> None:
    """Two pages of one shop category differ by their products, each one link around its
    name, price and rating (a review's false drop: the grid was left out as link lists, and
    page 2 was a copy of page 1), in a list or in a theme's grid of <div>s."""
    first, second = both(_category_page(FIRST_PAGE, grid)), both(_category_page(SECOND_PAGE, grid))
    assert any("Lenovo ThinkPad X1 Carbon" in block for block in first)
    assert any("Apple MacBook Air M2" in block for block in second)
    assert Fingerprinter().from_html(_category_page(FIRST_PAGE, grid)).fingerprint != Fingerprinter().from_html(
        _category_page(SECOND_PAGE, grid)).fingerprint


@pytest.mark.parametrize(
    "card",
    [
        "<li><a href='/p/x.html'><span>Lenovo ThinkPad X1 Carbon</span></a></li>",  # one text: a menu's link
        "<li><a href='/p/x.html'>Lenovo ThinkPad<span>X1 Carbon</span></a></li>",  # two
        "<li><a href='/p/x.html'><span>Lenovo</span><span>$999</span></a><a href='/c'><span>4.5</span></a></li>",
    ],
)  # fmt: skip
def test_links_with_fewer_texts_or_two_links_are_no_cards(card: str) -> None:
    page = f"<html><body><main><h1>Laptops</h1><ul>{card * 6}</ul>{SHOP_TEXT}</main></body></html>"
    assert not any("Lenovo" in block for block in both(page))


def test_a_card_is_one_link_with_three_texts_of_their_own() -> None:
    card = text.parse_html("<li><a href='/p'>Lenovo <b>X1</b> Carbon<i> </i></a></li>").find(".//li")
    assert entries.card_link(card) is None  # the link's own text ("Lenovo ... Carbon") and X1's; the <i> has none
    richer = text.parse_html("<li><a href='/p'>Lenovo <b>X1</b> Carbon<span> $999 </span></a></li>").find(".//li")
    assert entries.card_link(richer) is richer.find("a")


def test_a_list_of_cards_needs_most_of_its_entries_to_be_cards() -> None:
    """Two cards among links of one text: a menu with a promotion, navigation as before."""
    menu = "".join(f"<li><a href='/c/{i}'>Category {i}</a></li>" for i in range(4))
    cards = _product_card("Lenovo ThinkPad X1 Carbon", "$999") + _product_card("Dell XPS 13 Plus", "$899")
    page = f"<html><body><main><h1>Laptops</h1><ul>{menu}{cards}</ul>{SHOP_TEXT}</main></body></html>"
    assert not any("Lenovo" in block for block in both(page))
