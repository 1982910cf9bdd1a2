# The C extraction (extract_c/); see content.extract_main_blocks and content._configure_c_code.
from collections.abc import Callable, Collection, Sequence

from lxml import etree

BLOCK: int
BOILERPLATE: int
CONTAINER: int
LINK: int
HEADING: int
MAIN: int
ARTICLE: int
KEPT: int
TEXT_BLOCK: int
LISTING: int
INVISIBLE: int
NEVER_LINK_LIST: int
SECTION_HEADING: int
PARAGRAPH: int
ENTRY_PART: int
CELL: int
LANDMARK: int
LIST: int
CODE: int
BREAK: int
BUILT_LXML_VERSION: str
BUILT_LIBXML_VERSION: int

class Unsupported(ValueError): ...

def main_blocks(root: etree._Element, own: str | None = None, parts: tuple[bytes, ...] = (), /) -> list[str]: ...
def attribute_verdict(pairs: Sequence[tuple[str, str]], /) -> int: ...
def configure_names(
    roles: Collection[str],
    hidden_styles: Sequence[tuple[str, str]],
    class_rules: tuple[Collection[str], Sequence[str]],
    id_rules: tuple[Collection[str], Sequence[str]],
    content_rules: tuple[Collection[str], Sequence[str]],
    link_box_words: Collection[str],
    header_parts: Sequence[str],
    /,
) -> None: ...
def configure_threads(has_stamp: Callable[[str], bool], /) -> None: ...
def configure_digests(min_entries: int, cover: float, max_chars_per_link: float, /) -> None: ...
def collapse_blocks(joined: str, boundary: str, need_letter: bool, /) -> list[str]: ...
def fold_blocks(blocks: list[str], boundary: str, need_letter: bool, /) -> list[str] | None: ...
def configure_folding(classify: Callable[[int], int | str], /) -> None: ...
def block_keys(blocks: list[str], short_block: int, /) -> list[int]: ...
def configure(
    tags: dict[bytes, int],
    verdict: Callable[[tuple[tuple[str, str], ...]], int],
    credit: tuple[Callable[[str], bool], str, str, int],
    shares: tuple[float, float, float, float, float, float, float, float, float, float, float, float, float],
    counts: tuple[int, int, int, int, int, int],
    /,
) -> None: ...
