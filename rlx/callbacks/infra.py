"""InfraStop (the `infra_stop` group): stop a run whose reward keeps failing on its own account.

An INFRA sample is one the reward could not score for reasons that are not the completion's (a sandbox
server that will not start, a scorer that raises, a non-finite reward): it is excluded from the loss, so a
run whose samples are mostly INFRA trains on next to nothing while looking alive. After `steps` RL steps in a
row whose `reward/infra_frac` exceeds `max_frac`, the run stops: the trainer is asked to stop after the step
(the checkpoint callback then writes the last checkpoint), and `rlx.train` ends with the message below, which
names the reward. The streak is saved in checkpoints, so a resumed run counts on.
"""

from __future__ import annotations

import logging

from lightning.pytorch.callbacks import Callback

from rlx.errors import RlxError

log = logging.getLogger(__name__)
METRIC = "reward/infra_frac"


class InfraError(RlxError):
    pass


class InfraStop(Callback):
    def __init__(self, max_frac: float, steps: int) -> None:
        if not 0.0 <= max_frac < 1.0:
            raise ValueError(f"infra_stop.max_frac is a share of a step's samples in [0, 1) (got {max_frac!r}); "
                             "e.g. infra_stop.max_frac=0.5")
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"infra_stop.steps must be a step count >= 1 (got {steps!r})")
        self.max_frac, self.steps = max_frac, steps
        self.streak = 0
        self.stop_error: InfraError | None = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        frac = trainer.callback_metrics.get(METRIC)
        if frac is None:
            return
        frac = float(frac)
        self.streak = self.streak + 1 if frac > self.max_frac else 0
        if self.streak >= self.steps and self.stop_error is None:
            reward = type(pl_module.reward)
            self.stop_error = InfraError(
                f"stopped after step {trainer.global_step - 1}: the reward {reward.__name__} ({reward.__module__}) "
                f"could not score more than {self.max_frac:.0%} of the samples for {self.streak} steps in a row "
                f"(last step {frac:.0%} INFRA: its own failures, not the completions'; see the log for its errors). "
                f"Fix the reward, then resume with ckpt_path=last; the limit is infra_stop.max_frac / infra_stop.steps")
            trainer.should_stop = True

    def state_dict(self) -> dict:
        return {"streak": self.streak}

    def load_state_dict(self, state_dict: dict) -> None:
        self.streak = state_dict["streak"]
