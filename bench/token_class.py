"""Token-class credit against uniform credit on reward=triton, at the same budget, over seeds.

    OMP_NUM_THREADS=1 python bench/token_class.py --seeds 0 1 2 [--out outputs/bench-token-class]
                      [--results bench/RESULTS-token_class.md] [--extra trainer.max_steps=20 ...]

Both arms are the headline command, `python -m rlx algo=grpo reward=triton seed=<s>` (the recipe of
conf/recipe/triton_grpo.yaml: same warm start, prompts, group size, steps, temperature and lr; token_class is
reward=triton's own credit, so that arm is the plain command), and differ only in how a completion's reward
reaches its tokens:
  uniform      advantage=group_mean: every token gets r − mean(group) of the scalar reward
               r = correct + plan_weight · plan (+ the speed term on a GPU);
  token_class  advantage=token_class: the plan line's tokens get plan − mean(group's plan), the code's tokens
               correct − mean(group's correct) (TritonRL's mean-only advantage, conf/advantage/token_class.yaml).
Both are mean-only (no std division), so the comparison isolates the credit assignment. Each run is its own
process (`python -m rlx ...`); a run whose summary.json exists is not rerun, so an interrupted benchmark
continues. Held-out: greedy `val/accuracy` and, where the runs sample (the recipe's val_samples), `val/pass@1`
before and after, and the problems whose greedy answer went from fail to pass (won) and from pass to fail
(lost) between the first and the last evaluation (heldout.jsonl). Prints a markdown table (per seed, then the
mean over seeds) and writes it to --results if given. Runs with
--extra overrides go to their own subfolder of --out (named by a hash of the overrides), so a cached run is only
reused at the same budget.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# token_class first: it is the plain command (reward=triton's own credit), so with a cold cache each seed's
# token_class run pays for that seed's warm start, as `python -m rlx algo=grpo reward=triton` would
ARMS = {"token_class": ["advantage=token_class"], "uniform": ["advantage=group_mean"]}
WINDOW = 5  # steps averaged at the start and at the end (at most half the steps, so the two never overlap)


def env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}


def run(arm: str, seed: int, out: Path, extra: list[str]) -> Path:
    # runs with other overrides live apart: a cached run is only reused for the same budget
    budget = "recipe" if not extra else hashlib.sha1(" ".join(extra).encode()).hexdigest()[:10]
    run_dir = out / budget / f"seed{seed}" / arm
    if not (run_dir / "summary.json").is_file():
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "rlx",
                "algo=grpo",
                "reward=triton",
                f"seed={seed}",
                *ARMS[arm],
                f"hydra.run.dir={run_dir}",
                *extra,
            ],
            cwd=REPO,
            env=env(),
            check=True,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the run and the sandbox processes it reaped
        cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        (run_dir / "cpu.json").write_text(json.dumps({"cpu_s": round(cpu_s, 1)}))
    return run_dir


def read(run_dir: Path) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    with open(summary["metrics_csv"]) as handle:
        steps = [r for r in csv.DictReader(handle) if r.get("reward/correct")]

    def window(key: str, rows: list[dict]) -> float:
        return statistics.mean(float(r[key]) for r in rows)

    window_size = max(1, min(WINDOW, len(steps) // 2))
    before, after = summary["before"], summary["after"]
    first, last = steps[:window_size], steps[-window_size:]
    return {
        "correct": (window("reward/correct", first), window("reward/correct", last)),
        "plan": (window("reward/plan", first), window("reward/plan", last)),
        "valid": (window("reward/valid", first), window("reward/valid", last)),
        "val": (before["val/accuracy"], after["val/accuracy"]),
        "pass1": (before["val/pass@1"], after["val/pass@1"]) if "val/pass@1" in after else None,
        "won_lost": won_lost(Path(summary["held_out"])),
        "wall_s": summary["wall_s"],
        "cpu_s": json.loads((run_dir / "cpu.json").read_text())["cpu_s"] if (run_dir / "cpu.json").is_file() else None,
        "steps": summary["steps"],
        "window": window_size,
    }


def won_lost(path: Path) -> tuple[int, int]:
    """Held-out problems whose greedy answer failed at the first evaluation and passed at the last (won), and
    the reverse (lost)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    first, last = min(r["step"] for r in rows), max(r["step"] for r in rows)
    status = {(r["step"], r["prompt"]): r["status"] == "PASS" for r in rows}
    prompts = {r["prompt"] for r in rows}
    won = sum(not status[(first, p)] and status[(last, p)] for p in prompts)
    lost = sum(status[(first, p)] and not status[(last, p)] for p in prompts)
    return won, lost


