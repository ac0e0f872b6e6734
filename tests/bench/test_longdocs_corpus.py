"""The long-document benchmark's corpus (bench/longdocs/) and its questions are well-formed: every
project's docs sit beside their licence, every question names a doc that exists and a few words of it
that answer, "deep" questions are answered past a long doc's opening and "early" ones inside it, and no
question copies its answer's words."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "longdocs"
QUESTIONS = json.loads((CORPUS / "questions.json").read_text())
# The model reads about 200 words: a deep answer starts well past the first window, an early one ends
# inside it.
WINDOW = 200
DEEP_START = 300
LONG_DOC = 1000
# A question may share a short phrase with its doc ("the interactive docs"), not a clause.
LONGEST_SHARED_RUN = 4
FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n.*?^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


def body(doc: str) -> str:
    """A doc's text as the Markdown importer keeps it: without its YAML frontmatter."""
    text = (CORPUS / doc).read_text(encoding="utf-8")
    match = FRONTMATTER.match(text)
    return text[match.end() :] if match else text


def evidence_words(question: dict) -> tuple[int, int]:
    """The word offsets where the question's evidence starts and ends in its doc."""
    text = body(question["doc"])
    at = text.find(question["evidence"])
    assert at >= 0, f"{question['doc']} does not say {question['evidence']!r}"
    return len(text[:at].split()), len(text[: at + len(question["evidence"])].split())


def shared_run(question: str, doc: str) -> int:
    """The most consecutive words that the question and its doc share."""
    words = re.findall(r"\w+", question.lower())
    text = " " + " ".join(re.findall(r"\w+", body(doc).lower())) + " "
    longest = 0
    for start in range(len(words)):
        for end in range(start + longest + 1, len(words) + 1):
            if f" {' '.join(words[start:end])} " not in text:
                break
            longest = end - start
    return longest


def test_each_project_has_its_licence_and_enough_docs():
    projects = [p for p in CORPUS.iterdir() if p.is_dir()]
    assert projects
    for project in projects:
        assert (project / "LICENSE").read_text().strip(), project.name
    docs = list(CORPUS.rglob("*.md"))
    assert len(docs) >= 100
    assert sum(len(d.read_text(encoding="utf-8").split()) > LONG_DOC for d in docs) >= 20
    assert sum(d.stat().st_size for d in CORPUS.rglob("*")) < 3_000_000
    assert "licence" in (CORPUS / "SOURCES.txt").read_text()


def test_there_are_enough_questions_of_each_kind():
    assert len(QUESTIONS["deep"]) >= 20
    assert len(QUESTIONS["early"]) >= 20
    assert len(QUESTIONS["deep"]) + len(QUESTIONS["early"]) >= 40
    everything = [q["question"] for kind in ("deep", "early") for q in QUESTIONS[kind]]
    assert len(set(everything)) == len(everything)


@pytest.mark.parametrize("question", QUESTIONS["deep"], ids=lambda q: q["doc"])
def test_a_deep_question_is_answered_past_a_long_docs_opening(question):
    assert (CORPUS / question["doc"]).is_file(), question["doc"]
    assert len(body(question["doc"]).split()) > LONG_DOC
    start, _end = evidence_words(question)
    assert start >= DEEP_START, (question["doc"], start)


@pytest.mark.parametrize("question", QUESTIONS["early"], ids=lambda q: q["doc"])
def test_an_early_question_is_answered_in_a_docs_opening(question):
    assert (CORPUS / question["doc"]).is_file(), question["doc"]
    _start, end = evidence_words(question)
    assert end <= WINDOW, (question["doc"], end)


@pytest.mark.parametrize("question", QUESTIONS["deep"] + QUESTIONS["early"], ids=lambda q: q["question"][:40])
def test_a_question_does_not_copy_its_answer(question):
    assert question["evidence"].lower() not in question["question"].lower()
    assert shared_run(question["question"], question["doc"]) <= LONGEST_SHARED_RUN
