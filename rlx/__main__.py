"""python -m rlx [group=option ...] [key=value ...]   (add -m for a sweep)"""

from __future__ import annotations

import logging

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from rlx.errors import RlxError

log = logging.getLogger("rlx")


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    from rlx.train import train  # heavy imports after Hydra has parsed the command line

    try:
        summary = train(cfg)
    except RlxError as err:
        log.error("%s", err)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise  # Hydra marks this job FAILED, runs the rest of the sweep, and the sweep report shows it
        raise SystemExit(f"rlx: {err}") from None
    before, after = summary["before"] or {}, summary["after"]
    print(f"\nheld-out accuracy: {before.get('val/accuracy', float('nan')):.3f} -> {after['val/accuracy']:.3f} "
          f"in {summary['wall_s']:.0f} s ({summary['steps']} RL steps)")
    print(f"run directory:  {summary['run_dir']}")
    print(f"  summary.json  metrics: {summary['metrics_csv']}  samples: {summary['samples']}")
    print(f"  policy (save_pretrained): {summary['policy_dir']}  resume: ckpt_path={summary['checkpoint']}")
    return after["val/accuracy"]


if __name__ == "__main__":
    main()
