"""The review workflow on the real stack: expiry, "still true", unreviewed agent writes, possible duplicates
and conflicts, the inbox (dashboard and API) and its access, and the weekly digest."""

from __future__ import annotations

import threading
from datetime import date, timedelta

import pytest
from django.conf import settings
from django.core import mail
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import services as account_services
from gitsync.models import Commit, CommitFile, Repository, TreeFile
from knowledge import selectors, services
from knowledge.importers.exports import export
from knowledge.models import ItemVersion, KnowledgeItem, Relation, ReviewPair
from knowledge.ranking import forget_caches
from tests.conftest import api_client_for
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db

YESTERDAY = timezone.localdate() - timedelta(days=1)
DEPLOYS = ("Deploys", "Production deploys go through the GitHub Actions workflow deploy.yml, never by hand.")
DEPLOYS_AGAIN = (
    "Deploying to production",
    "Never deploy production by hand: always use the deploy.yml GitHub Actions workflow.",
)


def agent_api(user, project) -> APIClient:
    created = account_services.api_key_create(
        owner=user, name="claude", scopes=["read", "write"], project=project, is_agent=True
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {created.secret}")
    return client


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# ----- expiry ----------------------------------------------------------------------------------------


def test_valid_until_is_set_and_cleared_through_the_api_and_an_expired_item_still_ranks(cast, owner_api):
    made = owner_api.post(
        "/api/v1/items/",
        {"title": DEPLOYS[0], "content": DEPLOYS[1], "valid_until": YESTERDAY.isoformat()},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert (made.json()["valid_until"], made.json()["expired"]) == (YESTERDAY.isoformat(), True)
    found = owner_api.post("/api/v1/search/", {"query": "how do we deploy to production"}, format="json")
    (hit,) = found.json()["results"]
    assert hit["item"]["expired"] is True
    assert hit["score"] > hit["signals"]["cosine"]  # ranked by the formula as any item, recency boost and all
    cleared = owner_api.patch(f"/api/v1/items/{made.json()['id']}/", {"valid_until": None}, format="json")
    assert (cleared.json()["valid_until"], cleared.json()["expired"]) == (None, False)


def test_a_valid_until_that_is_not_a_date_is_a_400_naming_the_field(cast, owner_api):
    answer = owner_api.post(
        "/api/v1/items/", {"title": "T", "content": "C", "valid_until": "next tuesday"}, format="json"
    )
    assert answer.status_code == 400
    assert "valid_until" in answer.json()
    with pytest.raises(Exception) as caught:
        services.item_create(project=cast.project, title="T", content="C", valid_until="someday")
    assert "valid_until" in caught.value.message_dict


@pytest.mark.parametrize("format", ["json", "markdown"])
def test_valid_until_survives_an_export_and_its_import(cast, format):
    item = services.item_create(
        project=cast.project, title=DEPLOYS[0], content=DEPLOYS[1], valid_until=date(2031, 3, 31)
    )
    out = export(selectors.items_for(projects=[cast.project]).order_by("id"), format)
    data = b"".join(chunk if isinstance(chunk, bytes) else chunk.encode() for chunk in out.chunks)
    report = services.import_upload(
        project=cast.other_project, format=format, name=out.file_name, data=data, created_by=cast.outsider
    )
    assert report.created == 1, report.summary()
    (copy,) = KnowledgeItem.objects.filter(project=cast.other_project)
    assert (copy.title, copy.valid_until) == (item.title, date(2031, 3, 31))


def test_the_item_form_sets_valid_until_and_the_pages_show_the_expired_badge(cast):
    client = signed_in(cast.member)
    answer = client.post(
        "/dashboard/items/new/",
        {"project": cast.project.pk, "title": DEPLOYS[0], "content": DEPLOYS[1], "valid_until": YESTERDAY},
    )
    item = KnowledgeItem.objects.get(title=DEPLOYS[0])
    assert answer.status_code == 302 and item.valid_until == YESTERDAY
    page = client.get(f"/dashboard/items/{item.pk}/").content.decode()
    assert 'class="badge expired"' in page and 'id="valid-until"' in page
    assert 'class="badge expired"' in client.get("/dashboard/items/").content.decode()
    assert 'class="badge expired"' in client.get("/dashboard/search/?q=deploys").content.decode()


# ----- confirmation ----------------------------------------------------------------------------------


def test_still_true_records_who_and_when_as_a_version_and_leaves_the_text_and_recency_alone(cast):
    item = make_item(cast.project, *DEPLOYS, updated_at=timezone.now() - timedelta(days=90))
    api = api_client_for(cast.member, project=cast.project)
    answer = api.post(f"/api/v1/items/{item.pk}/confirm/")
    assert answer.status_code == 200, answer.content
    assert answer.json()["verified_by"] == "member" and answer.json()["verified_at"]
    assert answer.json()["updated_at"] == api.get(f"/api/v1/items/{item.pk}/").json()["updated_at"]
    fresh = KnowledgeItem.objects.get(pk=item.pk)
    assert fresh.updated_at == item.updated_at
    version = ItemVersion.objects.filter(pgh_obj_id=item.pk).first()
    assert (version.action, version.context["channel"], version.context["key"]) == ("confirm", "api", "test")
    page = signed_in(cast.viewer).get(f"/dashboard/items/{item.pk}/").content.decode()
    assert "verified 0\xa0minutes ago by member" in page
    assert "Still true" not in page  # a viewer is not offered the button


def stale_setup(project):
    """An item naming src/app/deploy.py, written before a commit changed that file."""
    now = timezone.now()
    item = make_item(
        project,
        "Deploy script",
        "The deploy entry point is src/app/deploy.py; it tags the release.",
        updated_at=now - timedelta(days=10),
    )
    repository = Repository.objects.create(project=project, name="app", url="/srv/app")
    TreeFile.objects.create(repository=repository, path="src/app/deploy.py")
    commit = Commit.objects.create(
        repository=repository,
        sha="c" * 40,
        author="dev",
        committed_at=now - timedelta(days=2),
        message="Tag v2",
    )
    CommitFile.objects.create(commit=commit, path="src/app/deploy.py", change_type="M")
    forget_caches()
    return item


def test_still_true_clears_the_stale_and_expired_entries_of_the_inbox(cast):
    stale = stale_setup(cast.project)
    expired = services.item_create(
        project=cast.project, title="Q3 freeze", content="No deploys.", valid_until=YESTERDAY
    )
    client = signed_in(cast.member)
    page = client.get("/dashboard/review/").content.decode()
    assert f'id="stale-{stale.pk}"' in page and "Tag v2" in page and f'id="expired-{expired.pk}"' in page
    queue = selectors.review_queue(projects=[cast.project])
    assert (queue.counts["stale"], queue.counts["expired"]) == (1, 1)
    for item in (stale, expired):
        assert (
            client.post(f"/dashboard/items/{item.pk}/confirm/", {"next": "/dashboard/review/"}).status_code
            == 302
        )
    queue = selectors.review_queue(projects=[cast.project])
    assert (queue.counts["stale"], queue.counts["expired"]) == (0, 0)
    assert not KnowledgeItem.objects.get(pk=expired.pk).expired


def test_an_item_naming_a_deleted_file_may_be_stale_until_confirmed(cast):
    item = stale_setup(cast.project)
    KnowledgeItem.objects.filter(pk=item.pk).update(updated_at=timezone.now())
    TreeFile.objects.all().delete()  # the file is gone from the branch
    forget_caches()
    (entry,) = selectors.review_queue(projects=[cast.project]).stale
    assert entry.deleted_references == ("src/app/deploy.py",)
    services.item_confirm(item=item, user=cast.owner)
    assert selectors.review_queue(projects=[cast.project]).counts["stale"] == 0


# ----- unreviewed ------------------------------------------------------------------------------------


def test_agent_keys_and_mcp_write_unreviewed_items_and_a_person_does_not(cast):
    from mcpserver import operations
    from tests.mcpserver.test_history_tools import caller_for, run

    by_agent = agent_api(cast.member, cast.project).post(
        "/api/v1/items/", {"title": "A", "content": "Written by an agent."}, format="json"
    )
    by_person = api_client_for(cast.member, project=cast.project).post(
        "/api/v1/items/", {"title": "B", "content": "Written by a person."}, format="json"
    )
    over_mcp = run(
        caller_for(cast.member), operations.memory_ingest, title="C", content="Over MCP.", tags=None
    )
    assert by_agent.json()["unreviewed"] is True and by_person.json()["unreviewed"] is False
    assert over_mcp.data["item"]["unreviewed"] is True
    assert "unreviewed" in over_mcp.text
    client = signed_in(cast.member)
    assert 'class="badge unreviewed"' in client.get("/dashboard/items/").content.decode()
    # A person's edit on the dashboard reviews it.
    pk = by_agent.json()["id"]
    version = ItemVersion.objects.filter(pgh_obj_id=pk).first().pk
    client.post(
        f"/dashboard/items/{pk}/edit/", {"title": "A", "content": "Checked by a person.", "version": version}
    )
    assert KnowledgeItem.objects.get(pk=pk).unreviewed is False


def test_approving_an_item_twice_answers_409_the_second_time(cast):
    item = services.item_create(project=cast.project, title="A", content="By an agent.", by_agent=True)
    api = api_client_for(cast.member, project=cast.project)
    first = api.post(f"/api/v1/review/items/{item.pk}/approve/")
    second = api.post(f"/api/v1/review/items/{item.pk}/approve/")
    assert (first.status_code, first.json()["unreviewed"]) == (200, False)
    assert second.status_code == 409 and "approved already" in second.json()["detail"]
    assert ItemVersion.objects.filter(pgh_obj_id=item.pk).first().action == "approve"


@pytest.mark.django_db(transaction=True)
def test_concurrent_approvals_of_one_item_one_wins_and_the_other_gets_409(cast):
    item = services.item_create(project=cast.project, title="A", content="By an agent.", by_agent=True)
    clients = [api_client_for(user, project=cast.project) for user in (cast.owner, cast.member)]
    start, answers = threading.Barrier(2), []

    def approve(client) -> None:
        from django.db import connection

        start.wait()
        try:
            answers.append(client.post(f"/api/v1/review/items/{item.pk}/approve/").status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=approve, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(answers) == [200, 409]


def test_the_inbox_approves_and_trashes_one_by_one_or_in_bulk(cast):
    items = [
        services.item_create(
            project=cast.project, title=f"Agent note {n}", content=f"Fact {n}.", by_agent=True
        )
        for n in range(4)
    ]
    client = signed_in(cast.member)
    page = client.get("/dashboard/review/").content.decode()
    assert all(f'id="unreviewed-{item.pk}"' in page for item in items)
    assert '<a href="#unreviewed">Unreviewed <strong>4</strong></a>' in page
    client.post("/dashboard/review/approve/", {"one": items[0].pk})
    client.post("/dashboard/review/approve/", {"item": [items[1].pk, items[2].pk]})
    client.post("/dashboard/review/trash/", {"one": items[3].pk})
    assert list(KnowledgeItem.objects.unreviewed().alive()) == []
    assert KnowledgeItem.objects.get(pk=items[3].pk).deleted_at is not None
    again = client.post("/dashboard/review/approve/", {"one": items[0].pk})
    assert again.status_code == 409


def test_the_api_approves_and_trashes_in_bulk_and_answers_what_it_did(cast):
    items = [
        services.item_create(
            project=cast.project, title=f"Agent note {n}", content=f"Fact {n}.", by_agent=True
        )
        for n in range(3)
    ]
    theirs = services.item_create(
        project=cast.other_project, title="Theirs", content="Not yours.", by_agent=True
    )
    api = api_client_for(cast.member)
    ids = [items[0].pk, items[1].pk, theirs.pk]  # another project's item is not seen, so not acted on
    approved = api.post("/api/v1/review/items/approve/", {"ids": ids}, format="json")
    assert approved.json() == {"approved": [items[0].pk, items[1].pk]}
    trashed = api.post("/api/v1/review/items/trash/", {"ids": [items[2].pk]}, format="json")
    assert trashed.json() == {"trashed": [items[2].pk]}
    assert list(KnowledgeItem.objects.unreviewed().alive()) == [theirs]
    assert api.post("/api/v1/review/items/trash/", {"ids": [theirs.pk]}, format="json").status_code == 404
    viewer = api_client_for(cast.viewer).post(
        "/api/v1/review/items/trash/", {"ids": [items[0].pk]}, format="json"
    )
    assert viewer.status_code == 403
    refused = api.post("/api/v1/review/items/approve/", {"ids": "x"}, format="json")
    assert refused.status_code == 400 and "ids" in refused.json()


# ----- access ----------------------------------------------------------------------------------------


def test_who_sees_the_inbox_and_who_may_act_on_it(cast):
    item = services.item_create(
        project=cast.project, title="Agent note", content="By an agent.", by_agent=True
    )
    for user, status, buttons in [
        (cast.owner, 200, True),
        (cast.member, 200, True),
        (cast.viewer, 200, False),
        (cast.outsider, 200, False),
    ]:
        page = signed_in(user).get("/dashboard/review/")
        html = page.content.decode()
        assert page.status_code == status
        assert (f'id="unreviewed-{item.pk}"' in html) == (user != cast.outsider), user
        assert ('id="approve-selected"' in html) == buttons, user
    assert signed_in(cast.viewer).post("/dashboard/review/approve/", {"one": item.pk}).status_code == 403
    assert signed_in(cast.viewer).post(f"/dashboard/items/{item.pk}/confirm/").status_code == 403
    signed_in(cast.outsider).post("/dashboard/review/approve/", {"one": item.pk})
    assert KnowledgeItem.objects.get(pk=item.pk).unreviewed  # an outsider's approval reaches nothing
    for user, listing, approve in [  # the owner last: their approval takes the item out of the list
        (cast.viewer, 200, 403),
        (cast.outsider, 200, 404),
        (cast.owner, 200, 200),
    ]:
        api = api_client_for(user)
        queue = api.get("/api/v1/review/")
        assert queue.status_code == listing
        assert [row["id"] for row in queue.json()["unreviewed"]] == (
            [] if user == cast.outsider else [item.pk]
        )
        assert api.post(f"/api/v1/review/items/{item.pk}/approve/").status_code == approve, user
    assert api_client_for(cast.viewer).post(f"/api/v1/items/{item.pk}/confirm/").status_code == 403


# ----- possible duplicates and conflicts ---------------------------------------------------------------


def test_a_close_item_is_recorded_as_a_pair_and_a_dismissed_pair_never_comes_back(cast):
    old = services.item_create(project=cast.project, title=DEPLOYS[0], content=DEPLOYS[1])
    services.item_create(project=cast.project, title="Lunch", content="Pizza on Fridays in the big room.")
    new = services.item_create(project=cast.project, title=DEPLOYS_AGAIN[0], content=DEPLOYS_AGAIN[1])
    (pair,) = ReviewPair.objects.all()
    assert (pair.first_id, pair.second_id) == (old.pk, new.pk) and pair.cosine >= services.PAIR_COSINE
    api = api_client_for(cast.member, project=cast.project)
    listed = api.get("/api/v1/review/").json()
    assert [p["id"] for p in listed["pairs"]] == [pair.pk] and listed["counts"]["pairs"] == 1
    assert (
        api.post(f"/api/v1/review/pairs/{pair.pk}/", {"resolution": "dismissed"}, format="json").status_code
        == 200
    )
    # The newer item edited (embedded again, checked again) and written once more: the pair stays dismissed.
    services.item_update(item=new, content=DEPLOYS_AGAIN[1] + " Ask #ops first.")
    services.pairs_find(items=[KnowledgeItem.objects.get(pk=old.pk)])
    assert (
        ReviewPair.objects.count() == 1
        and selectors.review_queue(projects=[cast.project]).counts["pairs"] == 0
    )


def test_pairs_are_found_on_import_and_through_mcp(cast):
    from mcpserver import operations
    from tests.mcpserver.test_history_tools import caller_for, run

    body = "\n".join(
        f'{{"title": "{title}", "content": "{content}"}}' for title, content in (DEPLOYS, ("Lunch", "Pizza."))
    )
    services.import_upload(project=cast.project, format="json", name="items.jsonl", data=body.encode())
    assert ReviewPair.objects.count() == 0
    run(
        caller_for(cast.member),
        operations.memory_ingest,
        title=DEPLOYS_AGAIN[0],
        content=DEPLOYS_AGAIN[1],
        tags=None,
    )
    assert ReviewPair.objects.count() == 1
    again = "\n".join(
        f'{{"title": "{t}", "content": "{c}"}}'
        for t, c in (
            (
                "Deploys (copy)",
                "All production deploys go through deploy.yml in GitHub Actions, never by hand.",
            ),
        )
    )
    services.import_upload(project=cast.project, format="json", name="more.jsonl", data=again.encode())
    assert ReviewPair.objects.count() >= 2
    queue = run(caller_for(cast.viewer, scopes=("read",)), operations.memory_review_queue, limit=10)
    assert queue.data["counts"]["pairs"] == ReviewPair.objects.count()
    assert "possible duplicate or conflict" in queue.text


@pytest.mark.parametrize(
    ("resolution", "kind", "source", "target"),
    [
        ("merged", "duplicates", "old", "new"),
        ("supersedes", "supersedes", "new", "old"),
        ("contradicts", "contradicts", "new", "old"),
    ],
)
def test_resolving_a_pair_records_its_relation_and_a_second_resolution_is_409(
    cast, resolution, kind, source, target
):
    items = {
        "old": services.item_create(project=cast.project, title=DEPLOYS[0], content=DEPLOYS[1]),
        "new": services.item_create(project=cast.project, title=DEPLOYS_AGAIN[0], content=DEPLOYS_AGAIN[1]),
    }
    (pair,) = ReviewPair.objects.all()
    client = signed_in(cast.member)
    assert client.post(f"/dashboard/review/pairs/{pair.pk}/", {"resolution": resolution}).status_code == 302
    relation = Relation.objects.get()
    assert (relation.kind, relation.source_id, relation.target_id) == (
        kind,
        items[source].pk,
        items[target].pk,
    )
    second = client.post(f"/dashboard/review/pairs/{pair.pk}/", {"resolution": "dismissed"})
    assert second.status_code == 409 and "resolved already" in second.content.decode()
    api = api_client_for(cast.member, project=cast.project)
    assert (
        api.post(f"/api/v1/review/pairs/{pair.pk}/", {"resolution": "dismissed"}, format="json").status_code
        == 409
    )
    bad = api.post(f"/api/v1/review/pairs/{pair.pk}/", {"resolution": "maybe"}, format="json")
    assert bad.status_code == 400 and "resolution" in bad.json()


# ----- the digest ------------------------------------------------------------------------------------


def test_the_weekly_digest_tells_subscribers_what_entered_the_inbox_changed_and_was_superseded(cast):
    for user in (cast.member, cast.viewer):
        user.email = f"{user.username}@example.com"
        user.save()
    assert (
        signed_in(cast.member)
        .post("/dashboard/review/digest/", {"project": cast.project.pk, "enabled": "1"})
        .status_code
        == 302
    )
    old = services.item_create(project=cast.project, title=DEPLOYS[0], content=DEPLOYS[1])
    services.item_create(
        project=cast.project, title=DEPLOYS_AGAIN[0], content=DEPLOYS_AGAIN[1], by_agent=True
    )
    services.item_create(
        project=cast.project, title="Q3 freeze", content="No deploys in Q3.", valid_until=YESTERDAY
    )
    services.supersede(
        item=old, title="Deploys (2027)", content="Deploys go through Argo CD now.", actor=cast.owner
    )
    sent = services.digests_send()
    assert sent == 1 and [message.to for message in mail.outbox] == [["member@example.com"]]
    body = mail.outbox[0].body
    assert mail.outbox[0].subject == "[ContextForge] Acme: the week in review"
    unreviewed, changed, superseded = (
        body.split("== Entered the review inbox ==")[1].split("== What changed ==")[0],
        body.split("== What changed ==")[1].split("== What was superseded ==")[0],
        body.split("== What was superseded ==")[1],
    )
    assert f"#{KnowledgeItem.objects.get(title=DEPLOYS_AGAIN[0]).pk} {DEPLOYS_AGAIN[0]}" in unreviewed
    assert "Possible duplicates and conflicts:" in unreviewed and "Q3 freeze (valid until" in unreviewed
    assert "Deploys (2027)" in changed and "Q3 freeze" in changed
    assert f"#{old.pk} Deploys → superseded by" in superseded and "Deploys (2027)" in superseded
    assert f"{settings.CONTEXTFORGE_BASE_URL}/dashboard/review/" in body
    # A week later, nothing new: nothing is sent.
    mail.outbox.clear()
    assert services.digests_send(now=timezone.now() + timedelta(days=8)) == 0
    assert (
        settings.CELERY_BEAT_SCHEDULE["weekly-review-digest"]["task"] == "knowledge.tasks.send_weekly_digests"
    )
