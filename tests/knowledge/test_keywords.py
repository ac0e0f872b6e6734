"""The keyword filter: which items a keyword query matches, on the real database, and its answers."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge.keywords import MAX_TERMS
from knowledge.models import KnowledgeItem
from knowledge.ranking import Hit, SearchFilters, search
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db

# (keyword query, texts it must match, near misses it must not match)
CASES = [
    (
        "ERR_CONN_RESET",
        ["The client fails with ERR_CONN_RESET when the proxy drops idle sockets."],
        ["The client fails with ERR_CONN_RESET_TIMEOUT after a minute.", "err conn reset, in prose"],
    ),
    (
        "rotate_signing_keys",
        ["Call rotate_signing_keys() every quarter.", "rotate_signing_keys runs nightly"],
        ["Call rotate_signing_key() once.", "We rotate signing keys by hand."],
    ),
    (
        "INC-1042",
        ["See INC-1042 for the outage."],
        ["See INC-10420 and INC-1043 for the outage.", "inc 1042"],
    ),
    (
        "src/lib/auth.ts",
        ["The guard lives in src/lib/auth.ts."],
        ["The guard lives in src/lib/auth.js and lib/auth.ts."],
    ),
    ('"--no-verify"', ["Never commit with --no-verify."], ["Always run git commit --verify."]),
    ("v2.3.1", ["Fixed in v2.3.1, upgrade."], ["Fixed in v2.3.10 and v2.3."]),
    ("kebab-case", ["Slugs are kebab-case."], ["kebab case slugs"]),
    ("settings.DATABASES", ["Read settings.DATABASES first."], ["settings and DATABASES"]),
    ("E1102", ["pylint E1102 fires here"], ["pylint E11020 fires here"]),
    (
        '"signing keys are rotated"',
        ["Our signing keys are rotated every quarter."],
        ["Signing is rotated and keys are new."],
    ),
    # by their parts: a word finds the identifiers that hold it
    ("signing", ["Call rotate_signing_keys() every quarter."], ["Call rotate_keys() every quarter."]),
    ("1042", ["See INC-1042 for the outage."], ["See INC-10420 for the outage."]),
    ("auth", ["The guard lives in src/lib/auth.ts."], ["The guard lives in src/lib/author.ts."]),
    ("DATABASES", ["Read settings.DATABASES first."], ["Read settings.CACHES first."]),
    # English stemming applies to prose
    ("deploy", ["We are deploying services on Fridays."], ["We ship services on Fridays."]),
    ('"deployed services"', ["Deploying services on Fridays is banned."], ["Services deploy on Fridays."]),
    # websearch syntax: exclusion and or
    ("redis -cache", ["redis streams for jobs"], ["redis cache for sessions"]),
    ("ERR_CONN_RESET or INC-1042", ["ERR_CONN_RESET again", "INC-1042 again"], ["ERR_CONN_REFUSED again"]),
]


def _matching(project, text: str) -> set[str]:
    return set(
        KnowledgeItem.objects.in_projects([project]).matching([text]).values_list("content", flat=True)
    )


@pytest.mark.parametrize(("text", "matches", "near_misses"), CASES, ids=[case[0] for case in CASES])
def test_a_keyword_query_matches_its_identifier_whole_and_by_parts_and_not_its_near_misses(
    cast, text, matches, near_misses
):
    for n, content in enumerate(matches + near_misses):
        make_item(cast.project, f"Note {n}", content)
    assert _matching(cast.project, text) == set(matches)


def test_the_title_is_matched_too(cast):
    make_item(cast.project, "Runbook for INC-1042", "What we did.")
    assert _matching(cast.project, "INC-1042") == {"What we did."}


def _search(api, body: dict):
    return api.post("/api/v1/search/", body, format="json")


def test_a_keyword_filter_narrows_the_api_search_to_the_items_that_match(cast, owner_api):
    wanted = make_item(
        cast.project, "Proxy resets", "Clients see ERR_CONN_RESET when the proxy drops sockets."
    )
    make_item(cast.project, "Proxy timeouts", "Clients see timeouts when the proxy drops sockets.")
    response = _search(owner_api, {"query": "proxy drops sockets", "filters": {"text": "ERR_CONN_RESET"}})
    assert response.status_code == 200, response.content
    body = response.json()
    assert [hit["item"]["id"] for hit in body["results"]] == [wanted.pk]
    assert body["results"][0]["highlights"]["content"] == [{"start": 12, "end": 26, "text": "ERR_CONN_RESET"}]


def test_highlights_mark_stemmed_words_and_identifier_parts_in_title_and_content(cast):
    make_item(cast.project, "Deploying keys", "We deployed rotate_signing_keys() to src/lib/auth.ts today.")
    (hit,) = search(
        projects=[cast.project], query="deploy", filters=SearchFilters(texts=("deploy auth",))
    ).hits
    assert [span.text for span in hit.highlights["title"]] == ["Deploying"]
    assert [span.text for span in hit.highlights["content"]] == ["deployed", "auth"]
    (hit,) = search(
        projects=[cast.project], query="keys", filters=SearchFilters(texts=("rotate_signing_keys",))
    ).hits
    assert [span.text for span in hit.highlights["content"]] == ["rotate_signing_keys"]


def test_a_lone_part_of_a_queried_identifier_is_not_highlighted(cast):
    make_item(cast.project, "Proxy resets", "Clients see ERR_CONN_RESET; a reset of the proxy fixes it.")
    (hit,) = search(
        projects=[cast.project], query="proxy", filters=SearchFilters(texts=("ERR_CONN_RESET",))
    ).hits
    assert hit.highlights["title"] == []
    assert [span.text for span in hit.highlights["content"]] == ["ERR_CONN_RESET"]


@pytest.mark.parametrize(
    ("text", "spaced"),
    [
        ("src/lib/auth.ts", "src lib auth ts"),
        ("std::io::Read", "std  io  Read"),
        ("a-_-b c", "a   b c"),
        ("--no-verify", "--no verify"),
        ("v2.3.1.", "v2 3 1."),
        ("-5, .5 and x.", "-5, .5 and x."),
        ("_private_ __dunder__", "_private_ __dunder__"),
    ],
)
def test_the_headline_reads_each_field_with_the_punctuation_inside_identifiers_spaced(text, spaced):
    """Every character of a run of punctuation between letters or digits, and no other, becomes a space:
    the words the index reads, at the offsets of the text itself."""
    from django.db.models import Value

    from knowledge import keywords

    assert keywords._evaluated(keywords._spaced(Value(text))) == spaced


@pytest.mark.parametrize(
    ("text", "nothing_marked"),
    [
        ("-TODO", True),
        ("-TODO -FIXME", True),
        ("-e1102 -the", True),
        ("-TODO_LIST", False),  # its parts are words of the highlight query
        ("-TODO-x", False),
        ("redis -cache", False),
        ("redis or -cache", False),  # an item with "redis cache" matches, and "cache" is marked
        ('-"root cause"', False),
    ],
)
def test_only_a_query_of_excluded_words_skips_the_highlights(text, nothing_marked):
    """Skipped only where PostgreSQL reads the query, and its highlight query, as one same conjunction of
    excluded words: no item the filter matches holds one of them."""
    from django.db.models import Func, TextField

    from knowledge import keywords

    def read(query):
        return keywords._evaluated(Func(query, template="(%(expressions)s)::text", output_field=TextField()))

    assert keywords.marks_nothing([text]) == nothing_marked
    if nothing_marked:
        matched, highlighted = read(keywords.keyword_query(text)), read(keywords.highlight_query(text))
        assert matched == highlighted
        assert all(term.startswith("!'") for term in matched.split(" & "))


def test_a_hit_of_a_query_of_excluded_words_has_empty_highlights(cast):
    make_item(cast.project, "Proxy resets", "A reset of the proxy fixes it.")

    def headlines_read(texts) -> tuple[Hit, bool]:
        """The one hit, and whether any statement of the search ran ts_headline."""
        with CaptureQueriesContext(connection) as queries:
            (hit,) = search(projects=[cast.project], query="proxy", filters=SearchFilters(texts=texts)).hits
        return hit, any("ts_headline" in q["sql"].lower() for q in queries.captured_queries)

    hit, read = headlines_read(("-TODO",))
    assert hit.highlights == {"title": [], "content": []}
    assert not read  # skipped, not merely computed and found empty
    hit, read = headlines_read(("reset or -TODO",))
    assert [span.text for span in hit.highlights["content"]] == ["reset"] and read
    hit, read = headlines_read(("-TODO", "reset"))
    assert [span.text for span in hit.highlights["content"]] == ["reset"] and read  # one marks, so all do


def test_a_hit_without_a_keyword_filter_has_no_highlights(cast, owner_api):
    make_item(cast.project, "Proxy resets", "Clients see ERR_CONN_RESET.")
    (hit,) = _search(owner_api, {"query": "proxy"}).json()["results"]
    assert hit["highlights"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "q", "filters": {"text": "or - the"}}, "filters"),
        ({"query": "q", "filters": {"text": '""  ((( !!'}}, "filters"),
        ({"query": "q", "filters": {"text": " ".join(["word"] * 2000)}}, "filters"),
        ({"query": "q", "min_score": 1.5}, "min_score"),
        ({"query": "q", "min_score": -0.1}, "min_score"),
        ({"query": "q tag:nowhere"}, "query"),
        ({"query": "q project:nowhere"}, "query"),  # a fault of the query's syntax, at every door
        ({"query": 'q "the"'}, "query"),
        ({"query": "tag:ops path:src/lib/auth.ts"}, "query"),  # filters alone: nothing to rank by
    ],
)
def test_bad_keyword_input_is_a_400_naming_the_field(cast, owner_api, body, field):
    make_item(cast.project, "Proxy resets", "Clients see ERR_CONN_RESET.", tags=["ops"])
    response = _search(owner_api, body)
    assert response.status_code == 400, response.content
    assert field in response.json()
    if field == "filters":
        assert "text" in response.json()["filters"]


def test_an_unknown_inline_project_gets_the_answer_of_an_unknown_project_on_the_query(cast, owner_api):
    inline = _search(owner_api, {"query": "q project:nowhere"})
    named = _search(owner_api, {"query": "q", "project": "nowhere"})
    assert inline.status_code == named.status_code == 400
    assert inline.json() == {"query": named.json()["project"]}


def test_the_term_limit_is_below_two_thousand():
    assert MAX_TERMS < 2000


def test_min_score_drops_the_hits_below_it_and_keeps_the_rest(cast, owner_api):
    make_item(cast.project, "Proxy resets", "Clients see ERR_CONN_RESET when the proxy drops sockets.")
    make_item(cast.project, "Lunch menu", "Soup on Mondays.")
    everything = _search(owner_api, {"query": "proxy drops sockets"}).json()["results"]
    assert len(everything) == 2
    floor = (everything[0]["score"] + everything[1]["score"]) / 2
    floored = _search(owner_api, {"query": "proxy drops sockets", "min_score": floor}).json()["results"]
    assert [hit["item"]["id"] for hit in floored] == [everything[0]["item"]["id"]]
    none = _search(owner_api, {"query": "proxy drops sockets", "min_score": None}).json()["results"]
    assert len(none) == 2


def test_inline_syntax_is_understood_into_the_same_search(cast, owner_api):
    make_item(cast.project, "Proxy resets", "Clients see ERR_CONN_RESET from src/lib/auth.ts.", tags=["ops"])
    make_item(cast.project, "Proxy resets too", "Clients see ERR_CONN_RESET elsewhere.", tags=["ops"])
    make_item(cast.project, "Untagged", "Clients see ERR_CONN_RESET from src/lib/auth.ts.")
    response = _search(
        owner_api, {"query": "why do clients fail ERR_CONN_RESET tag:ops path:src/lib/auth.ts project:acme"}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["understood"] == {
        "query": "why do clients fail",
        "text": "ERR_CONN_RESET",
        "tags": ["ops"],
        "paths": ["src/lib/auth.ts"],
        "project": "acme",
    }
    assert [hit["item"]["title"] for hit in body["results"]] == ["Proxy resets"]
