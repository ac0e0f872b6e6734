"""The dashboard in English and Spanish: every page translated, the catalog complete and compiled."""

from __future__ import annotations

import ast
import functools
import gettext
import re
import shutil
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.urls import NoReverseMatch, get_resolver, reverse
from django.utils import timezone
from rest_framework.test import APIClient

from gitsync import services as git_services
from tasks import services as task_services
from tests.gitsync.gitrepo import GitRepo
from tests.knowledge.factories import make_item

LOCALE_DIR = Path(settings.BASE_DIR) / "locale"
PO_PATH = LOCALE_DIR / "es" / "LC_MESSAGES" / "django.po"
MO_PATH = PO_PATH.with_suffix(".mo")
# What docs/development.md's makemessages command leaves out: the virtualenv, data, benchmarks and tests.
NOT_TRANSLATED = (".venv", "var", "bench", "tests")
# Namespaces whose pages make up the dashboard; a namespace that does not exist yet is skipped.
DASHBOARD_NAMESPACES = ("dashboard", "keys", "gitsync", "tasks", "projects")
MONTHS_ES = "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split()


# ----- the catalog, read without any third-party library ----------------------------------------


@dataclass
class Entry:
    msgid: str
    msgctxt: str | None = None
    msgid_plural: str | None = None
    msgstr: list[str] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)
    obsolete: bool = False

    def __str__(self) -> str:
        return f"{self.msgctxt + ' | ' if self.msgctxt else ''}{self.msgid!r}"


def read_po(path: Path) -> list[Entry]:
    entries = []
    for block in re.split(r"\n[ \t]*\n", path.read_text(encoding="utf-8")):
        fields: dict[str, str] = {}
        flags: set[str] = set()
        current = None
        obsolete = False
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("#~|") or line.startswith("#|"):
                continue
            if line.startswith("#~"):
                obsolete, line = True, line[2:].strip()
            elif line.startswith("#,"):
                flags |= {flag.strip() for flag in line[2:].split(",")}
                continue
            if not line or line.startswith("#"):
                continue
            match = re.match(r'(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s+(".*")$', line)
            if match:
                current = match.group(1)
                fields[current] = ast.literal_eval(match.group(2))
            else:
                fields[current] += ast.literal_eval(line)
        if "msgid" not in fields:
            continue
        plural_forms = sorted((k for k in fields if k.startswith("msgstr[")), key=lambda k: int(k[7:-1]))
        entries.append(
            Entry(
                msgid=fields["msgid"],
                msgctxt=fields.get("msgctxt"),
                msgid_plural=fields.get("msgid_plural"),
                msgstr=[fields[k] for k in plural_forms] if plural_forms else [fields.get("msgstr", "")],
                flags=flags,
                obsolete=obsolete,
            )
        )
    return entries


def nplurals(entries: list[Entry]) -> int:
    header = next(e for e in entries if e.msgid == "").msgstr[0]
    return int(re.search(r"nplurals\s*=\s*(\d+)", header).group(1))


def problems(entries: list[Entry]) -> list[str]:
    """Every entry that would show English (or nothing) to a Spanish-speaking user."""
    forms = nplurals(entries)
    found = []
    for entry in entries:
        if entry.obsolete or entry.msgid == "":
            continue
        if "fuzzy" in entry.flags:
            found.append(f"fuzzy: {entry}")
        elif not all(entry.msgstr):
            found.append(f"untranslated: {entry}")
        elif entry.msgid_plural is not None and len(entry.msgstr) != forms:
            found.append(f"{len(entry.msgstr)} plural forms instead of {forms}: {entry}")
    return found


def translated(entries: list[Entry]) -> list[Entry]:
    return [e for e in entries if e.msgid and not e.obsolete and "fuzzy" not in e.flags and all(e.msgstr)]


# ----- the catalog ------------------------------------------------------------------------------


def test_the_committed_catalog_has_no_untranslated_or_fuzzy_entry():
    entries = read_po(PO_PATH)
    assert len(translated(entries)) > 150
    assert problems(entries) == []


