"""What people write is shown as Markdown that can carry nothing but formatting, previewed before saving;
tags typed with commas or quotes; moments read as "just now" or "5 minutes ago"."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.template import Context, Template
from django.utils import timezone, translation

from contextforge.markdown import render_markdown
from knowledge import services
from knowledge.models import KnowledgeItem
from tests.knowledge.factories import make_item
from tests.tasks.factories import make_task

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


@pytest.fixture
def signed_in(client, cast):
    client.force_login(cast.member)
    return client


def test_markdown_renders_headings_lists_code_and_links():
    html = render_markdown("# Deploys\n\n- blue\n- green\n\n`make run`\n\n[docs](https://example.com/d)")
    assert "<h1>Deploys</h1>" in html and "<li>blue</li>" in html and "<code>make run</code>" in html
    assert '<a href="https://example.com/d" rel="noopener noreferrer nofollow">docs</a>' in html


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script>",
        '<img src="x" onerror="alert(1)">',
        "<iframe src=https://evil.example></iframe>",
        '<a href="javascript:alert(1)">click</a>',
        "<style>body{display:none}</style>",
    ],
)
def test_raw_html_in_content_is_shown_as_text_never_as_markup(text):
    html = render_markdown(text)
    assert "<script" not in html and "<img" not in html and "<iframe" not in html and "<style" not in html
    assert "<a " not in html and "&lt;" in html


@pytest.mark.parametrize(
    "link",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "java\tscript:alert(1)",
        "data:text/html,<b>x</b>",
        "vbscript:x",
    ],
)
def test_a_link_to_a_script_never_becomes_a_link(link):
    html = render_markdown(f"[click]({link}) and <{link}>")
    assert "href" not in html


def test_an_items_page_renders_its_content_as_sanitized_markdown(signed_in, cast):
    item = make_item(cast.project, "Deploys", "## Steps\n\n1. `make run`\n\n<script>alert(1)</script>")
    html = signed_in.get(f"/dashboard/items/{item.pk}/").content.decode()
    assert "<h2>Steps</h2>" in html and "<code>make run</code>" in html
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_an_edit_that_meets_a_newer_change_shows_that_change_as_sanitized_markdown(signed_in, cast):
    item = make_item(cast.project, "Deploys", "old")
    opened = signed_in.get(f"/dashboard/items/{item.pk}/edit/").context["form"]["version"].value()
    services.item_update(item=item, content="## Steps\n\n`make run`\n\n<script>alert(1)</script>")
    page = signed_in.post(
        f"/dashboard/items/{item.pk}/edit/", {"title": "Deploys", "content": "mine", "version": opened}
    )
    newer = re.search(
        r'<section class="card conflict" id="newer-version">.*?</section>', page.content.decode(), re.S
    )
    assert newer and "<h2>Steps</h2>" in newer[0] and "<code>make run</code>" in newer[0]
    assert "<script>alert(1)" not in newer[0]


def test_a_tasks_description_and_comments_render_as_markdown(signed_in, cast):
    task = make_task(cast.project, "Rotate keys", description="**Monthly**, see [x](javascript:alert(1))")
    signed_in.post(f"/dashboard/tasks/{task.pk}/comment/", {"text": "- done <b>now</b>"})
    html = signed_in.get(f"/dashboard/tasks/{task.pk}/").content.decode()
    assert (
        "<strong>Monthly</strong>" in html
        and 'href="javascript' not in html
        and "<li>done &lt;b&gt;now&lt;/b&gt;</li>" in html
    )


def test_the_preview_renders_without_saving_with_htmx_and_without_javascript(signed_in, cast):
    form = {
        "project": cast.project.pk,
        "title": "Deploys",
        "content": "# Blue-green\n<script>x</script>",
        "preview": "1",
    }
    partial = signed_in.post("/dashboard/items/new/", form, headers=HTMX)
    html = partial.content.decode()
    assert partial.status_code == 200 and "<html" not in html and 'id="preview"' in html
    assert "<h1>Blue-green</h1>" in html and "<script>x" not in html
    page = signed_in.post("/dashboard/items/new/", form)
    html = page.content.decode()
    assert page.status_code == 200 and "<html" in html and "<h1>Blue-green</h1>" in html
    assert "# Blue-green" in html  # the form keeps what was typed
    assert not KnowledgeItem.objects.exists()
    untitled = signed_in.post("/dashboard/items/new/", {**form, "title": ""}).content.decode()
    assert "<h1>Blue-green</h1>" in untitled and 'class="error"' not in untitled

    item = make_item(cast.project, "Deploys", "old")
    edit = signed_in.post(
        f"/dashboard/items/{item.pk}/edit/",
        {"title": "Deploys", "content": "*new*", "preview": "1"},
        headers=HTMX,
    )
    assert "<em>new</em>" in edit.content.decode()
    item.refresh_from_db()
    assert item.content == "old"


def test_a_tag_input_accepts_commas_and_quotes_never_become_part_of_a_tag(signed_in, cast, owner_api):
    signed_in.post(
        "/dashboard/items/new/",
        {
            "project": cast.project.pk,
            "title": "Paging",
            "content": "Who is paged",
            "tags": "\"ops\", ui,“Backend” 'db'",
        },
    )
    assert KnowledgeItem.objects.get(title="Paging").tags == ["ops", "ui", "backend", "db"]
    # The API follows the same rule: a tag's quotes are dropped, a tag of quotes alone is refused.
    made = owner_api.post(
        "/api/v1/items/", {"title": "Queues", "content": "Celery", "tags": ['"jobs"']}, format="json"
    )
    assert made.status_code == 201 and made.json()["tags"] == ["jobs"]
    refused = owner_api.post("/api/v1/items/", {"title": "Q", "content": "C", "tags": ['""']}, format="json")
    assert refused.status_code == 400 and "tags" in refused.json()
    task = signed_in.post(
        "/dashboard/tasks/create/",
        {
            "project": cast.project.pk,
            "title": "Page",
            "status": "pending",
            "priority": "low",
            "tags": '"a","b"',
        },
    )
    assert task.status_code == 302
    from tasks.models import Task

    assert Task.objects.get(title="Page").tags == ["a", "b"]


def render(template: str, **context) -> str:
    return Template("{% load dashboard %}" + template).render(Context(context))


def test_a_moment_under_a_minute_ago_reads_just_now_in_each_language():
    now = timezone.now()
    assert render("{{ t|ago }}", t=now) == "just now"
    assert render("{{ t|ago }}", t=now - timedelta(minutes=5)) == "5\xa0minutes ago"
    with translation.override("es"):
        assert render("{{ t|ago }}", t=now) == "ahora mismo"
        assert render("{{ t|ago }}", t=now - timedelta(minutes=5)) == "hace 5\xa0minutos"


def test_dates_have_one_format_per_language():
    moment = datetime(2026, 12, 4, 19, 5, tzinfo=UTC)
    template = (
        '{{ t|date:"DATETIME_FORMAT" }}|{{ t|date:"SHORT_DATETIME_FORMAT" }}|{{ t|date:"DATE_FORMAT" }}'
    )
    assert render(template, t=moment) == "Dec 4, 2026, 19:05|Dec 4, 2026, 19:05|Dec 4, 2026"
    with translation.override("es"):
        assert (
            render(template, t=moment)
            == "4 de diciembre de 2026, 19:05|4 de diciembre de 2026, 19:05|4 de diciembre de 2026"
        )
