"""Paired comparisons over seeds: the mean paired difference, its 95% interval and an outcome in words.

Pure functions on arrays (no runs, no files): rlx.report.paired feeds them the per-seed (and per-prompt)
differences of a sweep. The statistics are scipy's:

- over seeds: Student's t interval of the per-seed paired differences (`scipy.stats.ttest_1samp`). A
  percentile or BCa bootstrap (`scipy.stats.bootstrap`) over 5 seeds covers the true mean only ~83% of the
  time (simulated on normal data, tests/sweeps/test_paired_stats.py measures it), so a null effect would be
  called real about one time in six: too often for a verdict. t covers ~95% at 5 seeds.
- over seeds and held-out prompts (an accuracy with per-prompt results in heldout.jsonl): the two-way
  ("pigeonhole", Owen 2007, Ann. Appl. Stat. 1(2)) bootstrap, seeds and prompts resampled independently
  (`scipy.stats.bootstrap` with two unpaired index samples), which also counts the variance from which prompts
  happen to be held out. The reported interval is the hull of that and the seeds' t interval, so the few seeds
  never make it narrower than t alone.

Outcome words (`outcome`):
    by construction       the property is one the code guarantees (the caller names the test that pins it)
    underpowered          fewer than `min_seeds` paired seeds, or (given the smallest effect that matters) the
                          sweep could not have detected an effect of that size
    holds                 the interval excludes 0 on the claimed side (no claimed side: either side, named)
    reversed              the interval excludes 0 on the other side
    no detectable effect  the interval contains 0; `mde` is the smallest effect the sweep would have detected
                          with 80% power at the 5% level: (t_.975 + t_.80) · SE, SE = the interval's half-width
                          / t_.975 (n − 1 degrees of freedom)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
POWER = 0.80
MIN_SEEDS = 5  # fewer paired seeds: "underpowered", whatever the interval says
RESAMPLES = 4000
BOOTSTRAP_SEED = 0  # the report is reproducible: the same runs give the same interval


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n_seeds: int
    n_prompts: int | None = None  # None: seeds only

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def seed_interval(d: np.ndarray) -> Interval:
    """t interval of the mean of per-seed paired differences `d` [S]. Equal values (identical runs, or a
    difference the code fixes): the interval is that value, with no width."""
    # deferred (start-up time): scipy.stats loads only when an interval is computed
    from scipy import stats

    d = np.asarray(d, dtype=float)
    mean = float(d.mean())
    if len(d) < 2 or np.ptp(d) == 0:
        return Interval(mean, mean, mean, len(d))
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(LEVEL)
    return Interval(mean, float(ci.low), float(ci.high), len(d))


def seed_prompt_interval(d: np.ndarray) -> Interval:
    """Per-seed, per-prompt paired differences `d` [S, P] (e.g. correct_B − correct_A on prompt p in seed s):
    the hull of the two-way bootstrap interval of their mean (seeds and prompts resampled independently) and
    the t interval of the per-seed means."""
    # deferred (start-up time): scipy.stats loads only when an interval is computed
    from scipy import stats

    d = np.asarray(d, dtype=float)  # [S, P]
    by_seed = seed_interval(d.mean(1))  # [S] -> t interval
    if np.ptp(d) == 0 or d.shape[0] < 2 or d.shape[1] < 2:
        return Interval(by_seed.mean, by_seed.low, by_seed.high, d.shape[0], d.shape[1])

    def mean_of(seeds: np.ndarray, prompts: np.ndarray, axis: int = -1) -> np.ndarray:
        # seeds [..., S], prompts [..., P] integer index draws -> the resampled grid's mean [...]
        seeds, prompts = np.atleast_2d(seeds).astype(int), np.atleast_2d(prompts).astype(int)
        rows = d[seeds]  # [R, S, P]
        grid = np.take_along_axis(rows, prompts[:, None, :], axis=2)  # [R, S, P]
        return grid.mean((1, 2)).squeeze()

    boot = stats.bootstrap(
        (np.arange(d.shape[0]), np.arange(d.shape[1])),
        mean_of,
        paired=False,  # two independent resamplings: the crossed (seed × prompt) design
        vectorized=True,
        n_resamples=RESAMPLES,
        batch=500,
        method="percentile",
        confidence_level=LEVEL,
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    ).confidence_interval
    low, high = min(by_seed.low, float(boot.low)), max(by_seed.high, float(boot.high))
    return Interval(by_seed.mean, low, high, d.shape[0], d.shape[1])


def min_detectable(interval: Interval) -> float:
    """The smallest true difference this design detects with 80% power at the 5% level (two-sided)."""
    # deferred (start-up time): scipy.stats loads only when an interval is computed
    from scipy import stats

    if interval.n_seeds < 2:
        return float("inf")
    df = interval.n_seeds - 1
    t_level, t_power = stats.t.ppf(0.5 + LEVEL / 2, df), stats.t.ppf(POWER, df)
    return interval.half_width / t_level * (t_level + t_power)


@dataclass(frozen=True)
class Outcome:
    word: str  # holds | reversed | no detectable effect | underpowered | by construction
    detail: str  # e.g. "higher", "could detect ≥ 0.031", "3 paired seeds < 5", the pinning test


def outcome(
    interval: Interval | None,
    direction: int = 0,
    meaningful: float | None = None,
    min_seeds: int = MIN_SEEDS,
    by_construction: str | None = None,
) -> Outcome:
    """The verdict in words. `direction`: +1 / −1 the claimed sign of the difference, 0 none claimed.
    `meaningful`: the smallest difference that matters (None: not stated). `by_construction`: the test that
    pins a property the code guarantees."""
    if by_construction:
        return Outcome("by construction", f"pinned by {by_construction}")
    if interval is None or interval.n_seeds == 0:
        return Outcome("underpowered", "no paired seeds")
    if interval.n_seeds < min_seeds:
        return Outcome("underpowered", f"{interval.n_seeds} paired seeds < {min_seeds}")
    side = 1 if interval.low > 0 else -1 if interval.high < 0 else 0
    if side:
        if direction == 0:
            return Outcome("holds", "higher" if side > 0 else "lower")
        return Outcome("holds" if side == direction else "reversed", "higher" if side > 0 else "lower")
    mde = min_detectable(interval)
    if meaningful is not None and mde > meaningful:
        return Outcome("underpowered", f"could detect only ≥ {mde:.3g}, {meaningful:.3g} matters")
    return Outcome("no detectable effect", f"could detect ≥ {mde:.3g}")
