"""One RL step's metrics, sent where Lightning's `self.log(..., on_step=True)` sends them, without its cost.

Lightning's `self.log` costs about 0.25 ms a key on a CPU: its result collection re-walks the stored metrics on
every call. For rlx's ~40 step metrics that is 10 ms a step, 8% of the embedded default's RL step (measured with
bench/grpo_step.py's tiny size). The step's metrics are already reduced over ranks (rlx.distributed's
mean_over_ranks), so they need none of the collection's epoch aggregation or syncing: they go straight to

- every logger (`log_metrics` at Lightning's step index for this batch, plus `epoch`, then `save`, as Lightning's
  logger connector does, every `trainer.log_every_n_steps` steps; the loggers act on rank zero only), and
- `trainer.callback_metrics`, where the progress line, the infra-stop and no-signal callbacks and summary.json
  read them.
"""

from __future__ import annotations

import torch


def publish_step_metrics(trainer, metrics: dict[str, float | torch.Tensor], batch_index: int) -> None:
    """Args: metrics: name → scalar (a float or a 0-d tensor); batch_index: this RL step's 0-based index, the
    step Lightning logs the batch's metrics at (its `_batches_that_stepped` before the batch ends)."""
    values = {name: float(value) for name, value in metrics.items()}
    trainer.callback_metrics.update({name: torch.tensor(value) for name, value in values.items()})
    if (batch_index + 1) % trainer.log_every_n_steps != 0 and not trainer.should_stop:
        return
    for logger in trainer.loggers:
        logger.log_metrics({**values, "epoch": trainer.current_epoch}, step=batch_index)
        logger.save()
