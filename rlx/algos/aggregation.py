"""Loss aggregation: the single place where a per-token loss matrix [N, T] becomes a scalar.

Which tokens weigh how much is exactly where GRPO, Dr. GRPO and DAPO differ (verl's `agg_loss` modes):
- `token_mean`: Σ loss / Σ tokens over the whole batch (DAPO, §3.3: long answers are not down-weighted);
- `seq_mean_token_mean`: each sequence's token mean, then the mean over sequences (GRPO, eq. 3);
- `seq_sum_constant`: each sequence's token sum ÷ a constant, then the mean over sequences (Dr. GRPO,
  §3.2, with the constant = the max completion length). rlx divides by the number of sequences too, as TRL's
  `dr_grpo` does (verl divides by the constant only: a factor of N apart, which only rescales the lr).
Sequences without any response token are skipped, not counted as zeros.
"""

from __future__ import annotations

from torch import Tensor


def token_mean(loss: Tensor, mask: Tensor) -> Tensor:
    return (loss * mask).sum() / mask.sum().clamp(min=1)  # []


def seq_mean_token_mean(loss: Tensor, mask: Tensor) -> Tensor:
    tokens = mask.sum(-1)  # [N]
    per_seq = (loss * mask).sum(-1) / tokens.clamp(min=1)  # [N]
    has_tokens = (tokens > 0).to(loss.dtype)  # [N]
    return (per_seq * has_tokens).sum() / has_tokens.sum().clamp(min=1)  # []


def seq_sum_constant(loss: Tensor, mask: Tensor, constant: float) -> Tensor:
    tokens = mask.sum(-1)  # [N]
    per_seq = (loss * mask).sum(-1) / constant  # [N]
    has_tokens = (tokens > 0).to(loss.dtype)  # [N]
    return (per_seq * has_tokens).sum() / has_tokens.sum().clamp(min=1)  # []
