"""The algorithm presets side by side on the embedded default: held-out accuracy, wall time and peak memory.

    python bench/algos.py --seeds 0 1 2 [--out outputs/bench-algos] [--extra trainer.max_steps=100 ...]
                          [--results bench/RESULTS-algos.md]

For each seed it first builds (or finds cached) that seed's SFT warm start in a separate process, so no run's
wall time or peak memory includes the SFT; then it runs `python -m rlx algo=<a> seed=<s>` for each algorithm,
each in its own process (a multirun's jobs share one process, whose resident memory only grows from job to
job, so its later jobs' peaks would include the earlier jobs' leftovers), and reads every summary.json. A job whose summary.json already exists is not rerun, so an
interrupted benchmark continues where it stopped. Prints a markdown table (mean ± std over seeds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ALGOS = ["ppo", "grpo", "dr_grpo", "dapo", "reinforce", "gspo", "cispo", "reinforce_pp"]
WARM_START = """
from hydra import compose, initialize_config_dir
from rlx.checks import build_node
with initialize_config_dir(config_dir="{conf}", version_base="1.3"):
    cfg = compose("config", overrides=["run_dir=/tmp/unused", "seed={seed}", *{extra!r}])
build_node(cfg, "model")(build_node(cfg, "data"))
"""
# Model-state bytes per preset (fp32 weights, gradients and AdamW's two moments), from the real models:
# the part of memory that a critic (PPO) or a reference (GRPO) adds, independent of the process's baseline.
STATE_MEMORY = """
import json
from hydra import compose, initialize_config_dir
from rlx.checks import build_node
from rlx.models.critic import Critic
with initialize_config_dir(config_dir="{conf}", version_base="1.3"):
    cfg = compose("config", overrides=["run_dir=/tmp/unused", *{extra!r}])
policy = build_node(cfg, "model")(build_node(cfg, "data")).policy
critic = Critic(None, None, 1.0).build(policy)
count = lambda m: sum(p.numel() for p in m.parameters())
print(json.dumps({{"policy": count(policy), "critic": count(critic)}}))
"""


def env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}


def run_seed(seed: int, out: Path, extra: list[str]) -> None:
    todo = [a for a in ALGOS if not (out / f"seed{seed}" / a / "summary.json").is_file()]
    if not todo:
        return
    model_extra = [e for e in extra if e.startswith("model.")]
    subprocess.run([sys.executable, "-c", WARM_START.format(conf=REPO / "conf", seed=seed, extra=model_extra)],
                   cwd=REPO, env=env(), check=True)
    for algo in todo:
        subprocess.run([sys.executable, "-m", "rlx", f"algo={algo}", f"seed={seed}",
                        f"hydra.run.dir={out / f'seed{seed}' / algo}", *extra], cwd=REPO, env=env(), check=True)


def state_memory(extra: list[str]) -> str:
    """Policy/critic/reference parameter counts and the training-state bytes of GRPO vs PPO."""
    model_extra = [e for e in extra if e.startswith("model.")]
    out = subprocess.run([sys.executable, "-c", STATE_MEMORY.format(conf=REPO / "conf", extra=model_extra)],
                         cwd=REPO, env=env(), check=True, capture_output=True, text=True).stdout
    counts = json.loads(out.strip().splitlines()[-1])
    p, c = counts["policy"], counts["critic"]
    trained = 16  # bytes per trained fp32 parameter: weight + gradient + two AdamW moments
    grpo = p * trained + p * 4  # policy + frozen reference (weights only)
    ppo = p * trained + c * trained  # policy + critic (no reference by default)
    mb = 2**20
    return (f"parameters: policy {p:,}, critic {c:,} (the policy's body + a scalar head), reference {p:,}\n"
            f"model-state memory (fp32 weights, grads, AdamW moments): GRPO {grpo / mb:.1f} MB "
            f"(policy {p * trained / mb:.1f} + reference {p * 4 / mb:.1f}), PPO {ppo / mb:.1f} MB "
            f"(policy {p * trained / mb:.1f} + critic {c * trained / mb:.1f}); PPO / GRPO = {ppo / grpo:.2f}; "
            f"PPO / policy alone = {ppo / (p * trained):.2f}")


def fmt(values: list[float], digits: int) -> str:
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def table(out: Path, seeds: list[int]) -> str:
    rows = ["| algo | seeds | SFT start | final accuracy | gain | wall time (s) | peak RSS (MB) |",
            "|---|---|---|---|---|---|---|"]
    for algo in ALGOS:
        found = [json.loads(p.read_text()) for s in seeds
                 if (p := out / f"seed{s}" / algo / "summary.json").is_file()]
        if not found:
            rows.append(f"| {algo} | 0 | – | – | – | – | – |")
            continue
        before = [r["before"]["val/accuracy"] for r in found]
        after = [r["after"]["val/accuracy"] for r in found]
        rows.append(f"| {algo} | {len(found)} | {fmt(before, 3)} | {fmt(after, 3)} | "
                    f"{fmt([a - b for a, b in zip(after, before)], 3)} | {fmt([r['wall_s'] for r in found], 0)} | "
                    f"{fmt([r['peak_rss_mb'] for r in found], 0)} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=REPO / "outputs" / "bench-algos")
    parser.add_argument("--extra", nargs="*", default=[], help="overrides passed to every run")
    parser.add_argument("--table-only", action="store_true", help="print the table from existing runs")
    parser.add_argument("--results", type=Path, help="also write the table and the command to this markdown file")
    args = parser.parse_args()
    start = time.perf_counter()
    if not args.table_only:
        for seed in args.seeds:
            run_seed(seed, args.out, args.extra)
    report = f"{table(args.out, args.seeds)}\n\n{state_memory(args.extra)}"
    print(report)
    if args.results:
        command = " ".join(["python bench/algos.py --seeds", *map(str, args.seeds), *(["--extra", *args.extra] if args.extra else [])])
        args.results.write_text(f"# Five algorithms on the embedded default\n\nCommand: `{command}`\n\n{report}\n")
    print(f"\n(benchmark wall time {time.perf_counter() - start:.0f} s; runs under {args.out})")


if __name__ == "__main__":
    main()
