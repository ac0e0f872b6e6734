"""Keyword search over items: the text both the index and the queries read, built in one place.

PostgreSQL's default parser cuts identifiers into words (``ERR_CONN_RESET`` is three words, ``INC-1042``
a word and a negative number) or keeps some whole with no parts (``src/lib/auth.ts`` is one "file"
token). So the indexed document is the English analysis of the text twice over:

- once with the punctuation inside identifiers turned into spaces, so an identifier's parts match as
  words and prose is stemmed as usual (``signing`` finds ``rotate_signing_keys``);
- once with each identifier turned into one word (``errzqconnzqresetzq``), so a query that names the
  identifier finds it whole and only whole (``ERR_CONN_RESET`` does not find ``ERR_CONN_RESET_TIMEOUT``).
  The word ends in the marker, which no English suffix ends in, so the stemmer leaves it as it is.

A query goes through the second rewrite before ``websearch_to_tsquery``: its identifiers are whole
words and its prose is stemmed, exactly as the document's.
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import dataclass
from functools import lru_cache

from django.contrib.postgres.search import SearchHeadline, SearchQuery, SearchVector
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Func, IntegerField, TextField, Value
from django.db.models.functions import Concat
from django.db.models.sql import Query
from django.utils.translation import gettext_lazy as _

CONFIG = "english"
# What joins an identifier's parts (``_``, ``-``, ``.``, ``/``, ``:``), between letters or digits.
_PUNCTUATION_CHARACTERS = "-_./:"
_PUNCTUATION = f"[{_PUNCTUATION_CHARACTERS}]"
_JOINER = f"{_PUNCTUATION}+"
_IDENTIFIER = f"([[:alnum:]]+(?:{_JOINER}[[:alnum:]]+)+)"
_INSIDE = f"([[:alnum:]]){_JOINER}(?=[[:alnum:]])"
MARKER = "zq"
MAX_TERMS = 100  # words a keyword query may hold: each is a probe of the index

TOO_MANY_TERMS = _("A keyword query holds at most %(max)d terms.")
NOTHING_TO_MATCH = _("The keyword query holds only operators or common words: it matches nothing.")
UNREADABLE = _("PostgreSQL cannot read this keyword query.")


def _replace(expression, pattern: str, replacement: str) -> Func:
    return Func(
        expression,
        Value(pattern),
        Value(replacement),
        Value("g"),
        function="regexp_replace",
        output_field=TextField(),
    )


def identifier_parts(expression) -> Func:
    """``expression`` with the punctuation inside identifiers turned into spaces."""
    return _replace(expression, _INSIDE, r"\1 ")


def identifier_words(expression) -> Func:
    """``expression`` with each identifier turned into one word: ``INC-1042`` → ``inczq1042zq``."""
    return _replace(_replace(expression, _IDENTIFIER, rf"\1{MARKER}"), _INSIDE, rf"\1{MARKER}")


def document():
    """The indexed document of an item (the generated column's expression)."""
    text = Concat(F("title"), Value("\n"), F("content"), output_field=TextField())
    return SearchVector(identifier_parts(text), config=CONFIG) + SearchVector(
        identifier_words(text), config=CONFIG
    )


def keyword_query(*texts: str) -> SearchQuery:
    """The tsquery of ``texts``, each in ``websearch_to_tsquery`` syntax and rewritten as the document
    is: an item must match all of them."""
    return _all(
        SearchQuery(identifier_words(Value(text)), config=CONFIG, search_type="websearch") for text in texts
    )


def _all(queries):
    queries = list(queries)
    combined = queries[0]
    for query in queries[1:]:
        combined &= query
    return combined


def _evaluated(expression):
    """The value of ``expression``, which reads no table, from one query."""
    query = Query(None)
    sql, params = expression.resolve_expression(query).as_sql(
        query.get_compiler(connection=connection), connection
    )
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {sql}", params)
        return cursor.fetchone()[0]


def text_error(text: str) -> str | None:
    """Why ``text`` is no keyword query to search with, or None."""
    if len(text.split()) > MAX_TERMS:
        return str(TOO_MANY_TERMS % {"max": MAX_TERMS})
    # A failed statement must not spoil the caller's transaction; outside one (autocommit) it spoils
    # nothing, and a transaction of its own would cost two more round trips (BEGIN, COMMIT).
    guard = transaction.atomic() if connection.in_atomic_block else nullcontext()
    try:
        with guard:
            nodes = _evaluated(Func(keyword_query(text), function="numnode", output_field=IntegerField()))
    except DatabaseError:
        return str(UNREADABLE)
    return None if nodes else str(NOTHING_TO_MATCH)


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str


# ts_headline's markers around a match: control characters, which a text rarely holds (a text that holds
# them gets no highlights rather than wrong ones).
_START, _STOP = "\x01", "\x02"
_MARKED = re.compile(f"{_START}(.*?){_STOP}", re.DOTALL)
_IDENTIFIER_GLUE = re.compile(f"{_PUNCTUATION}+")


def _spaced(expression) -> Func:
    """``expression`` with each punctuation character inside an identifier a space: the words of
    ``identifier_parts`` at the same offsets as in the text itself.

    The character comes first and the look behind (at the text up to it) second: PostgreSQL then looks
    behind only at punctuation, not at every character of the text."""
    return _replace(
        expression,
        f"{_PUNCTUATION}(?<=[[:alnum:]]{_PUNCTUATION}*{_PUNCTUATION})(?={_PUNCTUATION}*[[:alnum:]])",
        " ",
    )


def highlight_query(*texts: str) -> SearchQuery:
    """What ts_headline marks for the keyword queries ``texts``: their words and identifiers' parts."""
    return _all(
        SearchQuery(identifier_parts(Value(text)), config=CONFIG, search_type="websearch") for text in texts
    )


# A keyword query that only excludes words: each term a minus and ASCII letters or digits, between ASCII
# spaces (so both rewrites leave it as it is, and PostgreSQL reads each term as one word).
_EXCLUSIONS_ONLY = re.compile(r"[ \t\n\r]*-[A-Za-z0-9]+(?:[ \t\n\r]+-[A-Za-z0-9]+)*[ \t\n\r]*")


def marks_nothing(texts) -> bool:
    """Whether ``headline`` marks nothing in any item that the keyword queries ``texts`` match: they
    only exclude words (``-TODO``), and ts_headline marks only the query's words, which none holds."""
    return all(_EXCLUSIONS_ONLY.fullmatch(text) for text in texts)


def headline(field: str, texts) -> SearchHeadline:
    """``field`` with every match of the keyword queries ``texts`` between markers (see ``spans``)."""
    return SearchHeadline(
        _spaced(F(field)),
        highlight_query(*texts),
        config=CONFIG,
        start_sel=_START,
        stop_sel=_STOP,
        highlight_all=True,
    )


_PY_IDENTIFIER = re.compile(r"[^\W_]+(?:[-_./:]+[^\W_]+)+")
_PY_WORD = re.compile(r"[^\W_]+")


def _wanted_span(text: str, identifiers: frozenset[str], has_words: bool) -> bool:
    """Whether a marked stretch is what the queries asked for: ts_headline marks every word of an
    identifier's phrase wherever it stands, so a lone part of an identifier only counts when the
    queries also hold words of their own (which it may be the stem of)."""
    if text.lower() in identifiers:
        return True
    return has_words and not _IDENTIFIER_GLUE.search(text)


@lru_cache(maxsize=256)
def _asked(texts: tuple[str, ...]) -> tuple[frozenset[str], bool]:
    """What the keyword queries ``texts`` ask ``_wanted_span`` for: their identifiers (lowercase), and
    whether they hold words of their own."""
    identifiers = frozenset(m.group().lower() for text in texts for m in _PY_IDENTIFIER.finditer(text))
    return identifiers, any(_PY_WORD.search(_PY_IDENTIFIER.sub(" ", text)) for text in texts)


def spans(original: str, marked: str | None, texts=()) -> list[Span]:
    """The marked stretches of ``original``, as ``headline`` marked its spaced copy for the keyword
    queries ``texts``; the parts of one identifier make one span."""
    if not marked or _START not in marked:
        return []
    if not _spaced_alike(original, marked.replace(_START, "").replace(_STOP, "")):
        return []
    identifiers, has_words = _asked(tuple(texts))
    found: list[list[int]] = []
    removed = 0
    for match in _MARKED.finditer(marked):
        start = match.start() - removed
        end = start + len(match.group(1))
        removed += len(_START) + len(_STOP)
        if found and _IDENTIFIER_GLUE.fullmatch(original[found[-1][1] : start]):
            found[-1][1] = end
        else:
            found.append([start, end])
    return [
        Span(start, end, original[start:end])
        for start, end in found
        if _wanted_span(original[start:end], identifiers, has_words)
    ]


_SPACE_PUNCTUATION = str.maketrans(_PUNCTUATION_CHARACTERS, " " * len(_PUNCTUATION_CHARACTERS))


def _spaced_alike(original: str, spaced: str) -> bool:
    """Whether ``spaced`` is ``original`` as ``_spaced`` leaves it: the same length, only punctuation spaced.

    Compared whole, with punctuation turned into spaces on both sides, and then where ``spaced`` kept
    punctuation (the comparison took any punctuation or space there for any other)."""
    return (
        len(original) == len(spaced)
        and original.translate(_SPACE_PUNCTUATION) == spaced.translate(_SPACE_PUNCTUATION)
        and all(original[m.start() : m.end()] == m.group() for m in _IDENTIFIER_GLUE.finditer(spaced))
    )
