import time

import pytest

from knowledge.text import extract_references, is_proposal, without_marker


def test_references_are_normalized_and_deduplicated():
    text = (
        "See src/lib/auth.ts and ./knowledge/models.py, also README.md and app/views.py:42. "
        "Again src/lib/auth.ts#L10-L20 and app/views.py."
    )
    assert extract_references(text) == ["src/lib/auth.ts", "knowledge/models.py", "README.md", "app/views.py"]


def test_references_come_from_title_and_content():
    assert extract_references("Fix Makefile", "touches contextforge/settings.py") == [
        "Makefile",
        "contextforge/settings.py",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "We moved to version 1.2.3 last week.",
        "Use e.g. caching, i.e. redis, etc.",
        "Docs at https://example.com/docs/index.html and mail bob@example.com",
        "Costs 3.5 dollars",
        "A sentence that ends.",
    ],
)
def test_words_that_only_look_like_files_are_not_references(text):
    assert extract_references(text) == []


@pytest.mark.parametrize("marker", ["TODO:", "FIXME:", "WISH:", "XXX:", "HACK:", "IDEA:"])
def test_a_proposal_marker_at_the_start_flags_a_wish(marker):
    assert is_proposal(f"{marker} add caching", "body")
    assert is_proposal("A title", f"  \n\t{marker} in the content, after whitespace")


def test_an_inline_marker_does_not_flag_a_wish():
    assert not is_proposal("Caching decision", "We decided against it. TODO: nothing, it is done.")
    assert not is_proposal("TODO list is a word here", "no colon, no marker")


def test_a_path_like_token_longer_than_three_hundred_characters_is_not_a_reference():
    long_path = "a/" * 352 + "x.py"  # 708 characters
    assert extract_references(f"see {long_path} and src/ok.py") == ["src/ok.py"]
    assert extract_references("d/" * 148 + "x.py") == ["d/" * 148 + "x.py"]  # 300 characters


def extraction_cost(text: str) -> float:
    """The CPU time of this thread (not the wall clock, which other processes stretch) to extract
    ``text``'s references and check it for a marker: the least of five runs."""
    runs = []
    for _ in range(5):
        started = time.thread_time()
        extract_references(text)
        is_proposal(text)
        runs.append(time.thread_time() - started)
    return min(runs)


@pytest.mark.parametrize("unit", ["x.", "a/", "a.b/", "http:", "-"])
def test_extraction_grows_linearly_on_hostile_text(unit):
    # Eight times the text costs eight to thirteen times as much when the scan is linear, and 64 times
    # or more when it is quadratic (a pattern tried again from every position): a ratio, whatever the
    # machine.
    small, large = unit * (12_500 // len(unit)), unit * (100_000 // len(unit))
    assert extraction_cost(large) / extraction_cost(small) < 32


@pytest.mark.parametrize("lead", ["\ufeff", "\u200b", " \u200b\n\ufeff\t", "\u2060", "\u200d"])
def test_a_byte_order_mark_or_zero_width_character_before_a_marker_counts_as_whitespace(lead):
    assert is_proposal(f"{lead}TODO: rotate the keys", "body")
    assert without_marker(f"{lead}TODO: rotate the keys") == "rotate the keys"


@pytest.mark.parametrize("title", ["todo: rotate the keys", "Todo: rotate", "TODO rotate", "x TODO: rotate"])
def test_markers_are_case_sensitive_and_only_at_the_very_start(title):
    assert not is_proposal(title, "body")
