"""The item page's relations (without JavaScript: a GET search, then a choice) and supersede; the
search page's hits say what supersedes them; who may do what."""

from __future__ import annotations

import pytest
from django.test import Client

from knowledge import services
from knowledge.models import KnowledgeItem, Relation, RelationEvent
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def pair(cast):
    old = make_item(cast.project, "Deploys run on Jenkins", "The deploy pipeline runs on Jenkins nightly.")
    new = make_item(
        cast.project, "Deploys run on GitHub Actions", "The deploy pipeline runs on GitHub Actions."
    )
    return old, new


def test_a_member_relates_two_items_by_searching_then_choosing_without_javascript(cast, pair):
    old, new = pair
    make_item(cast.other_project, "Deploys elsewhere", "Another team's deploys.")
    client = signed_in(cast.member)
    page = client.get(f"/dashboard/items/{old.pk}/", {"relate_q": "deploy"}).content.decode()
    assert f'value="{new.pk}"' in page
    assert f'value="{old.pk}"' not in page and "Deploys elsewhere" not in page  # itself, another project
    by_id = client.get(f"/dashboard/items/{old.pk}/", {"relate_q": f"#{new.pk}"}).content.decode()
    assert f'value="{new.pk}"' in by_id
    answer = client.post(f"/dashboard/items/{old.pk}/relations/", {"other": new.pk, "kind": "supersedes:in"})
    assert answer.status_code == 302 and answer.url.endswith("#relations")
    assert Relation.objects.filter(source=new, target=old, kind="supersedes").exists()
    page = client.get(f"/dashboard/items/{old.pk}/").content.decode()
    assert "superseded by" in page and f"#{new.pk} Deploys run on GitHub Actions" in page
    assert 'class="badge superseded"' in page
    [event] = RelationEvent.objects.all()
    assert (event.context["channel"], event.context["user"]) == ("dashboard", cast.member.pk)


def test_htmx_gets_only_the_candidates(cast, pair):
    old, new = pair
    answer = signed_in(cast.member).get(
        f"/dashboard/items/{old.pk}/", {"relate_q": "actions"}, headers={"HX-Request": "true"}
    )
    body = answer.content.decode()
    assert body.lstrip().startswith('<div id="relation-candidates">')
    assert f'value="{new.pk}"' in body and "<html" not in body


def test_a_refused_relation_says_why_on_the_page(cast, pair):
    old, new = pair
    services.relate(source=new, target=old, kind="supersedes")
    client = signed_in(cast.owner)
    answer = client.post(
        f"/dashboard/items/{new.pk}/relations/", {"other": old.pk, "kind": "supersedes:in"}, follow=True
    )
    assert f"#{old.pk} → #{new.pk} → #{old.pk}" in answer.content.decode()
    assert Relation.objects.count() == 1


def test_removing_a_relation_from_the_page(cast, pair):
    old, new = pair
    relation = services.relate(source=new, target=old, kind="relates_to")
    client = signed_in(cast.member)
    assert client.post(f"/dashboard/items/{old.pk}/relations/{relation.pk}/delete/").status_code == 302
    assert not Relation.objects.exists()


@pytest.mark.parametrize("old_choice", ["keep", "trash"])
def test_replace_with_a_new_version_keeps_or_trashes_the_old_one(cast, pair, old_choice):
    old = pair[0]
    client = signed_in(cast.member)
    form = client.get(f"/dashboard/items/{old.pk}/supersede/").content.decode()
    assert "Keep it as history" in form and "Jenkins nightly" in form
    answer = client.post(
        f"/dashboard/items/{old.pk}/supersede/",
        {
            "title": "Deploys run on Buildkite",
            "content": "Since March, Buildkite.",
            "tags": "ci",
            "old": old_choice,
        },
    )
    new = KnowledgeItem.objects.get(title="Deploys run on Buildkite")
    assert answer.url == f"/dashboard/items/{new.pk}/"
    assert new.tags == ["ci"] and Relation.objects.filter(source=new, target=old, kind="supersedes").exists()
    assert (KnowledgeItem.objects.get(pk=old.pk).deleted_at is not None) is (old_choice == "trash")
    page = client.get(answer.url).content.decode()
    assert f"#{old.pk} Deploys run on Jenkins" in page
    assert ("in the trash" in page) is (old_choice == "trash")


def test_a_viewer_sees_relations_without_buttons_and_is_refused(cast, pair):
    old, new = pair
    relation = services.relate(source=new, target=old, kind="relates_to")
    client = signed_in(cast.viewer)
    page = client.get(f"/dashboard/items/{old.pk}/", {"relate_q": "deploy"}).content.decode()
    assert "related to" in page
    assert 'name="relate_q"' not in page and "/relations/" not in page and "/supersede/" not in page
    assert (
        client.post(
            f"/dashboard/items/{old.pk}/relations/", {"other": new.pk, "kind": "duplicates:out"}
        ).status_code
        == 403
    )
    assert client.post(f"/dashboard/items/{old.pk}/relations/{relation.pk}/delete/").status_code == 403
    assert client.get(f"/dashboard/items/{old.pk}/supersede/").status_code == 403
    outsider = signed_in(cast.outsider)
    assert outsider.get(f"/dashboard/items/{old.pk}/").status_code == 404
    assert outsider.post(f"/dashboard/items/{old.pk}/relations/{relation.pk}/delete/").status_code == 404
    assert outsider.get(f"/dashboard/items/{old.pk}/supersede/").status_code == 404
    assert Relation.objects.count() == 1


def test_the_search_page_says_what_supersedes_a_hit_with_a_link(cast, pair):
    old, new = pair
    services.relate(source=new, target=old, kind="supersedes")
    page = signed_in(cast.viewer).get("/dashboard/search/", {"q": "where do deploys run"}).content.decode()
    assert (
        f'superseded by <a href="/dashboard/items/{new.pk}/">#{new.pk} Deploys run on GitHub Actions</a>'
        in page
    )
    assert f'supersedes <a href="/dashboard/items/{old.pk}/">#{old.pk}' in page


def test_the_trash_page_says_how_many_relations_went_with_an_item_and_restore_brings_them_back(cast, pair):
    old, new = pair
    services.relate(source=new, target=old, kind="supersedes")
    services.relate(source=new, target=old, kind="derived_from")
    client = signed_in(cast.member)
    client.post(f"/dashboard/items/{old.pk}/delete/")
    assert "with 2 relations" in client.get("/dashboard/trash/").content.decode()
    assert client.get(f"/dashboard/items/{new.pk}/").content.decode().count("in the trash") == 2
    client.post(f"/dashboard/trash/{old.pk}/restore/")
    page = client.get(f"/dashboard/items/{new.pk}/").content.decode()
    assert page.count(f"#{old.pk} Deploys run on Jenkins") == 2 and "in the trash" not in page