def test_a_fresh_makemessages_run_finds_no_string_without_its_spanish_translation(
    tmp_path, settings, monkeypatch
):
    # makemessages over a copy of the sources, merging into a copy of the catalog: a string added to a
    # template or a module without its translation shows up here as untranslated (or fuzzy).
    tree = tmp_path / "src"
    shutil.copytree(
        settings.BASE_DIR,
        tree,
        ignore=shutil.ignore_patterns(*NOT_TRANSLATED, ".git", "__pycache__", "node_modules", "*.mo"),
    )
    monkeypatch.chdir(tree)
    settings.LOCALE_PATHS = [str(tree / "locale")]
    call_command("makemessages", locale=["es"], ignore_patterns=list(NOT_TRANSLATED), verbosity=0)
    fresh = read_po(tree / "locale" / "es" / "LC_MESSAGES" / "django.po")
    assert problems(fresh) == []
    committed = {(e.msgctxt, e.msgid) for e in translated(read_po(PO_PATH))}
    assert {(e.msgctxt, e.msgid) for e in translated(fresh)} == committed


def test_the_problems_check_catches_an_untranslated_and_a_fuzzy_entry(tmp_path):
    po = tmp_path / "django.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Plural-Forms: nplurals=3; plural=n == 1 ? 0 : 2;\\n"\n\n'
        'msgid "Saved."\nmsgstr ""\n\n'
        '#, fuzzy\nmsgid "Save"\nmsgstr "Guardado."\n\n'
        'msgid "%(n)s file"\nmsgid_plural "%(n)s files"\nmsgstr[0] "%(n)s archivo"\nmsgstr[1] "%(n)s archivos"\n',
        encoding="utf-8",
    )
    assert problems(read_po(po)) == [
        "untranslated: 'Saved.'",
        "fuzzy: 'Save'",
        "2 plural forms instead of 3: '%(n)s file'",
    ]


def test_the_committed_mo_holds_exactly_the_translations_of_the_po():
    # The compiled catalog is committed, so a fresh machine needs no compile step; it must match the .po.
    with MO_PATH.open("rb") as mo:
        compiled = dict(gettext.GNUTranslations(mo)._catalog)
    compiled.pop("", None)
    expected = {}
    for entry in translated(read_po(PO_PATH)):
        key = f"{entry.msgctxt}\x04{entry.msgid}" if entry.msgctxt is not None else entry.msgid
        if entry.msgid_plural is None:
            expected[key] = entry.msgstr[0]
        else:
            expected.update({(key, n): text for n, text in enumerate(entry.msgstr)})
    assert compiled == expected


# ----- pages in both languages ------------------------------------------------------------------


