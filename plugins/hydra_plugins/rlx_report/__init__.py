"""rlx's sweep-report callback (`callback.SweepReport`). A Hydra callback is not discovered: it is enabled by
the `_target_` node in conf/hydra/callbacks/sweep_report.yaml, which conf/config.yaml selects by default."""
