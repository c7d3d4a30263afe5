"""Compare the curricula on data=mixed_arithmetic: one run each, sequentially, then one table.

    python bench/curricula.py --steps 120 --out /tmp/curricula            # run the four, print the table
    python bench/curricula.py --out /tmp/curricula --table-only           # re-read finished runs

Every run shares the seed, the warm-started tiny model (cached by recipe) and the prompts; only
`curriculum=` changes. Per run, from its summary.json, metrics.csv and config.yaml:
  zero-var gen    mean over steps of reward/zero_std_frac: share of generated groups with all-equal rewards
                  (rollouts that cost generation and scoring but give GRPO no gradient)
  zero-var batch  mean of reward/zero_std_frac_batch: the same share in the batch that is trained on
  rounds          mean generation rounds per step (dynamic sampling regenerates)
  rollouts        completions generated in training (Σ curriculum/groups × algo.group_size)
  acc before/after  held-out greedy accuracy (val/accuracy) of the warm start and of the final policy
  rollouts/pt     rollouts spent per +1 percentage point of held-out accuracy gained ("-" if none gained)
  by bucket       final held-out accuracy per difficulty (trivial / learnable / near-impossible), decoded
                  again here from the saved policy
Runs are niced (the machine is shared) and never overlap.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CURRICULA = ("uniform", "sorted", "learnable_band", "dynamic_sampling")


def run(name: str, out: Path, steps: int, seed: int, extra: list[str]) -> None:
    command = ["nice", "-n", "15", sys.executable, "-m", "rlx", f"curriculum={name}", "data=mixed_arithmetic",
               f"seed={seed}", f"trainer.max_steps={steps}", f"trainer.val_check_interval={steps}",
               f"hydra.run.dir={out / name}", *extra]
    print("$", " ".join(command), flush=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    subprocess.run(command, cwd=ROOT, env=env, check=True)


def read_metrics(path: Path) -> list[dict[str, float]]:
    """Training-step rows of a Lightning CSVLogger file (validation rows lack reward/zero_std_frac)."""
    with path.open() as handle:
        rows = [{k: float(v) for k, v in row.items() if v not in ("", None)} for row in csv.DictReader(handle)]
    return [row for row in rows if "reward/zero_std_frac" in row]


def bucket_accuracy(run_dir: Path) -> dict[int, float]:
    """Greedy held-out accuracy per difficulty of the run's saved policy (the run's own task and reward)."""
    import torch
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from rlx.models.loading import load_local
    from rlx.rewards.base import Status
    from rlx.rollout.generate import generate

    cfg = OmegaConf.load(run_dir / "config.yaml")
    task, reward = instantiate(cfg.data), instantiate(cfg.reward)
    reward.bind(task)  # reward=math's strict=null: the task decides, as in rlx.train
    loaded = load_local(run_dir / "policy")
    with torch.inference_mode():
        texts = generate(loaded.policy, loaded.tokenizer, [r["prompt"] for r in task.val], task.max_new_tokens,
                         1.0, greedy=True).texts
    passed: dict[int, list[bool]] = {}
    for row, verdict in zip(task.val, reward(texts, task.val), strict=True):
        passed.setdefault(row["difficulty"], []).append(verdict.status == Status.PASS)
    return {d: sum(v) / len(v) for d, v in sorted(passed.items())}


def summarise(run_dir: Path) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    steps = read_metrics(Path(summary["metrics_csv"]))
    group_size = int(_config_value(run_dir / "config.yaml", "group_size"))
    mean = lambda key: sum(r[key] for r in steps) / len(steps)  # noqa: E731
    rollouts = int(sum(r["curriculum/groups"] for r in steps)) * group_size
    before, after = summary["before"]["val/accuracy"], summary["after"]["val/accuracy"]
    gain_points = 100 * (after - before)
    return {
        "steps": len(steps), "zero_gen": mean("reward/zero_std_frac"), "zero_batch": mean("reward/zero_std_frac_batch"),
        "rounds": mean("curriculum/rounds"), "rollouts": rollouts, "before": before, "after": after,
        "per_point": rollouts / gain_points if gain_points > 0 else None, "wall_s": summary["wall_s"],
        "buckets": bucket_accuracy(run_dir),
    }


def _config_value(path: Path, key: str):
    from omegaconf import OmegaConf

    return OmegaConf.load(path).algo[key]


def table(results: dict[str, dict]) -> str:
    lines = ["| curriculum | zero-var gen | zero-var batch | rounds | rollouts | acc before → after | "
             "rollouts / +1 pt | held-out by bucket (trivial / learnable / near-imp.) | wall s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        per_point = "–" if r["per_point"] is None else f"{r['per_point']:,.0f}"
        buckets = " / ".join(f"{v:.2f}" for v in r["buckets"].values())
        lines.append(f"| {name} | {r['zero_gen']:.3f} | {r['zero_batch']:.3f} | {r['rounds']:.2f} | "
                     f"{r['rollouts']:,} | {r['before']:.3f} → {r['after']:.3f} | {per_point} | {buckets} | "
                     f"{r['wall_s']:.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="one run directory per curriculum goes here")
    parser.add_argument("--steps", type=int, default=120, help="RL steps per run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="+", choices=CURRICULA, default=list(CURRICULA))
    parser.add_argument("--table-only", action="store_true", help="do not run; summarise finished runs")
    parser.add_argument("--results", type=Path, help="also write the table, with the command, to this markdown file")
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides for every run, e.g. algo.beta=0")
    args = parser.parse_args()
    if not args.table_only:
        for name in args.only:
            run(name, args.out, args.steps, args.seed, args.overrides)
    sys.path.insert(0, str(ROOT))
    text = table({name: summarise(args.out / name) for name in args.only})
    print(text)
    if args.results:
        command = " ".join(["python bench/curricula.py", f"--steps {args.steps}", f"--seed {args.seed}",
                            *args.overrides])
        args.results.write_text(f"Measured with `{command}` (data=mixed_arithmetic, model=tiny, algo=grpo "
                                f"defaults).\n\n{text}\n")


if __name__ == "__main__":
    main()
