from __future__ import annotations

import gc
import random

import pytest

from scrapy_simhash.core import templates
from scrapy_simhash.core.templates import TemplateMemory, block_key

CHROME = ["home | docs | blog", "copyright example inc"]


def _name(n: int) -> str:
    """A distinct word per page (digits would not do: block keys ignore them)."""
    return "".join(chr(ord("a") + int(digit)) for digit in str(n))


def _page(n: int) -> list[str]:
    return [*CHROME, f"article {_name(n)} says something new"]


def _crawl(memory: TemplateMemory, pages: int, domain: str = "example.com") -> list[list[str]]:
    kept = []
    for n in range(pages):
        blocks = _page(n)
        kept.append(memory.filter(domain, blocks))
        memory.learn(domain, blocks, page=block_key(f"page {_name(n)}"))  # far apart
    return kept


def test_blocks_on_many_pages_become_template() -> None:
    kept = _crawl(TemplateMemory(min_pages=3, min_share=0.0), pages=6)
    assert kept[0] == _page(0)  # nothing learned yet
    assert kept[-1] == ["article f says something new"]


def test_near_copies_of_one_page_do_not_teach_their_text() -> None:
    memory = TemplateMemory(min_pages=3, min_share=0.0)
    blocks = _page(1)
    for flipped_bit in range(6):  # the same article under six URLs: fingerprints 1 bit apart
        memory.learn("example.com", blocks, page=1 << flipped_bit)
    assert memory.filter("example.com", blocks) == blocks


def test_a_block_must_be_on_a_share_of_the_pages() -> None:
    memory = TemplateMemory(min_pages=3, min_share=0.5)
    _crawl(memory, pages=4)
    for n in range(20):  # pages without the footer
        memory.learn("example.com", [f"other page {_name(n)}"], page=block_key(f"other {_name(n)}"))
    assert not memory.is_template("example.com", CHROME[1])


def test_domains_are_kept_apart_and_bounded() -> None:
    memory = TemplateMemory(min_pages=3, min_share=0.0, max_domains=2)
    _crawl(memory, pages=6, domain="a.example")
    assert memory.is_template("a.example", CHROME[0])
    assert not memory.is_template("b.example", CHROME[0])
    _crawl(memory, pages=1, domain="b.example")
    _crawl(memory, pages=1, domain="c.example")
    assert len(memory) == 2 and not memory.is_template("a.example", CHROME[0])  # LRU dropped


def test_blocks_per_domain_are_bounded() -> None:
    memory = TemplateMemory(min_pages=3, max_blocks=50)
    for n in range(500):
        memory.learn("example.com", [f"unique block {_name(n)}"], page=block_key(f"unique {_name(n)}"))
    assert len(memory._domains["example.com"].pages_of) <= 50


def test_digits_do_not_count_in_block_keys() -> None:
    assert block_key("views: 6033 | replies: 5") == block_key("views: 17 | replies: 240")
    assert block_key("views") != block_key("replies")


@pytest.mark.parametrize("kwargs", [{"min_pages": 1}, {"min_share": 1.5}, {"max_domains": 0}])
def test_bad_settings_fail_fast(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        TemplateMemory(**kwargs)  # type: ignore[arg-type]


def test_remembered_block_keys_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _crawl(TemplateMemory(min_pages=3, min_share=0.0), pages=8)
    monkeypatch.setattr(templates, "_REMEMBERED_KEYS", 2)  # forgets all the time
    memory = TemplateMemory(min_pages=3, min_share=0.0)
    assert _crawl(memory, pages=8) == expected
    assert all(memory.is_template("example.com", block) for block in CHROME)


def test_memory_gives_the_garbage_collector_nothing_to_walk() -> None:
    """A crawl's memory holds tens of thousands of blocks, and each full collection of the
    crawl's process would walk every container among them: there must be none per block."""
    memory = TemplateMemory(min_pages=3)
    _crawl(memory, pages=5)
    gc.collect()
    before = len(gc.get_objects())
    kept = _crawl(memory, pages=2000)
    gc.collect()
    assert len(gc.get_objects()) - before < 100 + len(kept)  # (the kept lists we hold here)
    assert len(memory._domains["example.com"].pages_of) >= 2000  # what would be walked


def test_a_full_memory_of_shared_blocks_frees_a_quarter_at_once() -> None:
    """Full of blocks seen on several pages, it forgets the least seen quarter in one scan,
    not a slot a new block (a scan each: 1.2 s for a page of 5,000 new blocks)."""
    settings = TemplateMemory(max_blocks=400)
    memory = templates._DomainMemory()
    pages = [random.Random(page).getrandbits(64) for page in range(5)]  # ~32 bits apart: 5 pages
    for key in range(400):  # each seen on 2 to 5 of them
        for page in pages[: 2 + key % 4]:
            memory.record({key}, page, settings)
    assert len(memory.seen) == 400 and min(memory.seen.values()) >= 2
    memory.record({10_000}, 0, settings)
    assert len(memory.seen) == 301  # 100 forgotten, the new block in
    assert all(memory.count(key) == 5 for key in range(3, 400, 4))  # the most seen stay
    for key in range(10_001, 10_099):
        memory.record({key}, 0, settings)
    assert len(memory.seen) == 399  # no scan since
