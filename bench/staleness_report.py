"""The staleness sweep's report (sweeps/staleness.yaml): for each rollout correction, every max_staleness k > 0
against k = 0, and each correction against none at the same k; runs paired by seed, with rlx's paired statistics
(rlx/report/stats.py: 95% interval, outcome words) on three measures:

- wall seconds per RL step (the mean of metrics.csv's time/step over the run);
- held-out greedy accuracy at equal steps (the evaluation after RL; seeds × prompts interval);
- held-out greedy accuracy at equal wall time: in each pair, the budget W is the faster run's whole Σ time/step,
  and each run is read at its last evaluation reached within W (Σ time/step of the steps before it ≤ W).

Then the accuracy curves (mean over seeds) against steps and against wall time, per arm. Written to
`<sweep_dir>/staleness.md` and printed:

    python bench/staleness_report.py multirun/staleness/<time>
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from rlx.report.claims import ACCURACY_MATTERS
from rlx.report.paired import Measure, compare, fmt_interval, fmt_per_seed, greedy_correct
from rlx.report.runs import Run, load_sweep

K, CORRECTION, SEED = "rollout.max_staleness", "rollout_correction", "seed"


def elapsed_before(run: Run) -> dict[int, float]:
    """{step e: wall seconds of the RL steps before e} (Σ time/step of steps < e), for e = 0 … last + 1."""
    out, total = {0: 0.0}, 0.0
    for step, seconds in sorted(run.metrics.get("time/step", [])):
        total += seconds
        out[step + 1] = total
    return out


def evaluations(run: Run) -> list[int]:
    """The steps after which the run evaluated (0: before RL), from heldout.jsonl's records."""
    path = run.job_dir / "heldout.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    steps = set()
    for line in lines:
        try:
            steps.add(int(json.loads(line).get("step", 0)))
        except ValueError:  # a line cut by a kill
            continue
    return sorted(steps | {0})


def accuracy_at(run: Run, step: int) -> Measure:
    correct = greedy_correct(run, step)
    return Measure(float(np.mean(list(correct.values()))) if correct else None, correct or None)


def within(run: Run, budget: float) -> int:
    """The last evaluation step reached within `budget` wall seconds of RL steps."""
    clock = elapsed_before(run)
    return max(e for e in evaluations(run) if clock.get(e, float("inf")) <= budget + 1e-9)


def paired(runs: list[Run], base: tuple[str, str], arm: tuple[str, str]) -> dict[str, tuple[Run, Run]]:
    """{seed: (base run, arm run)} among completed runs, each arm named by (max_staleness k, correction)."""
    index = {
        (r.override_map.get(K, "0"), r.override_map.get(CORRECTION, "none"), r.override_map.get(SEED, "?")): r
        for r in runs
        if r.status == "completed"
    }
    return {
        s: (index[(*base, s)], run) for (k, c, s), run in sorted(index.items()) if (k, c) == arm and (*base, s) in index
    }


def pairs(runs: list[Run], correction: str, k: str) -> dict[str, tuple[Run, Run]]:
    """{seed: (k = 0 run, k run)} among completed runs of this correction."""
    return paired(runs, ("0", correction), (k, correction))


def measures(paired: dict[str, tuple[Run, Run]]) -> dict[str, dict[str, list[tuple[Measure, Measure]]]]:
    out: dict[str, dict[str, list[tuple[Measure, Measure]]]] = defaultdict(dict)
    for seed, (a, b) in paired.items():
        out["wall s per RL step"][seed] = [(Measure(a.mean("time/step")), Measure(b.mean("time/step")))]
        out["held-out accuracy, equal steps"][seed] = [
            (accuracy_at(a, evaluations(a)[-1]), accuracy_at(b, evaluations(b)[-1]))
        ]
        budget = min(elapsed_before(a)[max(elapsed_before(a))], elapsed_before(b)[max(elapsed_before(b))])
        out["held-out accuracy, equal wall time"][seed] = [
            (accuracy_at(a, within(a, budget)), accuracy_at(b, within(b, budget)))
        ]
    return out


def curves(runs: list[Run]) -> list[str]:
    """Mean accuracy over seeds at each evaluation, with the mean wall seconds reached there, per arm."""
    arms: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for r in runs:
        if r.status == "completed":
            arms[(r.override_map.get(K, "0"), r.override_map.get(CORRECTION, "none"))].append(r)
    lines = ["| k | correction | step: accuracy @ wall s (mean over seeds) |", "|---|---|---|"]
    for (k, correction), group in sorted(arms.items(), key=lambda kv: (int(kv[0][0]), kv[0][1])):
        cells = []
        for step in evaluations(group[0]):
            acc = [m.value for m in (accuracy_at(r, step) for r in group) if m.value is not None]
            wall = [elapsed_before(r).get(step) for r in group]
            if acc and all(w is not None for w in wall):
                cells.append(f"{step}: {np.mean(acc):.3f} @ {np.mean(wall):.0f} s")  # type: ignore[arg-type]
        lines.append(f"| {k} | {correction} | {'; '.join(cells)} |")
    return lines


def rows(correction: str, arms: str, pairs_by_seed: dict[str, tuple[Run, Run]]) -> list[str]:
    """One table row per measure: the paired difference (second arm − first), its interval and outcome."""
    out = []
    for name, by_seed in measures(pairs_by_seed).items():
        # an accuracy difference matters from 0.03 (the claims sweep's threshold): below the power to see that,
        # the outcome is "underpowered", not "no detectable effect"
        seeds, per_seed, interval, verdict = compare(
            by_seed, meaningful=ACCURACY_MATTERS if "accuracy" in name else None
        )
        out.append(
            f"| {correction} | {arms} | {name} | {fmt_interval(interval, 3)} | {len(seeds)} | "
            f"**{verdict.word}** ({verdict.detail}) | {fmt_per_seed(seeds, per_seed, 3)} |"
        )
    return out


def report(sweep_dir: Path) -> str:
    _, runs = load_sweep(sweep_dir)
    lines = [
        f"# Staleness sweep: {sweep_dir}",
        "",
        f"{len(runs)} runs, {sum(r.status == 'completed' for r in runs)} completed.",
        "",
    ]
    corrections = sorted({r.override_map.get(CORRECTION, "none") for r in runs})
    ks = sorted({r.override_map.get(K, "0") for r in runs}, key=int)
    header = [
        "| correction | arms | measure | difference [95% interval] | seeds | outcome | per seed |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += ["## Each k against max_staleness = 0, within a correction (paired by seed)", "", *header]
    for correction in corrections:
        for k in (k for k in ks if k != "0"):
            lines += rows(correction, f"{k} vs 0", pairs(runs, correction, k))
    if "none" in corrections and len(corrections) > 1:  # does the correction pay at each staleness?
        lines += ["", "## Each correction against none, at the same k (paired by seed)", "", *header]
        for correction in (c for c in corrections if c != "none"):
            for k in ks:
                lines += rows(
                    correction, f"{correction} vs none at k = {k}", paired(runs, (k, "none"), (k, correction))
                )
    lines += ["", "## Held-out accuracy against steps and wall time", "", *curves(runs), ""]
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: python bench/staleness_report.py <sweep dir>")
    sweep_dir = Path(sys.argv[1])
    text = report(sweep_dir)
    (sweep_dir / "staleness.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
