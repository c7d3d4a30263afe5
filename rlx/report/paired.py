"""Paired comparisons of a sweep with a seed axis: each value of each other swept key against that key's
reference value (the first one the sweep ran), per metric, with runs paired by seed.

For key k, value v against the reference v0: in each seed s, d_s = the mean over the other keys' values
(the "context", when several keys are swept) of metric(run with k = v) − metric(run with k = v0), the same
seed and context. That is k's main effect, seed by seed; rlx.report.stats turns the d_s (and, for an accuracy,
the per-prompt differences from heldout.jsonl) into a 95% interval and an outcome. A seed that lacks either
run, or whose runs did not log the metric, is left out and the row says how many seeds it rests on.

Nothing here imports torch or matplotlib.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rlx.report.aggregate import SEED_KEY
from rlx.report.runs import Run
from rlx.report.stats import Interval, Outcome, outcome, seed_interval, seed_prompt_interval


def greedy_correct(run: Run, step: int | None = None) -> dict[str, float]:
    """{prompt: 1.0 if its greedy completion passed else 0.0} at the evaluation after `step` RL steps (None:
    the run's last one)."""
    return {r["prompt"]: float(r.get("status") == "PASS") for r in run.held_out_rows(step)}


def sampled_pass(run: Run, step: int | None = None) -> dict[str, float]:
    """{prompt: share of its k sampled completions that passed} (val_samples = k > 0)."""
    return {r["prompt"]: r["sampled_passed"] / r["sampled"] for r in run.held_out_rows(step) if r.get("sampled")}


@dataclass(frozen=True)
class Measure:
    """One arm's number in one seed, and for an accuracy its per-prompt results (None: it has none)."""

    value: float | None
    prompts: dict[str, float] | None = None


@dataclass(frozen=True)
class Metric:
    name: str  # as the report prints it
    digits: int
    value: Callable[[Run], float | None]
    per_prompt: Callable[[Run], dict[str, float]] | None = None  # an accuracy: per-prompt results too


METRICS = [
    Metric("held-out accuracy after RL", 3, lambda r: r.held_out("after"), greedy_correct),
    Metric("sampled pass@1 after RL", 3, lambda r: r.held_out("after", "val/pass@1"), sampled_pass),
    Metric("reward, last 10% of steps", 3, lambda r: r.final("reward/mean")),
    Metric("KL to the reference, last 10% of steps", 4, lambda r: r.final("loss/kl")),
    Metric("tokens generated", 0, lambda r: r.tokens_generated()),
]


@dataclass
class Comparison:
    key: str
    value: str
    reference: str
    metric: str
    digits: int
    seeds: list[str]  # the paired seeds the row rests on
    per_seed: list[float]  # d_s, in the order of `seeds`
    interval: Interval | None
    outcome: Outcome


def seed_pairs(runs: list[Run], keys: list[str], key: str, reference: str, value: str) -> dict[str, list[tuple]]:
    """{seed: [(reference run, run), ...] one pair per context} over completed runs."""
    others = [k for k in keys if k not in (key, SEED_KEY)]
    index: dict[tuple, Run] = {}
    for run in runs:
        if run.status == "completed":
            m = run.override_map
            index[(m.get(key), m.get(SEED_KEY, "?"), tuple(m.get(k) for k in others))] = run
    pairs: dict[str, list[tuple]] = {}
    for (v, seed, context), run in index.items():
        ref = index.get((reference, seed, context))
        if v == value and ref is not None:
            pairs.setdefault(seed, []).append((ref, run))
    return dict(sorted(pairs.items(), key=lambda kv: (len(kv[0]), kv[0])))


def measure(run: Run, metric: Metric) -> Measure:
    return Measure(metric.value(run), metric.per_prompt(run) if metric.per_prompt is not None else None)


def run_measures(pairs: dict[str, list[tuple]], metric: Metric) -> dict[str, list[tuple[Measure, Measure]]]:
    """{seed: [(reference run, run), ...]} → the same pairs of the metric's measures."""
    return {seed: [(measure(a, metric), measure(b, metric)) for a, b in ps] for seed, ps in pairs.items()}


def differences(pairs: dict[str, list[tuple[Measure, Measure]]]) -> tuple[list[str], list[float], np.ndarray | None]:
    """The seeds with a measurement, each seed's d_s (the mean over its pairs of b − a), and the per-prompt
    differences [S, P] over the prompts every measure has (None when some measure has none)."""
    seeds, per_seed, kept = [], [], []
    for seed, ps in pairs.items():
        usable = [(a, b) for a, b in ps if a.value is not None and b.value is not None]
        if usable:
            seeds.append(seed)
            per_seed.append(float(np.mean([float(b.value) - float(a.value) for a, b in usable])))  # type: ignore[arg-type]
            kept.append(usable)
    tables = [m.prompts for ps in kept for a, b in ps for m in (a, b)]
    if not tables or any(t is None or not t for t in tables):
        return seeds, per_seed, None
    common = sorted(set.intersection(*(set(t) for t in tables if t is not None)))
    if len(common) < 2:
        return seeds, per_seed, None
    grid = np.array(
        [np.mean([[b.prompts[p] - a.prompts[p] for p in common] for a, b in ps], axis=0) for ps in kept]  # type: ignore[index]
    )  # [S, P]
    return seeds, per_seed, grid


def compare(
    pairs: dict[str, list[tuple[Measure, Measure]]],
    direction: int = 0,
    meaningful: float | None = None,
    by_construction: str | None = None,
) -> tuple[list[str], list[float], Interval | None, Outcome]:
    """Seeds, per-seed differences, the 95% interval of their mean (seeds × prompts when every measure has
    per-prompt results) and the outcome."""
    seeds, per_seed, grid = differences(pairs)
    if not seeds:
        interval = None
    elif grid is not None:
        interval = seed_prompt_interval(grid)
    else:
        interval = seed_interval(np.array(per_seed))
    return seeds, per_seed, interval, outcome(interval, direction, meaningful, by_construction=by_construction)


def swept_values(runs: list[Run], key: str) -> list[str]:
    return list(dict.fromkeys(r.override_map[key] for r in runs if key in r.override_map))


def compare_sweep(runs: list[Run], keys: list[str], metrics: list[Metric] = METRICS) -> list[Comparison]:
    """Every value ≠ reference of every non-seed swept key, against the reference, per metric logged."""
    out = []
    for key in (k for k in keys if k != SEED_KEY):
        values = swept_values(runs, key)
        for value in values[1:]:
            pairs = seed_pairs(runs, keys, key, values[0], value)
            for metric in metrics:
                seeds, per_seed, interval, verdict = compare(run_measures(pairs, metric))
                if seeds:
                    out.append(
                        Comparison(
                            key, value, values[0], metric.name, metric.digits, seeds, per_seed, interval, verdict
                        )
                    )
    return out


def fmt_interval(interval: Interval | None, digits: int) -> str:
    if interval is None:
        return "—"
    f = f"{{:+.{digits}f}}"
    return f"{f.format(interval.mean)} [{f.format(interval.low)}, {f.format(interval.high)}]"


def fmt_per_seed(seeds: list[str], per_seed: list[float], digits: int) -> str:
    return " ".join(f"{s}: {d:+.{digits}f}" for s, d in zip(seeds, per_seed, strict=True))


def markdown(comparisons: list[Comparison]) -> list[str]:
    """The report's "Paired comparisons" section (empty when there is nothing to pair)."""
    if not comparisons:
        return []
    lines = [
        "## Paired comparisons (by seed)",
        "",
        "Each value against the key's first value (the reference), runs paired by seed; the difference is "
        "value − reference. Interval: 95%, Student's t over seeds, widened to the seeds × held-out prompts "
        "bootstrap for accuracies (rlx/report/stats.py). Outcome: **holds** (higher / lower: the interval "
        "excludes 0), **no detectable effect** (it contains 0; the smallest effect these seeds would detect "
        "with 80% power is given), **underpowered** (fewer than 5 paired seeds).",
        "",
        "| key | value vs reference | metric | difference [95% interval] | seeds | prompts | outcome | per seed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        prompts = c.interval.n_prompts if c.interval is not None and c.interval.n_prompts else "—"
        cells = [
            f"`{c.key}`",
            f"{c.value} vs {c.reference}",
            c.metric,
            fmt_interval(c.interval, c.digits),
            str(len(c.seeds)),
            str(prompts),
            f"**{c.outcome.word}** ({c.outcome.detail})",
            fmt_per_seed(c.seeds, c.per_seed, c.digits),
        ]
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return lines
