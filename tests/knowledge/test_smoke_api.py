import pytest

pytestmark = pytest.mark.django_db


def test_an_item_created_over_the_api_comes_back_first_for_its_own_words(owner_api):
    created = owner_api.post(
        "/api/v1/items/",
        {"title": "Auth flow", "content": "We sign JWTs in src/lib/auth.ts:42 and rotate weekly."},
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["references"] == ["src/lib/auth.ts"]
    owner_api.post("/api/v1/items/", {"title": "Lunch", "content": "Pizza on Fridays."}, format="json")
    found = owner_api.post("/api/v1/search/", {"query": "how do we sign JWTs"}, format="json")
    assert found.status_code == 200, found.content
    results = found.json()["results"]
    assert results[0]["item"]["title"] == "Auth flow"
    assert set(results[0]["signals"]) == {"cosine", "recency", "git", "proposal_penalty"}