def cpu(r: dict) -> str:
    return "CPU not recorded" if r["cpu_s"] is None else f"{r['cpu_s']:.0f} s CPU"


def pair(values: tuple[float, float], digits: int = 2) -> str:
    return f"{values[0]:.{digits}f} → {values[1]:.{digits}f}"


def table(results: dict) -> str:
    window = min(r["window"] for runs in results.values() for r in runs.values())
    lines = [
        (
            f"| credit | seed | `reward/correct` steps 1–{window} → last {window} | `reward/plan` | `reward/valid` | "
            "held-out `val/accuracy` (greedy) before → after | problems won / lost | held-out `val/pass@1` | "
            "wall (CPU) time |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arm in ARMS:
        for seed, r in sorted(results[arm].items()):
            lines.append(
                f"| {arm} | {seed} | {pair(r['correct'])} | {pair(r['plan'])} | {pair(r['valid'])} | "
                f"{pair(r['val'], 3)} | {r['won_lost'][0]} / {r['won_lost'][1]} | "
                f"{pair(r['pass1'], 3) if r['pass1'] else 'not sampled'} | {r['wall_s']:.0f} s ({cpu(r)}) |"
            )

    def mean(runs: list[dict], key: str) -> tuple[float, float]:
        return statistics.mean(r[key][0] for r in runs), statistics.mean(r[key][1] for r in runs)

    for arm in ARMS:
        runs = list(results[arm].values())
        gain = statistics.mean(r["correct"][1] - r["correct"][0] for r in runs)
        won, lost = sum(r["won_lost"][0] for r in runs), sum(r["won_lost"][1] for r in runs)
        sampled = [r for r in runs if r["pass1"]]
        pass1 = pair(mean(sampled, "pass1"), 3) if len(sampled) == len(runs) else ""
        lines.append(
            f"| **{arm}** | mean of {len(runs)} | {pair(mean(runs, 'correct'))} (gain {gain:+.2f}) | "
            f"{pair(mean(runs, 'plan'))} | {pair(mean(runs, 'valid'))} | {pair(mean(runs, 'val'), 3)} | "
            f"{won} / {lost} in all | {pass1} | |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=REPO / "outputs" / "bench-token-class")
    parser.add_argument(
        "--results", type=Path, default=None, help="also write the table here (e.g. bench/RESULTS-token_class.md)"
    )
    parser.add_argument("--extra", nargs="*", default=[], help="overrides passed to every run")
    args = parser.parse_args()
    start = time.perf_counter()
    results: dict = {arm: {} for arm in ARMS}
    for seed in args.seeds:  # one run at a time: wall times stay comparable
        for arm in ARMS:
            results[arm][seed] = read(run(arm, seed, args.out, args.extra))
    command = " ".join(
        [
            "OMP_NUM_THREADS=1 python bench/token_class.py --seeds",
            *map(str, args.seeds),
            *(["--extra", *args.extra] if args.extra else []),
        ]
    )
    text = (
        f"# Token-class vs uniform credit on reward=triton\n\n`{command}` ({time.strftime('%Y-%m-%d')}; "
        f"{time.perf_counter() - start:.0f} s for the runs not already cached in {args.out})\n\n{table(results)}\n"
    )
    if args.results is not None:
        args.results.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
