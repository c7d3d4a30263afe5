"""Loss aggregation: the single place where a per-token loss matrix [N, T] becomes a scalar.

Each mode is a function of the *minibatch's* mask that returns per-token weights [N, T]; the loss is
Σ_{i,t} w_{i,t}·L_{i,t}. The weights are computed once per minibatch, before it is split into micro-batches, and
a micro-batch only ever sees its rows of them: the sum over micro-batches is then exactly the minibatch's loss,
and a per-micro-batch normaliser (the classic gradient-accumulation bug) cannot be written. The modes are where
GRPO, Dr. GRPO and DAPO differ (verl's `agg_loss` modes):

- `token_mean`: w = m / Σ m over the whole minibatch (DAPO, §3.3: long answers are not down-weighted);
- `seq_mean_token_mean`: w = m_i,t / (|y_i| · S), S = sequences with a token (GRPO, eq. 3);
- `seq_sum_constant`: w = m_i,t / (C · S), each sequence's token sum ÷ a constant C, then the mean over
  sequences (Dr. GRPO, §3.2, with C = the max completion length). rlx divides by S too, as TRL's `dr_grpo` does
  (verl divides by C only: a factor of S apart, which only rescales the lr).

Sequences without any response token get weight 0 and are not counted (not averaged in as zeros).
Shapes: N sequences of the minibatch, T completion tokens.
"""

from __future__ import annotations

from torch import Tensor


def token_mean(mask: Tensor) -> Tensor:
    mask = mask.float() if not mask.is_floating_point() else mask  # [N, T]
    return mask / mask.sum().clamp(min=1)  # [N, T]


def seq_mean_token_mean(mask: Tensor) -> Tensor:
    mask = mask.float() if not mask.is_floating_point() else mask  # [N, T]
    tokens = mask.sum(-1, keepdim=True)  # [N, 1]
    sequences = (tokens > 0).sum().clamp(min=1)  # []
    return mask / tokens.clamp(min=1) / sequences  # [N, T]


def seq_sum_constant(mask: Tensor, constant: float) -> Tensor:
    mask = mask.float() if not mask.is_floating_point() else mask  # [N, T]
    sequences = (mask.sum(-1) > 0).sum().clamp(min=1)  # []
    return mask / (constant * sequences)  # [N, T]


def aggregate(loss: Tensor, weights: Tensor) -> Tensor:
    """Σ w·L: the aggregated loss of the rows `weights` covers (weights from one of the modes above)."""
    return (loss * weights).sum()  # []
