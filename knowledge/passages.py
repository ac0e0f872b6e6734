"""How an item is cut into passages: windows of its content that the model reads whole, with its title.

The model (all-MiniLM-L6-v2) reads 256 word-piece tokens, two of them its own markers, and cuts the
rest off. An item is therefore embedded as windows of its content, each prefixed with the title and,
after the first, the path of the headings it starts under (``inputs``), and each short enough to be
read whole.

The budget is counted in estimated word pieces rather than in words, because the tokens a word costs
vary with the text: measured with the model's own tokenizer, 200 words of English prose (the GPL's
text) are 239 tokens, and 200 words of technical Markdown (npm's and undici's docs, this project's
README) a median of 367 and up to 920. ``estimate`` counts what BERT's tokenizer splits first (runs of
letters, split at a capital as in camelCase, runs of digits, each punctuation mark, each CJK
character) and a piece more for each further 8 letters (3 digits). So a window of title and content is
budgeted ``WINDOW_TOKENS`` = 200 estimated tokens. Cut so, the title and window of those 133 technical
docs are 169 real tokens at the median, 227 at the 99th percentile and 252 at most (1,955 passages,
some 80 words each); the GPL's are 162 at the median and 203 at most (some 130 words each). Each of those
windows fits the model's 256 tokens, title included, with room for the estimate's error.

Where a window ends, best first: before a Markdown heading, at a blank line (a paragraph or a code
block's edge), at a sentence end (``.?!…`` or before ``¿¡``), at a line break, between words. The last
cut of the best kind in the window's last two thirds wins, so a window holds whole sections and
paragraphs where it can. A fenced code block is never cut unless it is longer than a window alone;
then it is cut between its lines. Each window after the first starts a little before the previous one
ended (``OVERLAP_TOKENS``, at a paragraph, sentence or line start if there is one), except after a
heading, where a section starts afresh. A run of more than 64 characters without a space (a hash, a
line of CJK text) counts as several words.

An item has at most ``MAX_PASSAGES`` passages: the content limit (100,000 characters) is about 15,000
words of prose, some 120 windows, or about 250 windows of dense technical Markdown; past the cap the
last passage runs to the end of the content, and the model reads that passage's opening (a keyword
filter still reads the whole text).
"""

from __future__ import annotations

import bisect
import re
from itertools import accumulate

# Estimated word pieces of title + window (see the module's docstring for the measurements).
WINDOW_TOKENS = 200
# A window's content gets the budget less its title's cost, but never less than this.
MIN_CONTENT_TOKENS = 100
OVERLAP_TOKENS = 40
MAX_PASSAGES = 256

WORD = re.compile(r"\S{1,64}")
PIECE = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^\W\d_]+|\d+|[^\w\s]|_"
)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)(.*)$", re.MULTILINE)
SENTENCE_END = re.compile(r"[.?!…。？！][\"'”’»)\]]*$")
BLANK_LINE = re.compile(r"\n[ \t]*\r?\n")

# What kind of cut a boundary is; a cut inside a code block that fits a window is FORBIDDEN.
FORBIDDEN, WORDS, LINE, SENTENCE, PARAGRAPH, HEADING_CUT = -1, 1, 2, 3, 4, 5


def estimate(text: str) -> int:
    """Estimated word pieces of ``text`` for a BERT tokenizer (see the module's docstring)."""
    count = 0
    for piece in PIECE.findall(text):
        if piece[0].isdigit():
            count += 1 + (len(piece) - 1) // 3
        else:
            count += 1 + (len(piece) - 1) // 8
    return count


def _fences(content: str) -> list[tuple[int, int]]:
    """The (start, end) character spans of the fenced code blocks, fences included."""
    spans, opened, marker = [], None, ""
    offset = 0
    for line in content.splitlines(keepends=True):
        match = FENCE.match(line)
        if opened is None and match:
            opened, marker = offset, match.group(1)
        elif (
            opened is not None
            and match
            and line.strip().startswith(marker)
            and not line.strip().strip(marker[0])
        ):
            spans.append((opened, offset + len(line)))
            opened = None
        offset += len(line)
    if opened is not None:
        spans.append((opened, len(content)))
    return spans


