"""Wall time per RL step of the embedded default, synchronous (`rollout.max_staleness=0`) against generation and
training at the same time (`rollout.max_staleness=1`), in one invocation, one run at a time:

    python bench/staleness.py                       # 30 steps per arm, k = 0 then 1, one round
    python bench/staleness.py --steps 40 --rounds 2 --ks 0 1 2

Each arm is `python -m rlx rollout.max_staleness=k trainer.max_steps=<steps>` (the default config otherwise:
model=tiny, data=arithmetic, algo=grpo) in its own process with OMP_NUM_THREADS=1: one torch thread for the
trainer and, for k > 0, one for the sampler process, so on a 2-core machine k = 1 uses both cores and k = 0 one
(the tiny model's fastest setting: bench/RESULTS-threads.md). A first 1-step run builds the warm start into the
cache and is not timed. Per arm: the median of metrics.csv's `time/step` after `--skip` steps (the sampler's
start-up falls in step 0), its mean, steps/hour from the median, the medians of `time/generate` (the sampler's
own, for k > 0), `time/wait_trainer` / `time/wait_sampler` (k > 0), `time/tok_per_s`, and the process's whole
wall time (start-up, evaluations and export included). With `--rounds > 1` the arms alternate (0 1 0 1 ...), so
a change in the machine's other load falls on both. The machine's load average is printed before and after each
arm: name what else was running beside the table (bench/RESULTS-staleness.md).
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def run_arm(k: int, steps: int, run_dir: Path, extra: list[str]) -> tuple[list[dict], float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    args = [
        sys.executable,
        "-m",
        "rlx",
        f"rollout.max_staleness={k}",
        f"trainer.max_steps={steps}",
        f"trainer.val_check_interval={steps}",
        f"hydra.run.dir={run_dir}",
        *extra,
    ]
    start = time.perf_counter()
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"k={k} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    with (run_dir / "metrics.csv").open(newline="") as handle:
        return [r for r in csv.DictReader(handle) if r.get("time/step")], wall


def median_of(rows: list[dict], key: str) -> float | None:
    values = [float(r[key]) for r in rows if r.get(key) not in (None, "")]
    return statistics.median(values) if values else None


def fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--skip", type=int, default=3, help="steps left out of the medians (start-up)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--ks", type=int, nargs="+", default=[0, 1])
    parser.add_argument("extra", nargs="*", help="more rlx overrides for every arm")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlx-bench-staleness-") as tmp:
        root = Path(tmp)
        run_arm(0, 1, root / "warm", args.extra)  # builds (or loads) the warm start: not timed
        results: dict[int, list[tuple[list[dict], float]]] = {k: [] for k in args.ks}
        for r in range(args.rounds):
            for k in args.ks:
                before = os.getloadavg()[0]
                rows, wall = run_arm(k, args.steps, root / f"k{k}-{r}", args.extra)
                print(f"round {r} k={k}: {wall:.1f} s, load {before:.2f} -> {os.getloadavg()[0]:.2f}", flush=True)
                results[k].append((rows[args.skip :], wall))
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu_model()}, {os.cpu_count()} CPUs")
    ks, extra = " ".join(map(str, args.ks)), " ".join(args.extra)
    print(f"python bench/staleness.py --steps {args.steps} --skip {args.skip} --rounds {args.rounds} --ks {ks} {extra}")
    print(
        "\n| max_staleness | time/step median s | mean s | steps/hour | time/generate s | wait trainer s "
        "| wait sampler s | tok/s (end to end) | process wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    base = None
    for k, arms in results.items():
        rows = [row for arm, _ in arms for row in arm]
        step = median_of(rows, "time/step")
        base = step if base is None else base
        cells = [
            str(k),
            fmt(step),
            fmt(statistics.mean(float(r["time/step"]) for r in rows)),
            fmt(3600 / step if step else None, 0),
            fmt(median_of(rows, "time/generate")),
            fmt(median_of(rows, "time/wait_trainer")),
            fmt(median_of(rows, "time/wait_sampler")),
            fmt(median_of(rows, "time/tok_per_s"), 0),
            fmt(statistics.mean(wall for _, wall in arms), 1),
        ]
        print("| " + " | ".join(cells) + " |")
    for k, arms in results.items():
        step = median_of([row for arm, _ in arms for row in arm], "time/step")
        if base and step:
            print(f"k={k}: time/step {step / base:.2f}x of k={args.ks[0]}'s")


if __name__ == "__main__":
    main()
