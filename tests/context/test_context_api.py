"""POST /api/v1/context/ on the real stack: a synced repository made by the test, the model, tasks."""

from __future__ import annotations

import pytest

from knowledge.embeddings import count_tokens
from tests.conftest import api_client_for
from tests.context.conftest import QUERY

pytestmark = pytest.mark.django_db


def post(client, body):
    return client.post("/api/v1/context/", body, format="json")


def test_context_of_a_changed_file_ranks_the_item_naming_it_above_a_closer_item_that_names_nothing(
    cast, workspace
):
    client = api_client_for(cast.member, scopes=("read",), project=cast.project)
    items = workspace["items"]
    # Plain search puts the item that names nothing first: it is the closer one in meaning.
    searched = client.post("/api/v1/search/", {"query": QUERY, "limit": 4}, format="json").json()
    assert searched["results"][0]["item"]["id"] == items["closer"].pk

    response = post(client, {"paths": ["src/lib/auth.ts"], "query": QUERY})

    assert response.status_code == 200, response.content
    body = response.json()
    ids = [entry["id"] for entry in body["items"]]
    assert ids[0] == items["names_file"].pk
    assert items["names_neighbour"].pk in ids  # a file in the same folder
    assert (
        items["closer"].pk not in ids and items["elsewhere"].pk not in ids and items["deeper"].pk not in ids
    )
    first = body["items"][0]
    sha = workspace["auth_sha"][:7]
    assert first["reasons"] == ["names src/lib/auth.ts", f"src/lib/auth.ts live since commit {sha} of ana"]
    assert "live" in first["badges"]
    assert first["signals"]["git"] == 1.0
    neighbour = body["items"][ids.index(items["names_neighbour"].pk)]
    assert neighbour["reasons"] == ["names a file in src/lib/"]
    assert [task["id"] for task in body["tasks"]] == [workspace["open_task"].pk]
    assert body["tasks"][0]["reasons"] == ["names src/lib/auth.ts"]
    assert [(c["sha"], c["author"], c["files"]) for c in body["commits"]] == [
        (
            workspace["auth_sha"][:10],
            "ana <dev@example.com>",
            [{"path": "src/lib/auth.ts", "change_type": "A"}],
        )
    ]
    assert body["ranked_against"] == QUERY and body["paths"] == ["src/lib/auth.ts"]


def test_a_folder_brings_the_items_tasks_and_commits_of_its_files_ranked_against_the_paths_words(
    cast, workspace
):
    client = api_client_for(cast.member, scopes=("read",), project=cast.project)
    items = workspace["items"]

    body = post(client, {"paths": ["./src/lib/"]}).json()

    assert body["paths"] == ["src/lib/"] and body["ranked_against"] == "src lib"
    assert {entry["id"] for entry in body["items"]} == {
        items["names_file"].pk,
        items["names_neighbour"].pk,
        items["deeper"].pk,
    }
    assert all(entry["reasons"][0] == "names a file in src/lib/" for entry in body["items"])
    assert [task["id"] for task in body["tasks"]] == [workspace["open_task"].pk]
    assert {file["path"] for commit in body["commits"] for file in commit["files"]} == {
        "src/lib/auth.ts",
        "src/lib/session.ts",
    }


def test_the_git_window_is_a_parameter_of_thirty_days_by_default_and_the_branch_narrows_it(cast, workspace):
    client = api_client_for(cast.member, scopes=("read",), project=cast.project)
    ask = {"paths": ["src/lib/"]}

    def files(body):
        return [file["path"] for commit in body["commits"] for file in commit["files"]]

    default, week, wide = (
        post(client, ask | window).json() for window in ({}, {"window_days": 7}, {"window_days": 60})
    )

    # Commits of src/lib/: auth.ts 3 days ago, session.ts 10 days ago, crypto/keys.ts 50 days ago.
    assert files(default) == ["src/lib/auth.ts", "src/lib/session.ts"]
    assert files(week) == ["src/lib/auth.ts"]
    assert files(wide) == ["src/lib/auth.ts", "src/lib/session.ts", "src/lib/crypto/keys.ts"]
    deeper = next(e for e in wide["items"] if e["id"] == workspace["items"]["deeper"].pk)
    assert deeper["reasons"][1].startswith("src/lib/crypto/keys.ts live since commit ")
    assert week["since"] > default["since"] > wide["since"]
    # The repository syncs the remote's default branch, main: asked by its name, it is found.
    on_main = post(client, ask | {"branch": "main"}).json()
    assert (
        files(on_main) == files(default) and post(client, ask | {"branch": "release"}).json()["commits"] == []
    )
    for value in (0, 366, "week", 1.5):
        response = post(client, ask | {"window_days": value})
        assert response.status_code == 400 and list(response.json()) == ["window_days"], value


def test_a_path_that_no_repository_or_item_names_matches_nothing(cast, workspace):
    client = api_client_for(cast.member, scopes=("read",), project=cast.project)

    body = post(client, {"paths": ["nowhere/else.py", "vendor/"], "query": QUERY}).json()

    assert (body["items"], body["tasks"], body["commits"]) == ([], [], [])


