"""The dashboard's projects, members, invitations, keys and passwords, page by page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from accounts import services
from accounts.models import ApiKey, Membership, Project
from gitsync.models import Repository
from tests.conftest import make_user
from tests.gitsync.gitrepo import GitRepo
from tests.knowledge.factories import make_item

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def roles(project) -> dict[str, str]:
    return dict(Membership.objects.filter(project=project).values_list("user__username", "role"))


def shown(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def test_creating_a_project_makes_its_creator_admin_and_it_the_current_project(cast):
    client = signed_in(cast.viewer)
    answer = client.post(
        "/dashboard/projects/new/", {"name": "Payments", "task_prefix": "pay", "description": ""}
    )
    project = Project.objects.get(name="Payments")
    assert answer.status_code == 302 and answer["Location"] == f"/dashboard/projects/{project.slug}/"
    assert roles(project) == {"viewer": "admin"} and project.task_prefix == "PAY"
    listing = client.get("/dashboard/projects/").content.decode()
    assert "Payments" in listing and "Acme" in listing
    assert "selected>Payments</option>" in client.get("/dashboard/").content.decode()


def test_a_bad_prefix_is_shown_on_its_field(cast):
    answer = signed_in(cast.owner).post("/dashboard/projects/new/", {"name": "X", "task_prefix": "9"})
    assert answer.status_code == 400 and answer.context["form"].errors["task_prefix"]
    assert not Project.objects.filter(name="X").exists()


def test_the_switcher_scopes_the_pages_and_search_can_still_reach_every_project(cast):
    services.membership_set(user=cast.owner, project=cast.other_project, role="member")
    make_item(cast.project, "Billing retries", "Failed charges retry three times.")
    make_item(cast.other_project, "Billing exports", "Exports run nightly.")
    client = signed_in(cast.owner)
    both = client.get("/dashboard/items/").content.decode()
    assert "Billing retries" in both and "Billing exports" in both

    answer = client.post(
        "/dashboard/projects/switch/", {"project": cast.other_project.pk, "next": "/dashboard/items/"}
    )
    assert answer.status_code == 302 and answer["Location"] == "/dashboard/items/"
    items = client.get("/dashboard/items/").content.decode()
    assert "Billing exports" in items and "Billing retries" not in items
    form = client.get("/dashboard/items/new/").context["form"]
    assert form["project"].value() == cast.other_project.pk  # a new item starts in the current project
    hits = client.get("/dashboard/search/", {"q": "billing"}).content.decode()
    assert "Billing exports" in hits and "Billing retries" not in hits
    everywhere = client.get("/dashboard/search/", {"q": "billing", "in": "all"}).content.decode()
    assert "Billing exports" in everywhere and "Billing retries" in everywhere

    client.post("/dashboard/projects/switch/", {"project": ""})
    assert "Billing retries" in client.get("/dashboard/items/").content.decode()


def test_a_user_removed_from_the_current_project_sees_their_other_projects_again(cast):
    services.membership_set(user=cast.member, project=cast.other_project, role="member")
    make_item(cast.other_project, "Billing exports", "Exports run nightly.")
    client = signed_in(cast.member)
    client.post("/dashboard/projects/switch/", {"project": cast.project.pk})
    assert "Billing exports" not in client.get("/dashboard/items/").content.decode()
    signed_in(cast.owner).post("/dashboard/projects/acme/members/member/remove/")
    assert "Billing exports" in client.get("/dashboard/items/").content.decode()


def test_nobody_switches_to_a_project_they_do_not_belong_to(cast):
    client = signed_in(cast.owner)
    assert client.post("/dashboard/projects/switch/", {"project": cast.other_project.pk}).status_code == 403
    assert client.post("/dashboard/projects/switch/", {"project": "x"}).status_code == 403


def test_an_admin_edits_the_settings_and_a_member_only_reads_them(cast):
    data = {"name": "Acme", "task_prefix": "ACME", "description": "Shop"}
    assert signed_in(cast.member).post("/dashboard/projects/acme/", data).status_code == 403
    page = signed_in(cast.member).get("/dashboard/projects/acme/").content.decode()
    assert 'id="project-settings"' not in page and "CF" in page
    assert signed_in(cast.owner).post("/dashboard/projects/acme/", data).status_code == 302
    cast.project.refresh_from_db()
    assert (cast.project.task_prefix, cast.project.description) == ("ACME", "Shop")
    assert signed_in(cast.outsider).get("/dashboard/projects/acme/").status_code == 404


def test_a_viewer_sees_the_members_but_no_button_that_changes_them(cast):
    page = signed_in(cast.viewer).get("/dashboard/projects/acme/members/").content.decode()
    assert "owner" in page and "member" in page
    for control in ('name="role"', "Remove", 'id="member-add"', 'id="invitation-create"'):
        assert control not in page
    assert "Leave" in page  # their own row
    admin_page = signed_in(cast.owner).get("/dashboard/projects/acme/members/").content.decode()
    for control in ('name="role"', "Remove", 'id="member-add"', 'id="invitation-create"'):
        assert control in admin_page


def test_the_last_admin_is_neither_demoted_nor_removed_from_the_page(cast):
    client = signed_in(cast.owner)
    demote = client.post("/dashboard/projects/acme/members/owner/role/", {"role": "viewer"}, follow=True)
    assert any("at least one admin" in m for m in shown(demote))
    leave = client.post("/dashboard/projects/acme/members/owner/remove/", follow=True)
    assert any("at least one admin" in m for m in shown(leave))
    assert roles(cast.project)["owner"] == "admin"


def test_an_admin_invites_changes_and_removes_members_and_a_member_leaves(cast):
    newcomer = make_user("newcomer")
    client = signed_in(cast.owner)
    invited = client.post(
        "/dashboard/projects/acme/members/add/", {"username": "newcomer", "role": "viewer"}, follow=True
    )
    assert any("they join when they accept" in m for m in shown(invited))
    assert "newcomer" not in roles(cast.project)
    assert "newcomer · Viewer" in client.get("/dashboard/projects/acme/members/").content.decode()
    theirs = signed_in(newcomer)
    page = theirs.get("/dashboard/projects/").content.decode()
    assert "owner invites you to “Acme” as Viewer." in page
    pk = int(re.search(r"/dashboard/projects/invitations/(\d+)/accept/", page).group(1))
    assert signed_in(cast.outsider).post(f"/dashboard/projects/invitations/{pk}/accept/").status_code == 404
    theirs.post(f"/dashboard/projects/invitations/{pk}/accept/")
    assert roles(cast.project)["newcomer"] == "viewer"
    client.post("/dashboard/projects/acme/members/newcomer/role/", {"role": "member"})
    assert roles(cast.project)["newcomer"] == "member"
    client.post("/dashboard/projects/acme/members/viewer/remove/")
    assert signed_in(cast.member).post("/dashboard/projects/acme/members/member/remove/").status_code == 302
    assert signed_in(cast.member).post("/dashboard/projects/acme/members/newcomer/remove/").status_code == 404
    assert roles(cast.project) == {"owner": "admin", "newcomer": "member"}


def test_the_dashboard_says_the_same_for_a_username_nobody_has_and_a_declined_invitation_is_gone(cast):
    newcomer = make_user("newcomer")
    client = signed_in(cast.owner)
    said = {
        name: [
            m.replace(name, "?")
            for m in shown(
                client.post(
                    "/dashboard/projects/acme/members/add/", {"username": name, "role": "member"}, follow=True
                )
            )
        ]
        for name in ("newcomer", "nobody-at-all")
    }
    assert said["newcomer"] == said["nobody-at-all"] and said["newcomer"]
    theirs = signed_in(newcomer)
    pk = int(
        re.search(r"invitations/(\d+)/decline/", theirs.get("/dashboard/projects/").content.decode()).group(1)
    )
    theirs.post(f"/dashboard/projects/invitations/{pk}/decline/")
    assert "Invitations for you" not in theirs.get("/dashboard/projects/").content.decode()
    assert "newcomer" not in roles(cast.project)


def test_a_bad_member_or_invitation_form_is_reported_on_the_members_page(cast):
    client = signed_in(cast.owner)
    added = client.post("/dashboard/projects/acme/members/add/", {"role": "boss"}, follow=True)
    assert any("This field is required." in m and "boss" in m for m in shown(added))
    invited = client.post("/dashboard/projects/acme/invitations/", {"role": "viewer", "days": 0}, follow=True)
    assert any("greater than or equal to 1" in m for m in shown(invited))
    assert len(roles(cast.project)) == 3 and not cast.project.invitations.exists()


def test_an_invitation_link_is_shown_once_and_a_new_user_signs_up_through_it(cast):
    admin = signed_in(cast.owner)
    admin.post("/dashboard/projects/acme/invitations/", {"role": "viewer", "days": 7})
    page = admin.get("/dashboard/projects/acme/members/").content.decode()
    url = re.search(r'id="invitation-url">http://testserver(/dashboard/projects/join/[^<]+)<', page).group(1)
    assert url not in admin.get("/dashboard/projects/acme/members/").content.decode()  # once

    visitor = Client()
    invitation = visitor.get(url).content.decode()
    assert "Acme" in invitation and "Sign in to accept" in invitation
    joined = visitor.post(
        url, {"username": "newbie", "password1": "a long passphrase 42", "password2": "a long passphrase 42"}
    )
    assert joined.status_code == 302 and joined["Location"] == "/dashboard/"
    assert roles(cast.project)["newbie"] == "viewer"
    assert visitor.get("/dashboard/projects/").status_code == 200  # signed in as the new account
    assert Client().get(url).status_code == 404  # used


def test_an_existing_member_does_not_use_up_an_invitation(cast):
    created = services.invitation_create(project=cast.project, created_by=cast.owner)
    url = f"/dashboard/projects/join/{created.token}/"
    signed_in(cast.member).post(url)
    assert roles(cast.project)["member"] == "member"
    signed_in(cast.outsider).post(url)
    assert roles(cast.project)["outsider"] == "member"


def test_creating_a_key_redirects_so_a_reload_creates_no_second_one(cast):
    client = signed_in(cast.owner)
    answer = client.post("/dashboard/keys/", {"name": "laptop", "scopes": ["read", "write"], "project": ""})
    assert answer.status_code == 302 and answer["Location"] == "/dashboard/keys/"
    page = client.get("/dashboard/keys/").content.decode()
    secret = re.search(r'id="new-secret">(cf_live_[^<]+)<', page).group(1)
    assert "claude mcp add --transport http contextforge http://testserver/mcp" in page
    assert f"Authorization: Bearer {secret}" in page and '"mcpServers"' in page.replace("&quot;", '"')
    again = client.get("/dashboard/keys/").content.decode()
    assert secret not in again and ApiKey.objects.count() == 1


def test_revoked_keys_are_hidden_until_asked_for(cast):
    key = services.api_key_create(owner=cast.owner, name="old laptop", scopes=["read"]).key
    services.api_key_create(owner=cast.owner, name="ci", scopes=["read"])
    client = signed_in(cast.owner)
    assert 'data-confirm="Revoke' in client.get("/dashboard/keys/").content.decode()
    client.post(f"/dashboard/keys/{key.pk}/revoke/", follow=True)  # its message names the key
    page = client.get("/dashboard/keys/").content.decode()
    assert "old laptop" not in page and "ci" in page and "Show 1 revoked key" in page
    assert "old laptop" in client.get("/dashboard/keys/", {"revoked": "1"}).content.decode()


def test_a_viewer_is_offered_and_allowed_only_read_keys(cast):
    client = signed_in(cast.viewer)
    form = client.get("/dashboard/keys/").context["form"]
    assert [value for value, _ in form.fields["scopes"].choices] == ["read"]
    answer = client.post("/dashboard/keys/", {"name": "sneaky", "scopes": ["read", "write"], "project": ""})
    assert answer.status_code == 400 and not ApiKey.objects.exists()
    # Offered what the role allows somewhere; checked against the role in the project the key is bound to.
    services.membership_set(user=cast.owner, project=cast.other_project, role="viewer")
    owner = signed_in(cast.owner)
    assert len(owner.get("/dashboard/keys/").context["form"].fields["scopes"].choices) == 3
    bound = owner.post(
        "/dashboard/keys/", {"name": "x", "scopes": ["admin"], "project": cast.other_project.pk}
    )
    assert bound.status_code == 400 and "only these scopes: read." in bound.content.decode()
    assert not ApiKey.objects.exists()


def test_a_password_is_changed_in_the_dashboard(cast):
    client = signed_in(cast.member)
    answer = client.post(
        "/accounts/password_change/",
        {
            "old_password": "correct horse battery",
            "new_password1": "another fine phrase",
            "new_password2": "another fine phrase",
        },
    )
    assert answer.status_code == 302
    assert get_user_model().objects.get(username="member").check_password("another fine phrase")


def test_a_forgotten_password_is_reset_through_the_mailed_link(cast):
    cast.member.email = "member@example.com"
    cast.member.save()
    visitor = Client()
    assert "Forgot your password?" in visitor.get("/accounts/login/").content.decode()
    assert visitor.post("/accounts/password_reset/", {"email": "member@example.com"}).status_code == 302
    assert len(mail.outbox) == 1
    link = re.search(r"http://testserver(/accounts/reset/\S+/)", mail.outbox[0].body).group(1)
    form = visitor.get(link, follow=True)
    assert form.status_code == 200
    done = visitor.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a brand new phrase", "new_password2": "a brand new phrase"},
    )
    assert done.status_code == 302
    assert get_user_model().objects.get(username="member").check_password("a brand new phrase")


def test_an_admin_connects_a_repository_checked_as_the_api_checks_it(cast, tmp_path, settings):
    root = tmp_path / "repos"
    settings.CONTEXTFORGE_GIT_LOCAL_ROOTS = [str(root)]
    source = GitRepo(root / "backend")
    source.commit("Start", {"app.py": "x = 1\n"})
    url = "/dashboard/repositories/projects/acme/"
    refused = signed_in(cast.owner).post(url, {"name": "evil", "url": "ext::sh -c touch% /tmp/x"})
    assert refused.status_code == 400 and "transport is not allowed" in refused.content.decode()
    outside = signed_in(cast.owner).post(url, {"name": "etc", "url": "/etc"})
    assert outside.status_code == 400 and not Repository.objects.exists()
    assert signed_in(cast.member).post(url, {"name": "backend", "url": str(source.path)}).status_code == 403
    assert signed_in(cast.owner).post(url, {"name": "backend", "url": str(source.path)}).status_code == 302
    page = signed_in(cast.owner).get(url).content.decode()
    assert "backend" in page and "never synced" in page and "Sync now" in page
    assert "Sync now" not in signed_in(cast.member).get(url).content.decode()
    taken = signed_in(cast.owner).post(url, {"name": "backend", "url": str(source.path)})
    assert taken.status_code == 400 and Repository.objects.count() == 1
