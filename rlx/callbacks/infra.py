"""InfraStop (the `infra_stop` group): stop a run whose reward keeps failing on its own account.

An INFRA sample is one the reward could not score for reasons that are not the completion's (a sandbox
server that will not start, a scorer that raises, a non-finite reward): it is excluded from the loss, so a
run whose samples are mostly INFRA trains on next to nothing while looking alive. After `steps` RL steps in a
row whose `reward/infra_frac` exceeds `max_frac`, the run stops: the trainer is asked to stop after the step
(the checkpoint callback then writes the last checkpoint), and `rlx.train` ends with the message below, which
names the reward. The streak is saved in checkpoints, so a resumed run counts on.

A run shorter than that limit can still score nothing at all: a reward that raises on every sample. It never
ends "completed" with an accuracy computed from zeros: a run none of whose RL steps scored a sample ends with
the same kind of message when training ends, and rlx.train checks each held-out evaluation the same way
(`unscored_rows`), the one before RL included, so such a reward stops a run before its first step.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from lightning.pytorch.callbacks import Callback

from rlx.errors import RlxError

log = logging.getLogger(__name__)
METRIC = "reward/infra_frac"


class InfraError(RlxError):
    pass


def reward_name(reward) -> str:
    kind = type(reward)
    return f"{kind.__name__} ({kind.__module__})"


def nothing_scored(reward, what: str) -> str:
    return (
        f"nothing was scored: the reward {reward_name(reward)} could not score {what} (every one INFRA: the "
        "reward's own failures, not the completions'; see the log for its errors), so no accuracy or learning "
        "signal exists. Fix the reward (python -m rlx.score scores one completion with it), then start again"
    )


def unscored_rows(held_out: Path, step: int) -> int:
    """The number of rows of heldout.jsonl's evaluation after `step` RL steps when every one is INFRA, else 0."""
    if not held_out.is_file():
        return 0
    statuses = []
    with held_out.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:  # a line cut by a kill
                continue
            if record.get("step") == step:
                statuses.append(record.get("status"))
    return len(statuses) if statuses and all(s == "INFRA" for s in statuses) else 0


class InfraStop(Callback):
    def __init__(self, max_frac: float, steps: int) -> None:
        if not 0.0 <= max_frac < 1.0:
            raise ValueError(
                f"infra_stop.max_frac is a share of a step's samples in [0, 1) (got {max_frac!r}); "
                "e.g. infra_stop.max_frac=0.5"
            )
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"infra_stop.steps must be a step count >= 1 (got {steps!r})")
        self.max_frac, self.steps = max_frac, steps
        self.streak = 0
        self.seen = self.scored = 0  # RL steps of the run so far, and those that scored at least one sample
        self.stop_error: InfraError | None = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        frac = trainer.callback_metrics.get(METRIC)
        if frac is None:
            return
        frac = float(frac)
        self.seen, self.scored = self.seen + 1, self.scored + (frac < 1.0)
        self.streak = self.streak + 1 if frac > self.max_frac else 0
        if self.streak >= self.steps and self.stop_error is None:
            self.stop_error = InfraError(
                f"stopped after step {trainer.global_step - 1}: the reward {reward_name(pl_module.reward)} "
                f"could not score more than {self.max_frac:.0%} of the samples for {self.streak} steps in a row "
                f"(last step {frac:.0%} INFRA: its own failures, not the completions'; see the log for its errors). "
                f"Fix the reward, then resume with ckpt_path=last; the limit is infra_stop.max_frac / infra_stop.steps"
            )
            trainer.should_stop = True

    def on_train_end(self, trainer, pl_module) -> None:
        if self.stop_error is None and self.seen and not self.scored:
            steps = f"{self.seen} RL step{'s' * (self.seen != 1)}"
            self.stop_error = InfraError(nothing_scored(pl_module.reward, f"any sample of the run's {steps}"))

    def state_dict(self) -> dict:
        return {"streak": self.streak, "seen": self.seen, "scored": self.scored}

    def load_state_dict(self, state_dict: dict) -> None:
        self.streak = state_dict["streak"]
        # (a checkpoint from before these were saved: its steps are not counted)
        self.seen, self.scored = state_dict.get("seen", 0), state_dict.get("scored", 0)
