"""python -m rlx.report [--wandb] <sweep_dir | run_dir> [...]

A sweep directory: (re)writes report.md, report.csv and the PNG curves (and claims.md for +sweeps=seed_claims),
e.g. after a job was killed or after adding runs by hand. A single run's directory: its reward, KL and length
curves (reward.png, kl.png, length.png) and report.md. --wandb also creates the W&B Report of a sweep's group
(after `wandb sync` of offline runs; needs an API key, the network and `pip install wandb-workspaces`).
"""

from __future__ import annotations

import sys

from rlx.report import write_report
from rlx.report.runs import is_run_dir, is_sweep_dir


def main(argv: list[str]) -> int:
    wandb = "--wandb" in argv
    dirs = [a for a in argv if a != "--wandb"]
    if not dirs or any(a in ("-h", "--help") for a in dirs):
        print(__doc__)
        return 0 if dirs else 2
    for path in dirs:
        if not is_sweep_dir(path) and not is_run_dir(path):
            print(
                f"rlx.report: {path} is neither a sweep directory (<n>/.hydra/overrides.yaml) nor a run directory "
                "(summary.json or metrics.csv)",
                file=sys.stderr,
            )
            return 1
        print(write_report(path))
        if wandb and is_sweep_dir(path):
            # deferred: rlx.report.wandb imports wandb's Lightning logger; only --wandb needs it
            from rlx.report.wandb import report_sweep

            print(report_sweep(path, force_online=True) or f"{path}: no run logged to W&B")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