class _Text(HTMLParser):
    """The words a reader sees: text outside scripts, styles and code (a command, a parameter name or a
    file path is the same in every language), and titles, placeholders, labels."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "code"):
            self._skip += 1
        self.chunks += [
            value for name, value in attrs if name in ("title", "placeholder", "aria-label") and value
        ]

    def handle_endtag(self, tag):
        if tag in ("script", "style", "code") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.chunks.append(data)


def visible_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return " ¶ ".join(" ".join(chunk.split()) for chunk in parser.chunks)


PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|\{\w+(?:![rs])?\}|<[^>]+>")


def english_phrases(entries: list[Entry]) -> list[tuple[Entry, str]]:
    """For each translated entry whose Spanish differs, the literal English phrases a page would show."""
    phrases = []
    for entry in translated(entries):
        for english, spanish in ((entry.msgid, entry.msgstr[0]), (entry.msgid_plural, entry.msgstr[-1])):
            if english is None or english == spanish:
                continue
            if "python-format" in entry.flags:
                english = english.replace("%%", "%")
            parts = [" ".join(p.split()) for p in PLACEHOLDER.split(english)]
            if len(parts) == 1:
                phrases.append((entry, parts[0]))
            else:  # the longer literal stretches of a sentence with placeholders that Spanish changes
                phrases += [(entry, p) for p in parts if len(p) >= 12 and p not in " ".join(spanish.split())]
    return phrases


# Words that give English away; a sentence of the page (not of the stored data) holding one is untranslated.
ENGLISH_WORDS = re.compile(r"\b(the|and|your|is|are|of|to|with|for|this|not|yet|all|has|from|by|in)\b", re.I)
# What the fixtures store is English in both languages: titles, texts, tags, commits, names.
STORED_DATA = (
    "Token signing",
    "Tokens are signed",
    "WISH: rotate tokens hourly",
    "Rotation every hour",
    "Token fixture",
    "Sample tokens",
    "Shorter token lifetime",
    "src/lib/auth.ts",
    "ContextForge",
    "Rotate tokens",
    "Hourly rotation",
)


def same_english_sentences(english_text: str, spanish_text: str) -> list[str]:
    """Page text that reads the same in both languages and looks like English prose: a string nobody wrapped."""
    same = set(spanish_text.split(" ¶ ")) & set(english_text.split(" ¶ "))
    prose = [c for c in same if " " in c and ENGLISH_WORDS.search(c)]
    return sorted(c for c in prose if not any(d in c for d in STORED_DATA))


@functools.cache
def _as_a_whole(phrase: str) -> re.Pattern:
    # Compiled once: the catalog's phrases outnumber re's own cache, which compiled each again per page.
    return re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")


def shows(phrase: str, text: str) -> bool:
    return _as_a_whole(phrase).search(text) is not None


def test_the_page_check_flags_a_translated_phrase_and_an_unwrapped_sentence_left_in_english():
    english = visible_text(
        "<h1>Overview</h1><p>Nothing stored yet.</p><p>Ask the team first.</p><p>Token signing</p>"
    )
    spanish = visible_text(
        "<h1>Resumen</h1><p>Nothing stored yet.</p><p>Ask the team first.</p><p>Token signing</p>"
    )
    phrases = english_phrases(read_po(PO_PATH))
    on_page = {phrase for _, phrase in phrases if shows(phrase, english)}
    assert {"Overview", "Nothing stored yet."} <= on_page
    assert {phrase for phrase in on_page if shows(phrase, spanish)} == {"Nothing stored yet."}
    assert same_english_sentences(english, spanish) == ["Ask the team first.", "Nothing stored yet."]


@pytest.fixture
def memory(cast, tmp_path, settings, data_dir):
    """A project with a fact, a wish, a test fixture and a synced repository whose file moved on."""
    root = tmp_path / "repos"
    root.mkdir()
    settings.CONTEXTFORGE_GIT_LOCAL_ROOTS = [str(root)]
    source = GitRepo(root / "backend")
    source.commit("Token signing", {"src/lib/auth.ts": "export const sign = 1\n"}, days_ago=3)
    fact = make_item(
        cast.project,
        "Token signing",
        "Tokens are signed in src/lib/auth.ts with a rotating secret.",
        tags=["auth"],
        updated_at=timezone.now() - timedelta(days=2),
    )
    make_item(cast.project, "WISH: rotate tokens hourly", "Rotation every hour would be safer.")
    make_item(cast.project, "Token fixture", "Sample tokens for the suite.", tags=["test"])
    repository = git_services.repository_create(project=cast.project, name="backend", url=str(source.path))
    source.commit("Shorter token lifetime", {"src/lib/auth.ts": "export const sign = 2\n"}, days_ago=1)
    git_services.repository_sync(repository=repository)
    task = task_services.task_create(
        project=cast.project,
        title="Rotate tokens",
        priority="high",
        due_date=timezone.localdate(),
        tags=["auth"],
    )
    task_services.comment_create(task=task, author=cast.owner, text="Hourly rotation")
    return {"fact": fact, "repository": repository, "task": task}


def dashboard_urls(memory) -> list[str]:
    """Every page without arguments in the dashboard's namespaces, and the pages of one item and repository."""
    resolver = get_resolver()
    urls = []
    for namespace in DASHBOARD_NAMESPACES:
        if namespace not in resolver.namespace_dict:
            continue
        for pattern in resolver.namespace_dict[namespace][1].url_patterns:
            if getattr(pattern, "name", None) and pattern.pattern.regex.groups == 0:
                try:
                    urls.append(reverse(f"{namespace}:{pattern.name}"))
                except NoReverseMatch:
                    continue
    fact = memory["fact"]
    urls += [
        reverse("dashboard:item", args=[fact.pk]),
        reverse("dashboard:item-edit", args=[fact.pk]),
        reverse("dashboard:items") + "?tag=auth",
        reverse("dashboard:search") + "?q=token+signing",
        reverse("gitsync:repository", args=[memory["repository"].pk]),
        reverse("tasks:task", args=[memory["task"].pk]),
        reverse("tasks:edit", args=[memory["task"].pk]),
        reverse("projects:settings", args=["acme"]),
        reverse("projects:members", args=["acme"]),
        reverse("gitsync:project-repositories", args=["acme"]),
        reverse("password_change"),
    ]
    return urls


def _get(client, url: str, language: str, via: str):
    if via == "cookie":
        client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
        return client.get(url)
    client.cookies.pop(settings.LANGUAGE_COOKIE_NAME, None)
    return client.get(url, headers={"accept-language": f"{language},en;q=0.5"})


