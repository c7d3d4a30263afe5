"""A warning, once, when the reward gives no learning signal at the start of a run.

When every group's completions get the same reward, every group-relative advantage is 0 and so is the policy
gradient: the run trains nothing and says nothing (TRL users' "loss is 0", trl#2703, #3452). The usual cause
on user data is the reward, not the policy: an answer format the reward cannot read (a strict match against
free text, a GSM8K reference with its worked solution) scores everything 0. This callback watches
`reward/zero_std_frac` over the first `steps` RL steps and warns once if it was 1.0 at every one of them.

With one completion per prompt (algo.group_size=1, PPO) every group is trivially zero-variance and the
signal comes from the critic instead, so the check is off.
"""

from __future__ import annotations

import logging

from lightning.pytorch import Callback

log = logging.getLogger(__name__)


def no_signal(zero_std_fracs: list[float], steps: int) -> bool:
    """True when the first `steps` values were all 1.0: no group had two different rewards."""
    return len(zero_std_fracs) >= steps and all(f >= 1.0 for f in zero_std_fracs[:steps])


class NoSignalWarning(Callback):
    def __init__(self, steps: int) -> None:
        if steps < 1:
            raise ValueError(f"the NoSignalWarning callback's steps must be >= 1 (got {steps})")
        self.steps = steps
        self.seen: list[float] = []
        self.warned = False

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.warned or len(self.seen) >= self.steps or pl_module.algo.group_size < 2:
            return
        metrics = trainer.callback_metrics
        if "reward/zero_std_frac" not in metrics:
            return
        self.seen.append(float(metrics["reward/zero_std_frac"]))
        if no_signal(self.seen, self.steps):
            self.warned = True
            mean = float(metrics["reward/mean"]) if "reward/mean" in metrics else float("nan")
            log.warning(
                "no learning signal: for the first %d RL steps every group's completions got the same reward "
                "(reward/zero_std_frac = 1.0, reward/mean = %.3f), so every advantage and the policy gradient "
                "are 0. Check the reward and the answer format: samples.jsonl shows completions with their "
                "rewards; %s",
                self.steps,
                mean,
                answer_format_hint(pl_module.reward.strict, mean),
            )


def answer_format_hint(strict: bool | None, mean: float) -> str:
    """What to try, for the reward's own strictness (reward=math's `strict`; None: a reward without one)."""
    if strict is True:
        return (
            "reward.strict=true scores a completion only when it is exactly the answer"
            + (" and none was" if mean == 0 else "")
            + ": on free-text completions set reward.strict=false (extracts \\boxed{}, ####, Answer: or the last "
            "number); on a task whose answers are bare, the model needs a warm start that writes them "
            "(model.warm_start) or a smaller, easier task"
        )
    if strict is False:
        return (
            "reward=math extracts the answer (\\boxed{}, ####, Answer: or the last number) and compares it to the "
            "row's `answer`: check that the rows' answers are bare values and the prompts ask for one"
        )
    return "check that the reward can read what the model writes (rlx.score explains one completion's score)"
