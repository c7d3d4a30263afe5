"""Step metrics bypass Lightning's self.log (rlx.callbacks.step_metrics) but arrive where it would send them."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from rlx.callbacks.step_metrics import publish_step_metrics


class RecordingLogger:
    def __init__(self) -> None:
        self.rows: list[tuple[int, dict]] = []
        self.saves = 0

    def log_metrics(self, metrics: dict, step: int) -> None:
        self.rows.append((step, metrics))

    def save(self) -> None:
        self.saves += 1


def test_every_log_every_n_steps_th_step_reaches_the_loggers_and_every_step_the_callbacks():
    logger = RecordingLogger()
    trainer = SimpleNamespace(
        loggers=[logger], callback_metrics={}, log_every_n_steps=2, should_stop=False, current_epoch=0
    )
    for step in range(4):
        publish_step_metrics(trainer, {"reward/mean": torch.tensor(0.25 * step), "time/score": 1.5}, step)
        assert float(trainer.callback_metrics["reward/mean"]) == 0.25 * step  # the callbacks see every step
    assert logger.rows == [
        (1, {"reward/mean": 0.25, "time/score": 1.5, "epoch": 0}),  # Lightning's (step + 1) % n == 0
        (3, {"reward/mean": 0.75, "time/score": 1.5, "epoch": 0}),
    ]
    assert logger.saves == 2  # metrics.csv written as each row arrives (nothing lost to a crash)
    trainer.should_stop = True  # the last step of a stopping run is logged whatever n is
    publish_step_metrics(trainer, {"reward/mean": 1.0}, 4)
    assert logger.rows[-1] == (4, {"reward/mean": 1.0, "epoch": 0})