def test_climbing_absolute_blank_and_over_long_paths_get_a_400_naming_paths(cast, workspace):
    client = api_client_for(cast.member, scopes=("read",), project=cast.project)
    for paths in (
        ["../secrets.txt"],
        ["src/../../etc/passwd"],
        ["/etc/passwd"],
        ["C:\\Windows\\win.ini"],
        ["~/notes.md"],
        ["a/" * 600],
        [""],
        ["src/\x00.ts"],
        [],
        "src/lib/auth.ts",
    ):
        response = post(client, {"paths": paths})
        assert response.status_code == 400, paths
        assert "paths" in response.json(), paths
    for field, value in (("budget_tokens", 0), ("limit", 51), ("detail", "everything"), ("query", " ")):
        response = post(client, {"paths": ["src/lib/auth.ts"], field: value})
        assert response.status_code == 400 and field in response.json(), field


def test_a_budget_keeps_the_best_entries_that_fit_to_the_token(cast, workspace):
    client = api_client_for(cast.member, scopes=("read",), project=cast.project)
    ask = {"paths": ["src/lib/"], "query": QUERY}
    whole = post(client, ask).json()
    costs = [count_tokens(e["title"]) + count_tokens(e["text"]) for e in whole["items"]]
    task_cost = count_tokens(whole["tasks"][0]["title"])

    exact = post(client, ask | {"budget_tokens": sum(costs) + task_cost}).json()
    short = post(client, ask | {"budget_tokens": sum(costs) + task_cost - 1}).json()

    assert [e["id"] for e in exact["items"]] == [e["id"] for e in whole["items"]]
    assert len(exact["tasks"]) == 1 and exact["commits"] == []
    assert exact["budget"] == {
        "tokens": sum(costs) + task_cost,
        "used": sum(costs) + task_cost,
        "omitted": len(whole["commits"]),
        "cut": False,
    }
    assert len(short["items"]) == len(costs) == 3 and short["tasks"] == []
    assert short["budget"]["used"] == sum(costs)


def test_a_budget_below_one_entry_answers_the_best_one_cut_to_it(cast, workspace):
    client = api_client_for(cast.member, scopes=("read",), project=cast.project)
    title = workspace["items"]["names_file"].title
    for budget in (count_tokens(title) + 3, 4, 1):
        body = post(client, {"paths": ["src/lib/auth.ts"], "query": QUERY, "budget_tokens": budget}).json()
        (entry,) = body["items"]
        assert entry["id"] == workspace["items"]["names_file"].pk and entry["cut"] is True
        used = count_tokens(entry["title"]) + count_tokens(entry["text"])
        assert used <= budget and body["budget"]["used"] == used
        assert body["budget"]["cut"] is True and body["tasks"] == [] and body["commits"] == []
    body = post(client, {"paths": ["src/lib/auth.ts"], "query": QUERY, "budget_tokens": 1}).json()
    assert body["items"][0]["text"] == "" and body["items"][0]["title"].endswith("…")


def test_search_answers_brief_hits_within_a_budget_to_the_token_and_full_hits_cut_to_it(cast, workspace):
    client = api_client_for(cast.member, scopes=("read",), project=cast.project)
    ask = {"query": QUERY, "limit": 4}
    brief = client.post("/api/v1/search/", ask | {"detail": "brief"}, format="json").json()
    costs = [count_tokens(h["title"]) + count_tokens(h["text"]) for h in brief["hits"]]
    assert "results" not in brief and brief["budget"] == {
        "tokens": None,
        "used": sum(costs),
        "omitted": 0,
        "cut": False,
    }
    assert all(count_tokens(h["text"]) <= 40 for h in brief["hits"])

    fits = client.post(
        "/api/v1/search/", ask | {"detail": "brief", "budget_tokens": costs[0] + costs[1]}, format="json"
    ).json()
    short = client.post(
        "/api/v1/search/", ask | {"detail": "brief", "budget_tokens": costs[0] + costs[1] - 1}, format="json"
    ).json()
    full = client.post("/api/v1/search/", ask | {"budget_tokens": 6}, format="json").json()

    assert [h["id"] for h in fits["hits"]] == [h["id"] for h in brief["hits"][:2]]
    assert fits["budget"] == {
        "tokens": costs[0] + costs[1],
        "used": costs[0] + costs[1],
        "omitted": 2,
        "cut": False,
    }
    assert [h["id"] for h in short["hits"]] == [brief["hits"][0]["id"]]
    (hit,) = full["results"]
    assert hit["item"]["id"] == brief["hits"][0]["id"] and full["budget"]["cut"] is True
    assert count_tokens(hit["item"]["title"]) + count_tokens(hit["item"]["content"]) <= 6
    assert hit["item"]["content"].endswith("…") or hit["item"]["content"] == ""