def _strengths(content: str, starts: list[int], ends: list[int], costs: list[int], budget: int) -> list[int]:
    """For each word i, what kind of cut ending a window just before it would be (index 0 unused)."""
    fences = _fences(content)
    fence_starts = [start for start, _end in fences]
    prefix = [0, *accumulate(costs)]

    def fence_of(position: int) -> int:
        index = bisect.bisect_right(fence_starts, position) - 1
        return index if index >= 0 and position < fences[index][1] else -1

    where = [fence_of(start) for start in starts]
    # A block too long for a window alone may be cut between its lines.
    oversized = {}
    for index, (start, end) in enumerate(fences):
        first = bisect.bisect_left(starts, start)
        last = bisect.bisect_left(starts, end)
        oversized[index] = prefix[last] - prefix[first] > budget
    kinds = [WORDS] * len(starts)
    for i in range(1, len(starts)):
        gap = content[ends[i - 1] : starts[i]]
        fence = where[i]
        if fence >= 0 and where[i - 1] == fence:
            kinds[i] = (LINE if "\n" in gap else WORDS) if oversized[fence] else FORBIDDEN
        elif "\n" in gap and fence < 0 and HEADING.match(content, content.rfind("\n", 0, starts[i]) + 1):
            kinds[i] = HEADING_CUT
        elif BLANK_LINE.search(gap) or (where[i] != where[i - 1]):
            kinds[i] = PARAGRAPH
        elif SENTENCE_END.search(content, starts[i - 1], ends[i - 1]) or content[starts[i]] in "¿¡":
            kinds[i] = SENTENCE
        elif "\n" in gap:
            kinds[i] = LINE
    return kinds


def cut(title: str, content: str) -> list[tuple[int, int]]:
    """The (start, end) character spans of ``content`` that are embedded as its passages, in order.

    The first starts at 0 and the last ends at ``len(content)``; each starts no later than the one
    before it ended, so together they cover the content. Empty or one-word content is one passage.
    """
    words = list(WORD.finditer(content))
    if len(words) <= 1:
        return [(0, len(content))]
    starts = [word.start() for word in words]
    ends = [word.end() for word in words]
    costs = [max(1, estimate(word.group())) for word in words]
    prefix = [0, *accumulate(costs)]
    budget = max(MIN_CONTENT_TOKENS, WINDOW_TOKENS - estimate(title))
    if prefix[-1] <= budget:
        return [(0, len(content))]
    kinds = _strengths(content, starts, ends, costs, budget)
    count = len(words)
    spans: list[tuple[int, int]] = []
    first = previous = 0
    while True:
        if len(spans) == MAX_PASSAGES - 1 or prefix[count] - prefix[first] <= budget:
            spans.append((starts[first] if spans else 0, len(content)))
            return spans
        end = _window_end(first, previous, count, prefix, kinds, budget)
        if end is None:  # the overlap leaves no room to get further (a code block follows): drop it
            first = previous
            continue
        spans.append((starts[first] if spans else 0, starts[end]))
        previous, first = end, _next_start(first, end, prefix, kinds)


def _window_end(first: int, previous: int, count: int, prefix: list[int], kinds: list[int], budget: int):
    """The word before which the window starting at word ``first`` ends, past the end of the window
    before it (word ``previous``); None if there is no such place."""
    best, best_kind, early = None, FORBIDDEN, None
    low = budget // 3
    for end in range(max(first, previous) + 1, count):
        size = prefix[end] - prefix[first]
        if size > budget:
            break
        kind = kinds[end]
        if kind == FORBIDDEN:
            continue
        if size < low:
            early = end
        elif kind >= best_kind:
            best, best_kind = end, kind
    if best or early:
        return best or early
    return first + 1 if first >= previous else None


def _next_start(first: int, end: int, prefix: list[int], kinds: list[int]) -> int:
    """Where the window after one of words [first, end) starts: a little before ``end``."""
    if kinds[end] == HEADING_CUT:
        return end
    best, best_key = end, None
    for start in range(end - 1, first, -1):
        if prefix[end] - prefix[start] > OVERLAP_TOKENS:
            break
        if kinds[start] == FORBIDDEN:
            continue
        key = (kinds[start], -start)
        if best_key is None or key > best_key:
            best, best_key = start, key
    return best


def inputs(title: str, content: str, spans: list[tuple[int, int]]) -> list[str]:
    """What the model reads of each passage of ``spans`` (``cut``'s, in order): the title, then, for every
    passage but the first, the path of the Markdown headings it starts under ("Install > From source"),
    then its content. The path tells the model what a section deep in a long doc is about, as its
    opening does for the first passage (bench/RESULTS.md, *Long documents*: deep recall@3 0.78 -> 0.81)."""
    fenced = _fences(content)
    headings = [
        (match.start(), len(match.group(1)), match.group(2).strip(" \t#"))
        for match in ATX_HEADING.finditer(content)
        if not any(start <= match.start() < end for start, end in fenced)
    ]
    texts: list[str] = []
    path: list[tuple[int, str]] = []
    next_heading = 0
    for start, end in spans:
        while next_heading < len(headings) and headings[next_heading][0] < start:
            _position, level, text = headings[next_heading]
            path = [(above, name) for above, name in path if above < level] + [(level, text)]
            next_heading += 1
        trail = " > ".join(name for _level, name in path if name)
        texts.append(
            f"{title}\n{trail}\n{content[start:end]}" if start and trail else f"{title}\n{content[start:end]}"
        )
    return texts


def passage_text(item, start: int, end: int) -> str:
    """What a hit shows of its passage: the content it covers."""
    return item.content[start:end]
