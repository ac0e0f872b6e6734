import pytest

from knowledge.text import extract_references, is_proposal


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
