"""Relations through an export and an import: the JSON Lines export carries each item's outgoing
relations by exported id, and the import makes them once the items exist, reports a missing other end on
its line, skips what it holds already, and makes nothing in a dry run."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.models import Project
from accounts.services import project_create
from knowledge import services
from knowledge.models import KnowledgeItem, Relation, RelationEvent
from tests.conftest import api_client_for
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def linked(cast):
    """Four items of acme linked every way an export must keep, and one in the trash."""
    jenkins = make_item(cast.project, "Deploys run on Jenkins", "The pipeline runs on Jenkins nightly.")
    actions = make_item(cast.project, "Deploys run on GitHub Actions", "The pipeline runs on Actions.")
    manual = make_item(cast.project, "Deploys are manual", "Someone runs the deploy script by hand.")
    runners = make_item(cast.project, "Runners are self-hosted", "Our CI runners live in the basement.")
    gone = make_item(cast.project, "Deploys run on Travis", "Long ago, Travis ran the pipeline.")
    services.relate(source=actions, target=jenkins, kind="supersedes")
    services.relate(source=manual, target=actions, kind="contradicts")
    services.relate(source=actions, target=runners, kind="depends_on")
    services.relate(source=jenkins, target=runners, kind="relates_to")  # an earlier line to a later one
    services.relate(source=jenkins, target=gone, kind="supersedes")
    services.item_delete(item=gone)
    return cast


# What the relations of ``linked`` read as from each end, by title (the trashed item's left out).
EXPECTED = {
    "Deploys run on Jenkins": [
        ("in", "supersedes", "Deploys run on GitHub Actions"),
        ("out", "relates_to", "Runners are self-hosted"),
    ],
    "Deploys run on GitHub Actions": [
        ("in", "contradicts", "Deploys are manual"),
        ("out", "depends_on", "Runners are self-hosted"),
        ("out", "supersedes", "Deploys run on Jenkins"),
    ],
    "Deploys are manual": [("out", "contradicts", "Deploys run on GitHub Actions")],
    "Runners are self-hosted": [
        ("in", "depends_on", "Deploys run on GitHub Actions"),
        ("in", "relates_to", "Deploys run on Jenkins"),
    ],
}


def exported(client) -> bytes:
    response = client.get("/api/v1/items/export/?project=acme&format=jsonl")
    assert response.status_code == 200
    return b"".join(response.streaming_content)


def imported(client, data: bytes, jobs=None, *, project: str = "empty", **params) -> dict:
    """The result of the job importing ``data`` as JSON Lines into ``project`` (run by ``jobs``, the
    eager_jobs fixture), or the report of its dry run."""
    query = "&".join(f"{k}={v}" for k, v in {"project": project, "format": "jsonl", **params}.items())
    upload = {"file": SimpleUploadedFile("memory.jsonl", data)}
    if jobs is None:
        response = client.post(f"/api/v1/imports/?{query}", upload, format="multipart")
        assert response.status_code == 200, response.content
        return response.json()
    with jobs(execute=True):
        response = client.post(f"/api/v1/imports/?{query}", upload, format="multipart")
    assert response.status_code == 202, response.content
    job = client.get(f"/api/v1/imports/{response.json()['id']}/").json()
    assert job["status"] == "done", (job["error"], job["result"])
    return job["result"]


def relations_read(client, project: Project) -> dict[str, list[tuple]]:
    """Each item's relations as the API reads them from its end: (direction, kind, other's title)."""
    read = {}
    for item in KnowledgeItem.objects.filter(project=project).alive():
        links = [
            link for link in client.get(f"/api/v1/items/{item.pk}/relations/").json() if not link["in_trash"]
        ]
        if links:
            read[item.title] = sorted(
                (link["direction"], link["kind"], link["item"]["title"]) for link in links
            )
    return read


def test_an_export_imported_into_an_empty_project_brings_back_every_relation_with_its_kind_and_direction(
    linked, eager_jobs
):
    client = api_client_for(linked.owner)
    lines = [json.loads(line) for line in exported(client).splitlines()]
    by_title = {line["title"]: line for line in lines}
    jenkins, runners = by_title["Deploys run on Jenkins"], by_title["Runners are self-hosted"]
    # Outgoing only, by the other end's exported id; the trashed item is out of the file and its relation too.
    assert jenkins["relations"] == [{"kind": "relates_to", "target": runners["id"]}]
    assert "relations" not in runners
    empty = project_create(name="Empty", slug="empty", owner=linked.owner)
    result = imported(client, b"".join(json.dumps(line).encode() + b"\n" for line in lines), eager_jobs)
    assert (result["created"], result["failed"]) == (4, 0), result
    assert result["relations"] == {"created": 4, "skipped": 0, "failed": 0}
    assert relations_read(client, empty) == EXPECTED == relations_read(client, linked.project)
    # Recorded like the import's items: on the import channel, as an import, by whom.
    events = RelationEvent.objects.filter(project=empty)
    assert [(e.pgh_label, e.context.get("channel"), e.context.get("action")) for e in events] == [
        ("relate", "import", "import")
    ] * 4
    assert set(Relation.objects.filter(project=empty).values_list("created_by", flat=True)) == {
        linked.owner.pk
    }


def test_importing_the_same_export_twice_makes_no_relation_twice(linked, eager_jobs):
    client = api_client_for(linked.owner)
    data = exported(client)
    empty = project_create(name="Empty", slug="empty", owner=linked.owner)
    first = imported(client, data, eager_jobs)
    again = imported(client, data, eager_jobs)
    assert first["relations"] == {"created": 4, "skipped": 0, "failed": 0}
    assert (again["created"], again["skipped"]) == (0, 4)
    assert again["relations"] == {"created": 0, "skipped": 4, "failed": 0}
    assert Relation.objects.filter(project=empty).count() == 4
    # Through the items API too (no source keys there: the items are found by their text).
    response = client.generic(
        "POST",
        "/api/v1/items/import/?project=empty",
        data.replace(b'"project": "acme", ', b""),
        content_type="application/x-ndjson",
    )
    assert response.status_code == 200, response.content
    assert response.json()["relations"] == {"created": 0, "skipped": 4, "failed": 0}
    assert Relation.objects.filter(project=empty).count() == 4


def test_a_relation_to_an_item_an_earlier_import_made_is_found_by_its_exported_id(linked, eager_jobs):
    client = api_client_for(linked.owner)
    lines = exported(client).splitlines(keepends=True)
    older = [line for line in lines if b"Deploys run on GitHub Actions" not in line]
    actions = [line for line in lines if b"Deploys run on GitHub Actions" in line]
    empty = project_create(name="Empty", slug="empty", owner=linked.owner)
    first = imported(client, b"".join(older), eager_jobs)
    # "Deploys are manual" contradicts an item neither the file nor the project holds yet.
    assert first["relations"] == {"created": 1, "skipped": 0, "failed": 1}
    assert "was not made" in first["rows"]["failed"][0]["errors"]["relations"][0]
    second = imported(client, b"".join(actions), eager_jobs)
    assert second["relations"] == {"created": 2, "skipped": 0, "failed": 0}, second
    again = imported(client, b"".join(older), eager_jobs)
    assert again["relations"] == {"created": 1, "skipped": 1, "failed": 0}
    assert relations_read(client, empty) == EXPECTED


def test_a_relation_whose_other_end_is_nowhere_is_reported_on_its_line_naming_the_field(cast):
    client = api_client_for(cast.owner)
    lines = [
        {
            "id": 7,
            "title": "Sessions last two hours",
            "content": "Since March.",
            "relations": [
                {"kind": "supersedes", "target": 99},
                {"kind": "relates_to", "target": 8},
            ],
        },
        {"id": 8, "title": "Sessions last one hour", "content": "Until March."},
        {"id": 9, "title": "Tokens", "content": "JWT.", "relations": [{"kind": "likes", "target": 7}]},
    ]
    body = "\n".join(json.dumps(line) for line in lines).encode()
    response = client.generic(
        "POST", "/api/v1/items/import/?project=acme", body, content_type="application/x-ndjson"
    )
    assert response.status_code == 200, response.content
    report = response.json()
    assert (report["created"], report["failed"]) == (2, 1)
    assert report["relations"] == {"created": 1, "skipped": 0, "failed": 1}
    assert report["errors"][0]["line"] == 3 and "likes" in report["errors"][0]["errors"]["relations"][0]
    assert report["errors"][1] == {
        "line": 1,
        "errors": {
            "relations": ["No item with id 99 in this file or in the project: “supersedes 99” was not made."]
        },
    }
    [made] = Relation.objects.all()
    assert (made.source.title, made.kind, made.target.title) == (
        "Sessions last two hours",
        "relates_to",
        "Sessions last one hour",
    )


def test_a_dry_run_reports_the_relations_it_would_make_and_makes_none(linked, client):
    api = api_client_for(linked.owner)
    data = (
        exported(api)
        + b'{"id": 0, "title": "Stray", "content": "x", "relations": [{"kind": "duplicates", "target": -1}]}\n'
    )
    empty = project_create(name="Empty", slug="empty", owner=linked.owner)
    report = imported(api, data, dry_run=1)
    assert (report["dry_run"], report["created"]) == (True, 5)
    assert report["relations"] == {"created": 4, "skipped": 0, "failed": 1}
    assert report["rows"]["failed"] == [
        {
            "file": "memory.jsonl",
            "line": 5,
            "errors": {
                "relations": [
                    "No item with id -1 in this file or in the project: “duplicates -1” was not made."
                ]
            },
        }
    ]
    assert not KnowledgeItem.objects.filter(project__slug="empty").exists()
    assert not Relation.objects.filter(project__slug="empty").exists()
    # The dashboard's dry run says it too, beside the items' counts.
    client.force_login(linked.owner)
    upload = SimpleUploadedFile("memory.jsonl", data)
    page = client.post("/dashboard/import/", {"project": empty.pk, "file": upload})
    assert page.status_code == 200
    assert b"Relations: 4 new, 0 held already, 1 not made." in page.content
    assert not Relation.objects.filter(project__slug="empty").exists()


def test_an_exported_id_two_earlier_imports_gave_different_items_is_reported_ambiguous(cast):
    def run(format: str, *lines: dict):
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return services.import_upload(project=cast.project, format=format, name=f"x.{format}", data=data)

    run("json", {"id": 5, "title": "Sessions last an hour", "content": "From server A."})
    run("jsonl", {"id": 5, "title": "Builds are cached", "content": "From server B."})
    report = run(
        "jsonl",
        {"id": 6, "title": "Tokens", "content": "JWT.", "relations": [{"kind": "relates_to", "target": 5}]},
    )
    assert report.created == 1 and report.relations == {"created": 0, "skipped": 0, "failed": 1}
    assert report.errors == [
        {
            "file": "x.jsonl",
            "line": 1,
            "errors": {
                "relations": [
                    "Several items of the project were imported with id 5: “relates_to 5” was not made."
                ]
            },
        }
    ]
    assert not Relation.objects.exists()


def test_an_import_refuses_what_a_relation_write_refuses_a_cycle_of_supersedes_and_an_item_itself(cast):
    lines = [
        {"id": 1, "title": "Sessions last two hours", "content": "Since March.", "relations": []},
        {"id": 2, "title": "Sessions last one hour", "content": "Until March.", "relations": []},
        {"id": 3, "title": "Tokens are JWTs", "content": "Signed with RS256.", "relations": []},
    ]
    lines[0]["relations"] = [{"kind": "supersedes", "target": 2}]
    lines[1]["relations"] = [{"kind": "supersedes", "target": 1}]  # closes the cycle the first line opened
    lines[2]["relations"] = [{"kind": "relates_to", "target": 3}]
    body = "\n".join(json.dumps(line) for line in lines).encode()
    response = api_client_for(cast.owner).generic(
        "POST", "/api/v1/items/import/?project=acme", body, content_type="application/x-ndjson"
    )
    assert response.status_code == 200, response.content
    report = response.json()
    assert report["relations"] == {"created": 1, "skipped": 0, "failed": 2}
    refused = {error["line"]: error["errors"]["relations"][0] for error in report["errors"]}
    two_hours, one_hour = (KnowledgeItem.objects.get(title=line["title"]).pk for line in lines[:2])
    assert refused[2] == f"That would make a cycle of supersedes: #{one_hour} → #{two_hours} → #{one_hour}."
    assert "itself" in refused[3]
    assert list(Relation.objects.values_list("source", "kind", "target")) == [
        (two_hours, "supersedes", one_hour)
    ]
