"""/api/v1/projects/: projects, members and invitations for scripts, with an owner, a member, a viewer
and an outsider."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import Invitation, Membership, Project
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def roles(project) -> dict[str, str]:
    return dict(Membership.objects.filter(project=project).values_list("user__username", "role"))


def test_each_caller_lists_only_their_projects_with_their_role(cast, api_for):
    answers = {
        who: api_for(getattr(cast, who)).get("/api/v1/projects/").json()
        for who in ("owner", "viewer", "outsider")
    }
    assert [(p["slug"], p["role"]) for p in answers["owner"]] == [("acme", "admin")]
    assert [(p["slug"], p["role"]) for p in answers["viewer"]] == [("acme", "viewer")]
    assert [(p["slug"], p["role"]) for p in answers["outsider"]] == [("elsewhere", "admin")]
    assert answers["owner"][0]["task_prefix"] == "CF"


def test_any_user_creates_a_project_and_becomes_its_admin(cast, api_for):
    answer = api_for(cast.viewer).post(
        "/api/v1/projects/", {"name": "Auth service", "task_prefix": "auth"}, format="json"
    )
    assert answer.status_code == 201, answer.json()
    assert answer.json() | {"created_at": None} == {
        "slug": "auth-service",
        "name": "Auth service",
        "description": "",
        "task_prefix": "AUTH",
        "role": "admin",
        "created_at": None,
    }
    assert roles(Project.objects.get(slug="auth-service")) == {"viewer": "admin"}


def test_a_key_bound_to_one_project_creates_no_project(cast, api_for):
    answer = api_for(cast.owner, project=cast.project).post("/api/v1/projects/", {"name": "X"}, format="json")
    assert answer.status_code == 403 and not Project.objects.filter(name="X").exists()


def test_a_taken_slug_or_a_bad_prefix_is_a_400_naming_the_field(cast, api_for):
    client = api_for(cast.owner)
    taken = client.post("/api/v1/projects/", {"name": "Acme 2", "slug": "acme"}, format="json")
    assert taken.status_code == 400 and list(taken.json()) == ["slug"]
    bad = client.post("/api/v1/projects/", {"name": "Acme 2", "task_prefix": "1-A"}, format="json")
    assert bad.status_code == 400 and list(bad.json()) == ["task_prefix"]


def test_only_an_admin_patches_the_settings(cast, api_for):
    body = {"name": "Acme Corp", "task_prefix": "ACME", "description": "The shop."}
    for who, expected in (("member", 403), ("viewer", 403), ("outsider", 404)):
        assert (
            api_for(getattr(cast, who)).patch("/api/v1/projects/acme/", body, format="json").status_code
            == expected
        )
    answer = api_for(cast.owner).patch("/api/v1/projects/acme/", body, format="json")
    assert answer.status_code == 200
    assert {k: answer.json()[k] for k in ("name", "task_prefix", "role")} == {
        "name": "Acme Corp",
        "task_prefix": "ACME",
        "role": "admin",
    }
    cast.project.refresh_from_db()
    assert (cast.project.name, cast.project.description) == ("Acme Corp", "The shop.")


def test_the_prefix_names_the_projects_tasks(cast, api_for):
    client = api_for(cast.owner)
    client.patch("/api/v1/projects/acme/", {"task_prefix": "AUTH"}, format="json")
    task = client.post("/api/v1/tasks/", {"title": "Rotate keys", "project": "acme"}, format="json").json()
    assert task["short_id"] == "AUTH-1"


def test_members_see_the_members_and_an_outsider_gets_404(cast, api_for):
    listed = api_for(cast.viewer).get("/api/v1/projects/acme/members/").json()
    assert [(m["username"], m["role"]) for m in listed] == [
        ("member", "member"),
        ("owner", "admin"),
        ("viewer", "viewer"),
    ]
    assert api_for(cast.outsider).get("/api/v1/projects/acme/members/").status_code == 404


def test_adding_a_member_invites_them_and_they_join_only_when_they_accept(cast, api_for):
    newcomer = make_user("newcomer")
    client = api_for(cast.owner)
    invited = client.post("/api/v1/projects/acme/members/", {"username": "newcomer"}, format="json")
    assert invited.status_code == 202 and invited.json()["role"] == "member"
    assert "newcomer" not in roles(cast.project)
    # Until they accept, their unbound key reaches nothing of the project.
    theirs = api_for(newcomer)
    assert theirs.get("/api/v1/projects/acme/").status_code == 404
    assert [p["slug"] for p in theirs.get("/api/v1/projects/").json()] == []

    waiting = theirs.get("/api/v1/invitations/").json()
    assert [(i["project"], i["role"], i["invited_by"]) for i in waiting] == [("acme", "member", "owner")]
    assert api_for(cast.outsider).post(f"/api/v1/invitations/{waiting[0]['id']}/accept/").status_code == 404
    joined = theirs.post(f"/api/v1/invitations/{waiting[0]['id']}/accept/")
    assert joined.status_code == 200 and joined.json()["project"] == "acme"
    assert roles(cast.project)["newcomer"] == "member"
    assert theirs.get("/api/v1/invitations/").json() == []
    changed = client.patch("/api/v1/projects/acme/members/newcomer/", {"role": "viewer"}, format="json")
    assert changed.status_code == 200 and roles(cast.project)["newcomer"] == "viewer"


def test_the_members_endpoint_never_tells_whether_a_username_exists(cast, api_for):
    make_user("alice")
    client = api_for(cast.owner)
    answers = {
        name: client.post(
            "/api/v1/projects/acme/members/", {"username": name, "role": "viewer"}, format="json"
        )
        for name in ("alice", "nobody-at-all", "member")
    }
    bodies = {name: (a.status_code, {**a.json(), "username": "?"}) for name, a in answers.items()}
    assert bodies["alice"] == bodies["nobody-at-all"] == bodies["member"]
    assert bodies["alice"][0] == 202
    assert roles(cast.project)["member"] == "member"  # a member already keeps their role


def test_an_invitee_declines_and_nothing_changes(cast, api_for):
    newcomer = make_user("newcomer")
    api_for(cast.owner).post("/api/v1/projects/acme/members/", {"username": "newcomer"}, format="json")
    theirs = api_for(newcomer)
    invitation = theirs.get("/api/v1/invitations/").json()[0]
    assert theirs.delete(f"/api/v1/invitations/{invitation['id']}/").status_code == 204
    assert theirs.post(f"/api/v1/invitations/{invitation['id']}/accept/").status_code == 404
    assert "newcomer" not in roles(cast.project)


def test_an_installation_admin_accepts_for_the_invitee_in_the_django_admin(cast, api_for, client):
    from django.contrib.auth import get_user_model

    make_user("newcomer")
    api_for(cast.owner).post("/api/v1/projects/acme/members/", {"username": "newcomer"}, format="json")
    api_for(cast.owner).post("/api/v1/projects/acme/members/", {"username": "ghost"}, format="json")
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    ids = list(Invitation.objects.filter(project=cast.project).values_list("pk", flat=True))
    response = client.post(
        "/admin/accounts/invitation/", {"action": "accept_for_invitee", "_selected_action": ids}, follow=True
    )
    assert response.status_code == 200
    assert roles(cast.project)["newcomer"] == "member" and "ghost" not in roles(cast.project)


@pytest.mark.parametrize("who", ["member", "viewer"])
def test_a_non_admin_neither_adds_nor_changes_nor_removes_others(cast, api_for, who):
    make_user("newcomer")
    client = api_for(getattr(cast, who))
    assert (
        client.post("/api/v1/projects/acme/members/", {"username": "newcomer"}, format="json").status_code
        == 403
    )
    assert (
        client.patch("/api/v1/projects/acme/members/owner/", {"role": "viewer"}, format="json").status_code
        == 403
    )
    assert client.delete("/api/v1/projects/acme/members/owner/").status_code == 403
    assert roles(cast.project) == {"owner": "admin", "member": "member", "viewer": "viewer"}


def test_an_outsider_cannot_touch_the_members(cast, api_for):
    client = api_for(cast.outsider)
    assert (
        client.patch("/api/v1/projects/acme/members/owner/", {"role": "viewer"}, format="json").status_code
        == 404
    )
    assert client.delete("/api/v1/projects/acme/members/member/").status_code == 404
    assert len(roles(cast.project)) == 3


def test_the_last_admin_can_be_neither_demoted_nor_removed_nor_leave(cast, api_for):
    client = api_for(cast.owner)
    demoted = client.patch("/api/v1/projects/acme/members/owner/", {"role": "member"}, format="json")
    assert demoted.status_code == 400 and "admin" in demoted.json()["role"][0]
    removed = client.delete("/api/v1/projects/acme/members/owner/")
    assert removed.status_code == 400 and list(removed.json()) == ["username"]
    assert roles(cast.project)["owner"] == "admin"
    # With a second admin the first may step down.
    assert (
        client.patch("/api/v1/projects/acme/members/member/", {"role": "admin"}, format="json").status_code
        == 200
    )
    assert (
        client.patch("/api/v1/projects/acme/members/owner/", {"role": "member"}, format="json").status_code
        == 200
    )
    assert roles(cast.project) == {"owner": "member", "member": "admin", "viewer": "viewer"}


def test_an_admin_removes_a_member_and_a_viewer_leaves(cast, api_for):
    assert api_for(cast.owner).delete("/api/v1/projects/acme/members/member/").status_code == 204
    assert api_for(cast.viewer).delete("/api/v1/projects/acme/members/viewer/").status_code == 204
    assert roles(cast.project) == {"owner": "admin"}
    assert api_for(cast.owner).delete("/api/v1/projects/acme/members/nobody/").status_code == 404


def test_an_invitation_link_is_used_once_by_a_signed_in_user(cast, api_for):
    answer = api_for(cast.owner).post("/api/v1/projects/acme/invitations/", {"role": "viewer"}, format="json")
    assert answer.status_code == 201
    body = answer.json()
    assert body["role"] == "viewer" and body["url"].startswith("http://testserver/dashboard/projects/join/")
    expires = timezone.datetime.fromisoformat(body["expires_at"])
    assert abs(expires - (timezone.now() + timedelta(days=7))) < timedelta(minutes=1)
    path = body["url"].removeprefix("http://testserver")

    newcomer, late = make_user("newcomer"), make_user("late")
    browser = Client()
    browser.force_login(newcomer)
    assert browser.post(path).status_code == 302
    assert roles(cast.project)["newcomer"] == "viewer"
    # Used once: the second person to open it gets nothing.
    second = Client()
    second.force_login(late)
    assert second.get(path).status_code == 404
    assert second.post(path).status_code == 404
    assert "late" not in roles(cast.project)


def test_an_expired_invitation_makes_nobody_a_member(cast, api_for):
    url = (
        api_for(cast.owner)
        .post("/api/v1/projects/acme/invitations/", {"days": 1}, format="json")
        .json()["url"]
    )
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    browser = Client()
    browser.force_login(make_user("newcomer"))
    answer = browser.post(url.removeprefix("http://testserver"))
    assert answer.status_code == 404 and "expired" in answer.content.decode()
    assert "newcomer" not in roles(cast.project)


@pytest.mark.parametrize("who, expected", [("member", 403), ("viewer", 403), ("outsider", 404)])
def test_only_an_admin_creates_invitations(cast, api_for, who, expected):
    answer = api_for(getattr(cast, who)).post("/api/v1/projects/acme/invitations/", {}, format="json")
    assert answer.status_code == expected and not Invitation.objects.exists()


def test_an_invitation_lasts_between_one_and_ninety_days(cast, api_for):
    client = api_for(cast.owner)
    for days in (0, 91, "x"):
        answer = client.post("/api/v1/projects/acme/invitations/", {"days": days}, format="json")
        assert answer.status_code == 400 and list(answer.json()) == ["days"]
    assert not Invitation.objects.exists()
