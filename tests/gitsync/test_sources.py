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
