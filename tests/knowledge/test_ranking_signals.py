"""The signals and the formula against the ranking specification's own numbers (recency halving every
60 days, weights 0.15 and 0.20, the 0.7 proposal penalty, the cap at 1)."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from gitsync.selectors import RepositoryFiles, path_suffixes
from knowledge.ranking.signals import (
    PathIndex,
    Signals,
    combine,
    final_score,
    proposal_penalty,
    recency_of_age,
    score_ceiling,
)

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def boost(age_days: float) -> float:
    """The recency boost as a share of the cosine, the way the spec states it (+15 % today)."""
    signals = Signals(
        cosine=0.5,
        recency=recency_of_age(age_days * 86_400),
        git=0,
        proposal_penalty=1,
    )
    return combine(signals) / 0.5 - 1


@pytest.mark.parametrize(("age_days", "expected"), [(0, 0.15), (60, 0.075), (120, 0.0375), (180, 0.01875)])
def test_recency_boost_halves_every_sixty_days(age_days, expected):
    assert boost(age_days) == pytest.approx(expected)


def test_a_timestamp_in_the_future_counts_as_age_zero_and_none_as_no_recency():
    assert recency_of_age(-3 * 86_400) == 1.0
    assert recency_of_age(np.nan) == 0.0


def test_old_items_are_not_penalized_they_just_lose_the_boost():
    assert combine(Signals(cosine=0.6, recency=0.0, git=0.0, proposal_penalty=1.0)) == pytest.approx(0.6)


def files(*, tree=(), live=(), deleted=(), old=(), age_days: float = 1) -> RepositoryFiles:
    """One repository's files: ``live`` changed ``age_days`` ago, ``old`` 90 days ago, ``deleted`` removed
    from the tree ``age_days`` ago."""
    recent, long_ago = NOW - timedelta(days=age_days), NOW - timedelta(days=90)
    stamps = {path: recent for path in live} | {path: long_ago for path in old}
    return RepositoryFiles(
        tree=[*tree, *live, *old],
        touched=[*live, *old, *deleted],
        last_live_change=stamps,
        last_change=stamps | {path: recent for path in deleted},
    )


WINDOW = (NOW - timedelta(days=30)).timestamp()


def git(references, *repositories: RepositoryFiles) -> float:
    return PathIndex.of(repositories).git(references, WINDOW)


def test_git_boost_is_proportional_to_the_share_of_live_references():
    repository = files(live=["src/lib/auth.ts", "app/views.py"], tree=["docs/unused.md"])
    assert git(["src/lib/auth.ts", "docs/unused.md"], repository) == 0.5
    assert combine(Signals(cosine=0.5, recency=0, git=1.0, proposal_penalty=1)) == pytest.approx(0.6)
    assert combine(Signals(cosine=0.5, recency=0, git=0.5, proposal_penalty=1)) == pytest.approx(0.55)


def test_an_item_without_references_stays_neutral():
    assert git([], files(live=["src/lib/auth.ts"])) == 0.0


def test_a_reference_matches_a_known_path_only_at_a_slash_boundary():
    repository = files(live=["src/lib/auth.ts"])
    assert git(["lib/auth.ts"], repository) == 1.0
    assert git(["auth.ts"], repository) == 1.0
    assert git(["/src/lib/auth.ts"], repository) == 1.0
    index = PathIndex.of([repository])
    for reference in ("th.ts", "other/lib/auth.ts", "src/lib"):
        assert index.status([reference], WINDOW).unresolved == (reference,)


def test_references_that_name_no_known_file_do_not_dilute_the_git_signal():
    repository = files(live=["src/lib/auth.ts"], old=["src/lib/config.ts"])
    names = ["jwt.sign", "src/lib/auth.ts", "process.env", "Node.js", "os.path.join", "example.com"]
    assert git(names, repository) == 1.0
    assert git([*names, "config.ts"], repository) == 0.5
    status = PathIndex.of([repository]).status(names, WINDOW)
    assert status.live == status.resolved == ("src/lib/auth.ts",)
    assert status.unresolved == ("jwt.sign", "process.env", "Node.js", "os.path.join", "example.com")


def test_an_item_none_of_whose_references_resolve_stays_neutral():
    assert git(["jwt.sign", "django.db"], files(live=["src/lib/auth.ts"])) == 0.0


def test_a_file_changed_before_the_window_is_known_but_not_live():
    assert git(["src/lib/auth.ts"], files(live=["src/lib/auth.ts"], age_days=31)) == 0.0
    assert git(["src/lib/auth.ts"], files(live=["src/lib/auth.ts"], age_days=29)) == 1.0


def test_a_deleted_file_resolves_but_is_not_live_and_is_reported_deleted():
    repository = files(live=["src/new.py"], deleted=["src/old.py"])
    assert git(["src/old.py"], repository) == 0.0
    assert git(["src/old.py", "new.py"], repository) == 0.5
    status = PathIndex.of([repository]).status(["old.py", "new.py"], WINDOW)
    assert status.deleted == ("old.py",) and status.unresolved == ()


def test_a_reference_is_live_when_any_file_it_names_is_live_in_any_repository():
    index = PathIndex.of([files(old=["a/util.py"]), files(live=["b/util.py"])])
    assert index.status(["util.py"], WINDOW).live == ("util.py",)
    assert index.status(["a/util.py"], WINDOW).live == ()


def test_the_last_change_of_named_files_makes_an_older_item_stale():
    status = PathIndex.of([files(live=["src/lib/auth.ts"], age_days=2)]).status(["auth.ts"], WINDOW)
    assert status.may_be_stale(NOW - timedelta(days=3))
    assert not status.may_be_stale(NOW - timedelta(days=1))


def test_without_a_connected_repository_the_git_factor_is_zero_and_nothing_is_unresolved():
    assert git(["src/lib/auth.ts"]) == 0.0
    assert PathIndex().status(["src/lib/auth.ts"], WINDOW).unresolved == ()


def test_path_suffixes_are_every_trailing_part_at_a_slash():
    assert list(path_suffixes("src/lib/auth.ts")) == ["src/lib/auth.ts", "lib/auth.ts", "auth.ts"]


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


def test_the_git_of_a_candidate_is_the_share_its_reference_status_gives():
    index = PathIndex.of(
        [
            files(
                live=["src/lib/auth.ts", "a/util.py"],
                old=["b/util.py", "billing/api.go"],
                deleted=["src/old.py"],
            )
        ]
    )
    names = [
        "auth.ts",
        "util.py",
        "b/util.py",
        "api.go",
        "old.py",
        "jwt.sign",
        "x/auth.ts",
        "/src/lib/auth.ts",
    ]
    rng = np.random.default_rng(3)
    for _ in range(200):
        references = list(rng.choice(names, size=rng.integers(0, 5), replace=False))
        assert index.git(references, WINDOW) == index.status(references, WINDOW).git, references
