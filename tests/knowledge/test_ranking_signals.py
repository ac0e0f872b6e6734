"""The signals and the formula against the numbers in ../shared/spec/search-ranking.en.txt."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from knowledge.ranking.signals import (
    Signals,
    combine,
    final_score,
    git_factor,
    path_suffixes,
    proposal_penalty,
    recency_factor,
    recency_of_age,
    score_ceiling,
)

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def boost(age_days: float) -> float:
    """The recency boost as a share of the cosine, the way the spec states it (+15 % today)."""
    signals = Signals(
        cosine=0.5,
        recency=recency_factor(NOW - timedelta(days=age_days), None, NOW),
        git=0,
        proposal_penalty=1,
    )
    return combine(signals) / 0.5 - 1


@pytest.mark.parametrize(("age_days", "expected"), [(0, 0.15), (60, 0.075), (120, 0.0375), (180, 0.01875)])
def test_recency_boost_halves_every_sixty_days(age_days, expected):
    assert boost(age_days) == pytest.approx(expected)


def test_recency_uses_updated_at_and_falls_back_to_created_at():
    updated = NOW - timedelta(days=60)
    created = NOW - timedelta(days=600)
    assert recency_factor(updated, created, NOW) == pytest.approx(0.5)
    assert recency_factor(None, created, NOW) == pytest.approx(0.5**10)


def test_a_timestamp_in_the_future_counts_as_age_zero():
    assert recency_factor(NOW + timedelta(days=3), None, NOW) == 1.0


def test_old_items_are_not_penalized_they_just_lose_the_boost():
    assert combine(Signals(cosine=0.6, recency=0.0, git=0.0, proposal_penalty=1.0)) == pytest.approx(0.6)


def test_git_boost_is_proportional_to_the_share_of_live_references():
    live = path_suffixes(["src/lib/auth.ts", "app/views.py"])
    assert git_factor(["src/lib/auth.ts", "docs/unused.md"], live) == 0.5
    assert combine(Signals(cosine=0.5, recency=0, git=1.0, proposal_penalty=1)) == pytest.approx(0.6)
    assert combine(Signals(cosine=0.5, recency=0, git=0.5, proposal_penalty=1)) == pytest.approx(0.55)


def test_an_item_without_references_stays_neutral():
    assert git_factor([], path_suffixes(["src/lib/auth.ts"])) == 0.0


def test_a_reference_matches_a_live_path_only_at_a_slash_boundary():
    live = path_suffixes(["src/lib/auth.ts"])
    assert git_factor(["lib/auth.ts"], live) == 1.0
    assert git_factor(["auth.ts"], live) == 1.0
    assert git_factor(["th.ts"], live) == 0.0
    assert git_factor(["other/lib/auth.ts"], live) == 0.0


def test_without_a_connected_repository_the_git_factor_is_zero():
    assert git_factor(["src/lib/auth.ts"], frozenset()) == 0.0


def test_the_proposal_penalty_takes_thirty_percent_of_the_whole_score():
    assert proposal_penalty(True) == 0.7
    assert proposal_penalty(False) == 1.0
    wish = combine(Signals(cosine=0.8, recency=1.0, git=1.0, proposal_penalty=0.7))
    assert wish == pytest.approx(0.8 * 1.35 * 0.7)


def test_the_final_score_is_capped_at_one():
    assert combine(Signals(cosine=0.95, recency=1.0, git=1.0, proposal_penalty=1.0)) == 1.0


def test_the_ceiling_bounds_every_possible_score_for_a_cosine():
    for cosine in (-0.4, -0.01, 0.0, 0.3, 0.74, 0.9):
        ceiling = score_ceiling(cosine)
        for recency in (0.0, 0.5, 1.0):
            for git in (0.0, 0.5, 1.0):
                for penalty in (0.7, 1.0):
                    assert combine(Signals(cosine, recency, git, penalty)) <= ceiling + 1e-12


def test_without_live_files_the_ceiling_leaves_out_the_git_boost():
    assert score_ceiling(0.5, git_possible=False) == pytest.approx(0.575)
    assert score_ceiling(0.5) == pytest.approx(0.675)
    for recency in (0.0, 1.0):
        assert combine(Signals(0.5, recency, 0.0, 1.0)) <= score_ceiling(0.5, git_possible=False) + 1e-12


def test_a_chunk_of_candidates_scores_as_each_of_them_alone():
    """The ranking service scores arrays of candidates at once: element by element, the same numbers."""
    rng = np.random.default_rng(5)
    cosines = rng.uniform(-0.3, 0.99, 200)
    ages = rng.uniform(-86_400, 400 * 86_400, 200)  # some in the future
    ages[:3] = np.nan  # no timestamp at all
    git = rng.choice([0.0, 0.5, 1.0], 200)
    flags = rng.random(200) < 0.3
    recency, penalty = recency_of_age(ages), proposal_penalty(flags)
    finals, ceilings = final_score(cosines, recency, git, penalty), score_ceiling(cosines)
    for n in range(200):
        # numpy's vectorized power may differ from the scalar one in the last bit, nowhere else.
        assert recency[n] == pytest.approx(recency_of_age(float(ages[n])), rel=1e-15, abs=0)
        assert penalty[n] == proposal_penalty(bool(flags[n]))
        signals = Signals(float(cosines[n]), float(recency[n]), float(git[n]), float(penalty[n]))
        assert finals[n] == combine(signals) <= ceilings[n] + 1e-12
        assert ceilings[n] == score_ceiling(float(cosines[n]))
    assert recency[:3].tolist() == [0.0, 0.0, 0.0]
    assert (recency[ages < 0] == 1.0).all() and (ages < 0).any()
