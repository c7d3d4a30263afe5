"""Aggregate estimators over runs, as rliable defines them (Agarwal et al. 2021, "Deep RL at the Edge of the
Statistical Precipice", NeurIPS; github.com/google-research/rliable), computed with scipy:

    IQM(x)      = the mean of the middle 50% of the runs' scores: scipy.stats.trim_mean(x, 0.25), i.e. the
                  25% trimmed mean, rliable's `aggregate_iqm` on one task
    P(X > Y)    = P(x > y) + ½ P(x = y) over all pairs of runs (x from arm X, y from arm Y): the Mann–Whitney U
                  statistic of x against y divided by |x|·|y|, rliable's `probability_of_improvement` on one task
    intervals   = 95% percentile bootstrap over runs (rliable's default method); for P(X > Y) the two arms'
                  runs are resampled independently (rliable's stratified bootstrap with one task)

rliable itself is not a dependency: it pulls arch, seaborn, pandas and absl for what are these three scipy calls
on one task. These describe the arms; they are not the sweep's verdicts. With 5 runs a percentile bootstrap
covers the true value ~83% of the time (tests/sweeps/test_paired_stats.py measures it for the mean), so the
outcome words come from the paired comparisons (rlx.report.paired, rlx.report.stats), which pair runs by seed.

Nothing here imports torch or matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rlx.report.aggregate import SEED_KEY
from rlx.report.paired import swept_values
from rlx.report.stats import BOOTSTRAP_SEED, LEVEL, RESAMPLES

TRIM = 0.25  # IQM: a quarter of the runs cut from each end


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float
    n: int  # runs it rests on (for P(X > Y): the smaller arm's)


def _iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    # deferred (start-up time): scipy.stats loads only when an interval is computed
    from scipy import stats

    return stats.trim_mean(x, TRIM, axis=axis)  # [...] over runs on `axis`


def _improvement(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    # deferred (start-up time): scipy.stats loads only when an interval is computed
    from scipy import stats

    u = stats.mannwhitneyu(x, y, axis=axis).statistic  # [...] pairs with x > y, plus half the ties
    return u / (x.shape[axis] * y.shape[axis])


def iqm(x) -> float:
    """Interquartile mean of the runs' scores `x` [N]."""
    return float(_iqm(np.asarray(x, dtype=float)))


def probability_of_improvement(x, y) -> float:
    """P(X > Y) + ½ P(X = Y) over every pair (x_i, y_j) of runs `x` [N], `y` [M]."""
    return float(_improvement(np.asarray(x, dtype=float), np.asarray(y, dtype=float)))


def _bootstrap(samples: tuple[np.ndarray, ...], statistic) -> tuple[float, float]:
    # deferred (start-up time): scipy.stats loads only when an interval is computed
    from scipy import stats

    if any(len(s) < 2 for s in samples):  # one run in an arm: no spread to resample, no interval
        return float("nan"), float("nan")
    if all(np.ptp(s) == 0 for s in samples):  # every resample gives the value itself
        v = float(statistic(*samples))
        return v, v
    ci = stats.bootstrap(
        samples,
        statistic,
        paired=False,  # each arm's runs resampled on their own (rliable's stratified bootstrap, one task)
        vectorized=True,  # the statistic takes `axis`: every resample in one call
        n_resamples=RESAMPLES,
        method="percentile",
        confidence_level=LEVEL,
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    ).confidence_interval
    return float(ci.low), float(ci.high)


def iqm_estimate(x) -> Estimate | None:
    """The IQM of `x` [N] and its 95% percentile-bootstrap interval; None without runs."""
    x = np.asarray([v for v in x if v is not None and np.isfinite(v)], dtype=float)
    if not len(x):
        return None
    low, high = _bootstrap((x,), _iqm)
    return Estimate(iqm(x), low, high, len(x))


def improvement_estimate(x, y) -> Estimate | None:
    """P(X > Y) for the runs `x` [N] of one arm against `y` [M] of another, with its 95% interval; None when
    either arm has no run."""
    x = np.asarray([v for v in x if v is not None and np.isfinite(v)], dtype=float)
    y = np.asarray([v for v in y if v is not None and np.isfinite(v)], dtype=float)
    if not len(x) or not len(y):
        return None
    low, high = _bootstrap((x, y), _improvement)
    return Estimate(probability_of_improvement(x, y), low, high, min(len(x), len(y)))


def arm_scores(runs, key: str, value: str, score) -> list[float]:
    """`score(run)` of every completed run with `key` = `value` (pooled over the other swept keys)."""
    return [
        s for r in runs if r.status == "completed" and r.override_map.get(key) == value if (s := score(r)) is not None
    ]


def _fmt(e: Estimate | None, digits: int) -> str:
    if e is None:
        return "—"
    if np.isnan(e.low):
        return f"{e.value:.{digits}f} (1 run: no interval)"
    return f"{e.value:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}]"


def markdown(runs, keys: list[str], metrics) -> list[str]:
    """The report's "Aggregate over runs" section: per swept key (not the seed), each value's IQM and its
    P(value > reference), reference = the key's first value, for each of `metrics` (rlx.report.paired.Metric)."""
    body = []
    for key in (k for k in keys if k != SEED_KEY):
        values = swept_values(runs, key)
        for metric in metrics:
            reference = arm_scores(runs, key, values[0], metric.value)
            for value in values:
                scores = arm_scores(runs, key, value, metric.value)
                if not scores:
                    continue
                p = None if value == values[0] else improvement_estimate(scores, reference)
                body.append(
                    [
                        f"`{key}`",
                        value,
                        metric.name,
                        str(len(scores)),
                        _fmt(iqm_estimate(scores), metric.digits),
                        _fmt(p, 2),
                    ]
                )
    if not body:
        return []
    return [
        "## Aggregate over runs (rliable's estimators)",
        "",
        "Each value's runs pooled (every seed, every value of the other keys): the interquartile mean (IQM) and "
        "the probability that a run with this value scores higher than one with the key's first value, "
        "P(X > Y) (ties count ½), each with a 95% percentile-bootstrap interval (rlx/report/robust.py). They "
        "describe the arms; the outcome words above come from the paired comparisons.",
        "",
        "| key | value | metric | runs | IQM [95%] | P(value > reference) [95%] |",
        "|---|---|---|---|---|---|",
        *("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body),
    ]
