"""Learning-rate schedules, built as `_partial_` factories: (optimizer, total_steps) -> scheduler."""

from __future__ import annotations

from torch.optim.lr_scheduler import LambdaLR


def linear_decay(optimizer, total_steps: int, warmup_steps: int, final_fraction: float) -> LambdaLR:
    """Linear warm-up over `warmup_steps`, then linear decay to `final_fraction` of the peak at the end."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return 1.0 - (1.0 - final_fraction) * progress

    return LambdaLR(optimizer, factor)


def constant(optimizer, total_steps: int) -> LambdaLR:
    return LambdaLR(optimizer, lambda step: 1.0)
