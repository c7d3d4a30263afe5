"""python -m rlx.report [--wandb] <sweep_dir> [...]

(Re)writes report.md, report.csv and the PNG curves of each sweep directory, e.g. after a job was killed or
after adding runs by hand. --wandb also creates the W&B Report of the sweep's group (after `wandb sync` of
offline runs; needs an API key, the network and `pip install wandb-workspaces`).
"""

from __future__ import annotations

import sys

from rlx.report import write_report


def main(argv: list[str]) -> int:
    wandb = "--wandb" in argv
    dirs = [a for a in argv if a != "--wandb"]
    if not dirs or any(a in ("-h", "--help") for a in dirs):
        print(__doc__)
        return 0 if dirs else 2
    for sweep_dir in dirs:
        print(write_report(sweep_dir))
        if wandb:
            from rlx.report.wandb import report_sweep

            print(report_sweep(sweep_dir, force_online=True) or f"{sweep_dir}: no run logged to W&B")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