@pytest.mark.django_db
@pytest.mark.parametrize("via", ["accept-language", "cookie"])
def test_every_dashboard_page_renders_in_spanish_without_an_english_phrase_left(client, cast, memory, via):
    client.force_login(cast.owner)
    phrases = english_phrases(read_po(PO_PATH))
    pages = [(client, url) for url in dashboard_urls(memory)] + [
        (Client(), reverse(name)) for name in ("login", "password_reset")
    ]
    checked = set()
    for page_client, url in pages:
        english = _get(page_client, url, "en", via)
        spanish = _get(page_client, url, "es", via)
        if english.status_code == 405:  # a POST-only route
            continue
        assert (english.status_code, spanish.status_code) == (200, 200), url
        english_text = visible_text(english.content.decode())
        spanish_text = visible_text(spanish.content.decode())
        assert '<html lang="en">' in english.content.decode()
        assert '<html lang="es">' in spanish.content.decode(), url
        on_page = [(entry, phrase) for entry, phrase in phrases if shows(phrase, english_text)]
        assert len(on_page) >= 3, f"{url} shows too few catalog phrases to tell the languages apart"
        left = sorted({phrase for _, phrase in on_page if shows(phrase, spanish_text)})
        assert left == [], f"{url} in Spanish still shows {left}"
        unwrapped = same_english_sentences(english_text, spanish_text)
        assert unwrapped == [], f"{url} shows the same English in both languages: {unwrapped}"
        checked.add(url.split("?")[0])
    expected = {"/dashboard/", "/dashboard/items/", "/dashboard/search/", "/dashboard/help/ranking"}
    expected |= {
        reverse("tasks:board"),
        reverse("tasks:wishes"),
        reverse("tasks:task", args=[memory["task"].pk]),
    }
    expected |= {
        reverse("projects:list"),
        reverse("projects:members", args=["acme"]),
        reverse("password_reset"),
    }
    assert expected | {reverse("keys:list"), reverse("login"), reverse("gitsync:repositories")} <= checked


@pytest.mark.django_db
def test_the_search_page_speaks_spanish_around_the_hits(client, cast, memory):
    client.force_login(cast.owner)
    page = client.get("/dashboard/search/", {"q": "token signing"}, headers={"accept-language": "es"})
    html = page.content.decode()
    assert "Token signing" in html and "similitud" in html and "recencia" in html
    assert "1 elemento de prueba excluido: mostrarlo" in html
    assert "¿por qué?" in html and reverse("dashboard:help-ranking") in html
    # Scores with a decimal comma in Spanish, a decimal point in English.
    assert re.search(r'class="score"[^>]*>[01],\d{3}<', html)
    english = client.get("/dashboard/search/", {"q": "token signing"}, headers={"accept-language": "en"})
    assert re.search(r'class="score"[^>]*>[01]\.\d{3}<', english.content.decode())


@pytest.mark.django_db
def test_dates_on_the_item_page_follow_the_language(client, cast, memory):
    client.force_login(cast.owner)
    fact = memory["fact"]
    created = timezone.localtime(fact.created_at)
    url = reverse("dashboard:item", args=[fact.pk])
    spanish = client.get(url, headers={"accept-language": "es"}).content.decode()
    english = client.get(url, headers={"accept-language": "en"}).content.decode()
    in_spanish = f"{created.day} de {MONTHS_ES[created.month - 1]} de {created.year}"
    assert in_spanish in spanish and in_spanish not in english
    assert "puede estar desactualizado" in spanish and "may be stale" in english


# ----- the switcher -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_language_switcher_remembers_spanish_and_back(cast):
    client = Client(enforce_csrf_checks=True)
    client.force_login(cast.member)
    page = client.get("/dashboard/items/").content.decode()
    assert "Items" in page and '<html lang="en">' in page
    token = re.search(
        r'action="/i18n/setlang/">\s*<input type="hidden" name="csrfmiddlewaretoken" value="([^"]+)"', page
    )
    assert token, "the header has a language form posting to set_language"
    answer = client.post(
        "/i18n/setlang/",
        {"language": "es", "next": "/dashboard/items/", "csrfmiddlewaretoken": token.group(1)},
    )
    assert answer.status_code == 302 and answer["Location"] == "/dashboard/items/"
    # No Accept-Language: the remembered choice alone makes the next pages Spanish.
    for url in ("/dashboard/items/", "/dashboard/", "/dashboard/help/ranking"):
        spanish = client.get(url).content.decode()
        assert '<html lang="es">' in spanish and "Elementos" in spanish and "Cerrar sesión" in spanish
    client.post(
        "/i18n/setlang/", {"language": "en", "next": "/dashboard/", "csrfmiddlewaretoken": token.group(1)}
    )
    assert "Sign out" in client.get("/dashboard/").content.decode()


