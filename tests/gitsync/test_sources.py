import os

import pytest
from django.core.exceptions import ValidationError

from gitsync.sources import validate_source


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/acme/app.git",
        "ssh://git@github.com/acme/app.git",
        "git://example.org/app.git",
        "git@github.com:acme/app.git",
    ],
)
def test_remote_urls_are_accepted(url):
    assert validate_source(url, local_roots=[]) == url


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("file:///etc", "file://"),
        ("ext::sh -c touch% /tmp/pwned", "ext::"),
        ("fd::3", "fd::"),
        ("-uhttps://x", "'-'"),
        ("--upload-pack=touch /tmp/x", "'-'"),
        ("ssh://-oProxyCommand=touch%20x/foo", "option"),
        ("ssh://git@-oProxyCommand=x/foo", "option"),
        ("git@-oProxyCommand=x:foo", "option"),
        ("http://example.org/app.git", "http://"),
        ("https://exa mple.org/app.git", "spaces"),
        ("relative/path", "absolute"),
        ("", "Give"),
    ],
)
def test_dangerous_or_unknown_sources_are_refused_with_a_reason(url, why):
    with pytest.raises(ValidationError) as error:
        validate_source(url, local_roots=["/srv/repos"])
    assert why in error.value.message_dict["url"][0]


def test_local_paths_need_an_allowed_root(tmp_path):
    with pytest.raises(ValidationError, match="CONTEXTFORGE_GIT_LOCAL_ROOTS"):
        validate_source(str(tmp_path), local_roots=[])


def test_a_local_path_under_an_allowed_root_is_accepted(tmp_path):
    (tmp_path / "app").mkdir()
    assert validate_source(str(tmp_path / "app"), local_roots=[str(tmp_path)]) == str(tmp_path / "app")


def test_dotdot_and_symlinks_out_of_a_root_are_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret").mkdir()
    os.symlink(tmp_path / "secret", root / "link")
    for url, why in (
        (f"{root}/../secret", ".."),
        (str(root / "link"), "must lie under"),
        (str(tmp_path / "secret"), "must lie under"),
    ):
        with pytest.raises(ValidationError) as error:
            validate_source(url, local_roots=[str(root)])
        assert why in error.value.message_dict["url"][0]


@pytest.mark.parametrize(
    "url", ["ssh://[-oProxyCommand=x]/a", "https://[not-an-ip]/a.git", "https://example.org:99999/a.git"]
)
def test_a_url_that_urllib_cannot_read_is_refused_with_a_reason(url):
    with pytest.raises(ValidationError) as error:
        validate_source(url, local_roots=[])
    assert "cannot be read" in error.value.message_dict["url"][0]


@pytest.mark.django_db
def test_an_unreadable_url_gets_a_400_from_the_api_never_a_500(cast):
    from tests.conftest import api_client_for

    client = api_client_for(cast.owner, project=cast.project)
    response = client.post(
        "/api/v1/repositories/", {"name": "x", "url": "ssh://[-oProxyCommand=x]/a"}, format="json"
    )
    assert response.status_code == 400 and "url" in response.json()


@pytest.mark.parametrize(
    "url", ["ssh://git:hunter2@example.org/app.git", "git://u:hunter2@example.org/a.git"]
)
def test_a_password_in_a_url_other_than_https_is_refused(url):
    with pytest.raises(ValidationError, match="Only an https:// URL may carry a password"):
        validate_source(url, local_roots=[])


def _git(*args, cwd):
    import subprocess

    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_a_dot_git_file_pointing_outside_the_roots_is_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    _git("init", "-q", "--bare", str(outside / "secret.git"), cwd=tmp_path)
    (root / "app").mkdir()
    (root / "app" / ".git").write_text(f"gitdir: {outside / 'secret.git'}\n")
    with pytest.raises(ValidationError) as error:
        validate_source(str(root / "app"), local_roots=[str(root)])
    assert "outside the allowed roots" in error.value.message_dict["url"][0]
    relative = root / "relative"
    relative.mkdir()
    (relative / ".git").write_text("gitdir: ../../outside/secret.git\n")
    with pytest.raises(ValidationError, match="outside the allowed roots"):
        validate_source(str(relative), local_roots=[str(root)])


def test_a_dot_git_file_pointing_inside_the_roots_is_accepted(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    _git("init", "-q", "--bare", str(root / "store.git"), cwd=tmp_path)
    (root / "app").mkdir()
    (root / "app" / ".git").write_text(f"gitdir: {root / 'store.git'}\n")
    assert validate_source(str(root / "app"), local_roots=[str(root)]) == str(root / "app")


def test_alternates_outside_the_roots_are_refused_even_chained(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    _git("init", "-q", str(root / "app"), cwd=tmp_path)
    _git("init", "-q", "--bare", str(root / "middle.git"), cwd=tmp_path)
    _git("init", "-q", "--bare", str(outside / "secret.git"), cwd=tmp_path)
    alternates = root / "app" / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(f"{root / 'middle.git' / 'objects'}\n")
    assert validate_source(str(root / "app"), local_roots=[str(root)]) == str(root / "app")
    (root / "middle.git" / "objects" / "info" / "alternates").write_text(
        f"{outside / 'secret.git' / 'objects'}\n"
    )
    with pytest.raises(ValidationError, match="outside the allowed roots"):
        validate_source(str(root / "app"), local_roots=[str(root)])
