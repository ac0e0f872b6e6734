"""Schemathesis over the search and item endpoints, with a synced repository so that every search
resolves references: no input makes a 5xx."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from gitsync import services as git_services
from tests.conftest import api_client_for
from tests.gitsync.gitrepo import GitRepo
from tests.knowledge.factories import make_item

schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application()).include(
    path_regex=r"^/api/v1/(search|items)/"
)


@pytest.fixture
def auth_header(kept_connection, cast, tmp_path, settings, data_dir):
    settings.CONTEXTFORGE_GIT_LOCAL_ROOTS = [str(tmp_path)]
    repo = GitRepo(tmp_path / "app")
    repo.commit("Auth", {"src/lib/auth.ts": "export const sign = 1\n", "app/views.py": "x = 1\n"})
    repository = git_services.repository_create(project=cast.project, name="app", url=str(repo.path))
    git_services.repository_sync(repository=repository)
    make_item(cast.project, "Auth flow", "We sign JWTs with jwt.sign in src/lib/auth.ts.", tags=["backend"])
    make_item(cast.project, "\ufeffTODO: rotate keys", "Nobody rotates them; see " + "a/" * 200 + "x.py")
    make_item(cast.project, "Fixture", "views.py test data", tags=["Test"])
    return {"Authorization": f"Bearer {api_client_for(cast.owner, project=cast.project).secret}"}


@schema.parametrize()
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
def test_search_and_item_endpoints_never_answer_5xx(case, auth_header):
    case.call_and_validate(headers=auth_header, checks=[not_a_server_error])
