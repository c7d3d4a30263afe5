"""Each sampler's logic against the scripted reward stream of `curriculum_script.py` (deterministic, no model).

Kinds by index % 3: 0 all-pass, 1 mixed (pass rate 0.5), 2 all-fail; so uniform sampling spends 2/3 of its
groups on zero-variance prompts.
"""

from __future__ import annotations

import math

import pytest
from curriculum_script import rows, run_steps, zero_variance_share

from rlx.curriculum.band import LearnableBandSampler
from rlx.curriculum.base import zero_variance
from rlx.curriculum.dynamic import DynamicSampler
from rlx.curriculum.sorted import SortedSampler
from rlx.curriculum.uniform import UniformSampler


def bound(sampler, n: int = 12):
    sampler.bind(rows(n))
    return sampler


# ---------------------------------------------------------------- shared bookkeeping
def test_zero_variance_definition():
    assert zero_variance([1.0, 1.0, 1.0])
    assert zero_variance([0.0])  # one valid sample: no baseline, no gradient
    assert zero_variance([])  # every sample INFRA
    assert not zero_variance([0.0, 1.0])


def test_metrics_report_rounds_groups_and_pass_rate_by_bucket():
    sampler = bound(UniformSampler(seed=0))
    sampler.begin_step(0)
    sampler.observe([0, 1, 2, 3], [[1.0, 1.0], [1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    metrics = sampler.metrics()
    # d0: indices 0 and 3, rewards 1,1,1,1 -> 1.0; d1: index 1 -> 0.5; d2: index 2 -> 0.0
    assert metrics["curriculum/pass_rate_d0"] == 1.0
    assert metrics["curriculum/pass_rate_d1"] == 0.5
    assert metrics["curriculum/pass_rate_d2"] == 0.0
    assert metrics["curriculum/rounds"] == 1.0 and metrics["curriculum/groups"] == 4.0
    sampler.begin_step(1)  # per-step counters restart
    assert sampler.metrics()["curriculum/rounds"] == 0.0
    assert math.isnan(sampler.metrics()["curriculum/pass_rate_d0"])  # a column every step: NaN when not drawn


def test_rows_without_difficulty_give_no_bucket_metrics():
    sampler = UniformSampler(seed=0)
    sampler.bind([{"prompt": "a"}, {"prompt": "b"}])
    sampler.begin_step(0)
    sampler.observe(sampler.sample(2), [[1.0], [0.0]])
    assert not any(k.startswith("curriculum/pass_rate") for k in sampler.metrics())


# ---------------------------------------------------------------- uniform
def test_uniform_visits_every_prompt_once_per_epoch():
    sampler = bound(UniformSampler(seed=3))
    records = run_steps(sampler, steps=3, per_step=4)
    assert sorted(i for r in records for i in r["indices"]) == list(range(12))
    assert zero_variance_share(records) == pytest.approx(2 / 3)


# ---------------------------------------------------------------- sorted
def test_sorted_walks_easy_to_hard_and_wraps():
    sampler = bound(SortedSampler(key="difficulty", descending=False, pace_start=1.0, pace_steps=0, seed=0))
    picked = [i for r in run_steps(sampler, steps=4, per_step=4) for i in r["indices"]]
    assert [i % 3 for i in picked[:12]] == [0] * 4 + [1] * 4 + [2] * 4
    assert picked[12:] == picked[:4]  # the walk repeats from the easiest prompt
    assert sampler.wraps == 1


def test_sorted_descending_uses_a_given_score():
    data = [{"prompt": str(i), "pass_rate": p} for i, p in enumerate([0.1, 0.9, 0.5])]
    sampler = SortedSampler(key="pass_rate", descending=True, pace_start=1.0, pace_steps=0, seed=0)
    sampler.bind(data)
    sampler.begin_step(0)
    assert sampler.sample(3) == [1, 2, 0]  # highest pass rate (easiest) first


def test_sorted_pacing_unlocks_a_growing_prefix():
    sampler = bound(SortedSampler(key="difficulty", descending=False, pace_start=0.25, pace_steps=10, seed=0))
    # share(step) = 0.25 + 0.75 * min(1, step / 10); unlocked = ceil(share * 12)
    assert [sampler.unlocked(s) for s in (0, 2, 5, 10, 50)] == [3, 5, 8, 12, 12]
    sampler.begin_step(0)
    first = sampler.sample(7)  # only 3 unlocked: the walk wraps inside them
    assert len(set(first)) == 3 and all(i % 3 == 0 for i in first)
    assert sampler.metrics()["curriculum/unlocked_frac"] == 0.25


@pytest.mark.parametrize(
    "data, found",
    [
        ([{"prompt": "a"}], "lacks it"),
        ([{"prompt": "a", "difficulty": "hard"}], "has 'hard'"),
    ],
)
def test_sorted_without_a_numeric_key_is_a_clear_error(data, found):
    sampler = SortedSampler(key="difficulty", descending=False, pace_start=0.25, pace_steps=10, seed=0)
    with pytest.raises(ValueError, match=f"curriculum.key='difficulty'.*train row 0 {found}.*curriculum=uniform"):
        sampler.bind(data)


def test_sorted_rejects_bad_pacing():
    with pytest.raises(ValueError, match=r"curriculum.pace_start .* \(got 0.0\)"):
        SortedSampler(key="difficulty", descending=False, pace_start=0.0, pace_steps=10, seed=0)
    with pytest.raises(ValueError, match=r"curriculum.pace_steps .* \(got -1\)"):
        SortedSampler(key="difficulty", descending=False, pace_start=0.5, pace_steps=-1, seed=0)


# ---------------------------------------------------------------- learnable_band
def band(explore: float = 0.0, **kw) -> LearnableBandSampler:
    args = dict(lo=0.1, hi=0.9, prior=0.5, ema=0.5, explore=explore, seed=0) | kw
    return bound(LearnableBandSampler(**args))


@pytest.mark.parametrize("lo, hi", [(0.9, 0.1), (0.5, 0.5)])
def test_band_with_lo_not_below_hi_is_a_clear_error(lo, hi):
    with pytest.raises(ValueError, match=rf"curriculum.lo must be below curriculum.hi \(got lo={lo}, hi={hi}\)"):
        band(lo=lo, hi=hi)


def test_band_estimate_is_set_by_the_first_group_then_averaged():
    sampler = band()
    assert sampler.value(5) == 0.5  # unseen: the prior
    sampler.begin_step(0)
    sampler.observe([5], [[1.0, 0.0, 0.0, 0.0]])
    assert sampler.value(5) == 0.25  # first group replaces the prior
    sampler.observe([5], [[1.0, 1.0, 1.0, 0.0]])
    assert sampler.value(5) == 0.5  # 0.5 * 0.25 + 0.5 * 0.75
    sampler.observe([5], [[]])  # all INFRA: no information, estimate unchanged
    assert sampler.value(5) == 0.5


def test_band_settles_on_the_learnable_prompts():
    sampler = band(explore=0.0)
    records = run_steps(sampler, steps=8, per_step=4)
    # Unseen prompts are in the band (prior 0.5); once seen, all-pass (1.0) and all-fail (0.0) leave it.
    later = [i for r in records[4:] for i in r["indices"]]
    assert all(i % 3 == 1 for i in later)
    assert records[-1]["metrics"]["curriculum/pool_in_band"] == pytest.approx(4 / 12)
    assert records[-1]["metrics"]["curriculum/seen_frac"] == 1.0


def test_band_keeps_exploring_the_whole_pool():
    sampler = band(explore=0.5)
    records = run_steps(sampler, steps=40, per_step=4)
    explored = sum(r["metrics"]["curriculum/explore_frac"] for r in records) / len(records)
    assert 0.35 < explored < 0.65
    assert {i for r in records[20:] for i in r["indices"]} == set(range(12))  # every prompt revisited
    assert zero_variance_share(records) < zero_variance_share(run_steps(bound(UniformSampler(0)), 40, 4))


def test_band_fills_from_exploration_when_the_band_is_short():
    sampler = band(explore=0.0)
    run_steps(sampler, steps=3, per_step=4)  # every prompt seen once: 4 remain in the band
    sampler.begin_step(3)
    picked = sampler.sample(6)
    assert len(set(picked)) == 6 and sum(1 for i in picked if i % 3 == 1) >= 4


# ---------------------------------------------------------------- dynamic_sampling
def test_dynamic_drops_zero_variance_groups_and_oversamples():
    sampler = bound(DynamicSampler(oversample=3.0, max_rounds=10, seed=0), n=300)
    assert sampler.keep([[1.0, 1.0], [0.0, 1.0], [0.0, 0.0], [1.0]]) == [False, True, False, False]
    sampler.begin_step(0)
    assert len(sampler.sample(5)) == 15  # ceil(3 * 5)


def test_dynamic_fills_the_batch_in_rounds():
    sampler = bound(DynamicSampler(oversample=1.0, max_rounds=10, seed=0), n=300)
    record = run_steps(sampler, steps=1, per_step=6)[0]
    # Only a third of the prompts give a mixed group, so filling 6 takes more than one round.
    assert record["kept"] >= 6 and record["metrics"]["curriculum/rounds"] > 1
    metrics = record["metrics"]
    assert metrics["curriculum/kept_frac"] == pytest.approx(record["kept"] / metrics["curriculum/groups"])


def test_dynamic_stops_at_the_round_cap():
    sampler = bound(DynamicSampler(oversample=1.0, max_rounds=2, seed=0))
    sampler.begin_step(0)
    kept = rounds = 0
    while kept < 4 and rounds < sampler.max_rounds:  # the trainer's loop; every group all-pass here
        indices = sampler.sample(4 - kept)
        groups = [[1.0, 1.0, 1.0, 1.0] for _ in indices]
        sampler.observe(indices, groups)
        kept += sum(sampler.keep(groups))
        rounds += 1
    assert kept == 0 and sampler.metrics()["curriculum/rounds"] == 2.0
    assert sampler.metrics()["curriculum/kept_frac"] == 0.0


@pytest.mark.parametrize(
    "kw, key",
    [({"oversample": 0.5, "max_rounds": 10}, "oversample"), ({"oversample": 3.0, "max_rounds": 0}, "max_rounds")],
)
def test_dynamic_rejects_bad_settings(kw, key):
    with pytest.raises(ValueError, match=f"curriculum.{key}"):
        DynamicSampler(seed=0, **kw)