# ----- the help page ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_help_page_formats_its_numbers_for_the_language(client, cast):
    client.force_login(cast.member)
    spanish = client.get("/dashboard/help/ranking", headers={"accept-language": "es"}).content.decode()
    english = client.get("/dashboard/help/ranking", headers={"accept-language": "en"}).content.decode()
    for figure in ("+15,00%", "+7,50%", "+3,75%", "pierde el 30%", "pasa de 1,0", "hasta un 20%", "0,756"):
        assert figure in spanish
    for figure in ("+15.00%", "+7.50%", "+3.75%", "loses 30%", "above 1.0", "up to 20%", "0.756"):
        assert figure in english
    assert "Cómo se ordenan los resultados" in spanish and "60 días" in spanish


@pytest.mark.django_db
def test_the_spanish_help_page_follows_a_changed_ranking_constant(client, cast, monkeypatch):
    from knowledge.ranking import signals

    client.force_login(cast.member)
    monkeypatch.setattr(signals, "RECENCY_WEIGHT", 0.25)
    monkeypatch.setattr(signals, "PROPOSAL_PENALTY", 0.5)
    monkeypatch.setattr(signals, "RECENCY_HALF_LIFE_DAYS", 30.0)
    spanish = client.get("/dashboard/help/ranking", headers={"accept-language": "es"}).content.decode()
    assert "+25,00%" in spanish and "+12,50%" in spanish and "+6,25%" in spanish
    assert "pierde el 50%" in spanish and "cada 30 días" in spanish and "+15,00%" not in spanish


# ----- the API ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_api_errors_answer_in_the_language_of_the_request(owner_api):
    spanish = {"HTTP_ACCEPT_LANGUAGE": "es"}
    missing_title = owner_api.post("/api/v1/items/", {"content": "x"}, format="json", **spanish)
    assert missing_title.status_code == 400
    assert missing_title.json()["title"] == ["Este campo es requerido."]
    not_a_string = owner_api.post("/api/v1/items/", {"title": 42, "content": "x"}, format="json", **spanish)
    assert not_a_string.status_code == 400 and not_a_string.json()["title"] == [
        "Debe ser una cadena de texto."
    ]
    english = owner_api.post("/api/v1/items/", {"title": 42, "content": "x"}, format="json")
    assert english.json()["title"] == ["Must be a string."]
    unknown = APIClient()
    unknown.credentials(HTTP_AUTHORIZATION="Bearer cf_live_not-a-key")
    answer = unknown.get("/api/v1/items/", **spanish)
    assert answer.status_code == 401 and answer.json()["detail"] == "Clave de API desconocida o revocada."
    malformed = APIClient()
    malformed.credentials(HTTP_AUTHORIZATION="Token abc")
    answer = malformed.get("/api/v1/items/", **spanish)
    assert (
        answer.json()["detail"] == "Se requiere autenticación: envía 'Authorization: Bearer <clave de API>'."
    )


@pytest.mark.django_db
def test_service_errors_answer_in_the_language_of_the_request(owner_api, cast):
    spanish = {"HTTP_ACCEPT_LANGUAGE": "es"}
    line = '{"title": "Old", "content": "x", "created_at": "yesterday"}'
    report = owner_api.post(
        "/api/v1/items/import/", line, content_type="application/x-ndjson", **spanish
    ).json()
    assert report["errors"][0]["errors"] == {
        "created_at": ["No es una fecha y hora ISO 8601 con zona horaria: 'yesterday'."]
    }
    tags = owner_api.post(
        "/api/v1/items/", {"title": "t", "content": "x", "tags": ["a b"]}, format="json", **spanish
    )
    assert tags.json()["tags"] == [
        "Una etiqueta es un texto no vacío de como máximo 64 caracteres, sin espacios."
    ]
    fact = make_item(cast.project, "Deploys", "Blue-green.")
    moved = owner_api.post(f"/api/v1/items/{fact.pk}/to-task/", **spanish)
    assert moved.status_code == 400 and moved.json()["item"][0].startswith(
        "Solo un elemento marcado como deseo"
    )
    english = owner_api.post("/api/v1/items/", {"title": "t", "content": "x", "tags": ["a b"]}, format="json")
    assert english.json()["tags"] == ["A tag is a non-empty string of at most 64 characters without spaces."]
