"""Compact answers for agents, who pay for every token they read: brief hits, and token budgets.

A brief hit is an item's title, its best passage (or its first lines) cut to ``BRIEF_TEXT_TOKENS``, its
score and its badges; the whole item is one ``memory_get`` (``GET /api/v1/items/{id}/``) away. A budget
counts, with the embedding model's own tokenizer, the tokens of each entry's title and text (ids, scores,
badges and reasons are a few tokens more per entry, and are not counted). Entries are kept best first
while they fit; when not even the best one fits, it is cut to the budget and the answer says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from knowledge.embeddings import count_tokens, tokens

BRIEF = "brief"
FULL = "full"
DETAILS = (BRIEF, FULL)
# A brief hit's text: about two sentences. Ten brief hits with their titles and metadata lines stay
# within about a thousand tokens (bench/RESULTS.md, "Context of files and brief answers").
BRIEF_TEXT_TOKENS = 40
ELLIPSIS = "…"
MIN_BUDGET, MAX_BUDGET = 1, 100_000


# English prose runs about 4-5 characters a token with this model: a start of a text this many characters
# per token long nearly always holds more than ``limit`` tokens, so the tokenizer (about a microsecond a
# character here) reads only that; when it does not (long words, code), the whole text is read.
CHARS_PER_TOKEN_READ = 8


def cut(text: str, limit: int) -> tuple[str, bool]:
    """The longest start of ``text`` ending at a token's end, with an ellipsis when cut, of at most
    ``limit`` tokens; and whether it was cut."""
    if limit <= 0:
        return "", bool(text)
    head = text[: (limit + 1) * CHARS_PER_TOKEN_READ]
    ends = tokens(head).ends
    if len(ends) <= limit and len(head) < len(text):
        ends = tokens(text).ends  # very long words: read it all
    if len(ends) <= limit:
        return text, False
    for keep in range(limit - 1, -1, -1):
        shorter = (text[: ends[keep - 1]] if keep else "").rstrip() + ELLIPSIS
        if count_tokens(shorter) <= limit:
            return shorter, True
    return "", True


def flat(text: str) -> str:
    """``text`` on one line: an agent reads the words, not the layout."""
    return " ".join(text.split())


def badges(hit: Any) -> list[str]:
    """What the dashboard shows beside a hit, by name: a wish, a live file, a possibly stale text, a
    deleted file, an expired validity date, an agent's text nobody has reviewed yet."""
    marks = []
    if hit.item.is_proposal:
        marks.append("wish")
    if hit.live_references:
        marks.append("live")
    if hit.may_be_stale:
        marks.append("may_be_stale")
    if hit.deleted_references:
        marks.append("file_deleted")
    if hit.item.expired:
        marks.append("expired")
    if hit.item.unreviewed:
        marks.append("unreviewed")
    return marks


def brief_text(hit: Any) -> str:
    """The hit's best passage, or its first lines, on one line and cut to BRIEF_TEXT_TOKENS."""
    passage = hit.passage.text if hit.passage is not None else hit.item.content
    return cut(flat(passage) or flat(hit.item.content), BRIEF_TEXT_TOKENS)[0]


def brief_hit(hit: Any) -> dict:
    return {
        "id": hit.item.pk,
        "project": hit.item.project.slug,
        "title": hit.item.title,
        "text": brief_text(hit),
        "score": hit.score,
        "badges": badges(hit),
    }


def entry_cost(entry: dict) -> int:
    """The tokens a budget counts for an entry: its title and its text."""
    return count_tokens(entry.get("title", "")) + count_tokens(entry.get("text", ""))


def cut_entry(entry: dict, budget: int) -> dict:
    """``entry`` cut to ``budget`` tokens: its text first, then its title."""
    title, title_cut = cut(entry.get("title", ""), budget)
    text, text_cut = cut(entry.get("text", ""), budget - count_tokens(title))
    return entry | {"title": title, "text": text, "cut": title_cut or text_cut}


@dataclass
class Budget:
    """How an answer stands against its budget (``tokens`` None: no budget was given)."""

    tokens: int | None
    used: int = 0
    omitted: int = 0
    cut: bool = False

    def as_dict(self) -> dict:
        return {"tokens": self.tokens, "used": self.used, "omitted": self.omitted, "cut": self.cut}

    @property
    def left(self) -> int | None:
        return None if self.tokens is None else self.tokens - self.used

    def fit(
        self,
        entries: Sequence[dict],
        *,
        cost: Callable[[dict], int] = entry_cost,
        cut_first: Callable[[dict, int], dict] | None = cut_entry,
    ) -> list[dict]:
        """The entries, best first, while they fit in what is left; when not even the first fits and
        nothing was kept before, the first cut to what is left (``cut_first``, None: nothing)."""
        kept: list[dict] = []
        for entry in entries:
            spent = cost(entry)
            if self.tokens is not None and self.used + spent > self.tokens:
                break
            kept.append(entry)
            self.used += spent
        if self.tokens is not None and not kept and entries and not self.used and cut_first:
            first = cut_first(entries[0], self.tokens)
            kept, self.cut = [first], True
            self.used += cost(first)
        self.omitted += len(entries) - len(kept)
        return kept
