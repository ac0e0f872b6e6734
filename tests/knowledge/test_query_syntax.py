"""The inline query syntax, a pure function."""

from __future__ import annotations

import pytest

from knowledge.query_syntax import Understood, parts, understand, without


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("how are JWTs signed", Understood(query="how are JWTs signed")),
        (
            "why ERR_CONN_RESET after deploy?",
            Understood(query="why after deploy?", text="ERR_CONN_RESET"),
        ),
        ("who calls rotate_signing_keys()?", Understood(query="who calls", text="rotate_signing_keys()")),
        ("Foo::bar breaks", Understood(query="breaks", text="Foo::bar")),
        ("pylint E1102 and INC-1042.", Understood(query="pylint and", text="E1102 INC-1042")),
        ('never "--no-verify" commits', Understood(query="never commits", text='"--no-verify"')),
        (
            "auth flow tag:Auth tag:ops path:./src/lib/auth.ts project:acme",
            Understood(query="auth flow", tags=("auth", "ops"), paths=("src/lib/auth.ts",), project="acme"),
        ),
        ("ERR_CONN_RESET", Understood(query="ERR_CONN_RESET", text="ERR_CONN_RESET")),
        ('"exact phrase"', Understood(query="exact phrase", text='"exact phrase"')),
        ("NASA budget and HTTP", Understood(query="NASA budget and HTTP")),
        (
            "kebab-case and src/lib/auth.ts stay semantic",
            Understood(query="kebab-case and src/lib/auth.ts stay semantic"),
        ),
        ('tag:"two words" q', Understood(query="q", tags=("two words",))),
        ("", Understood(query="")),
    ],
)
def test_a_query_is_understood_as_semantic_words_keywords_and_filters(raw, expected):
    assert understand(raw) == expected


def test_removing_a_part_leaves_the_rest_of_the_query_as_it_was_written():
    raw = 'why  ERR_CONN_RESET tag:ops "exact phrase" project:acme'
    removed = {part.value: without(raw, part) for part in parts(raw) if part.kind != "query"}
    assert removed == {
        "ERR_CONN_RESET": 'why tag:ops "exact phrase" project:acme',
        "ops": 'why ERR_CONN_RESET "exact phrase" project:acme',
        '"exact phrase"': "why ERR_CONN_RESET tag:ops project:acme",
        "acme": 'why ERR_CONN_RESET tag:ops "exact phrase"',
    }
