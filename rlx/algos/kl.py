"""Per-token KL estimators between the policy π_θ and the reference π_ref (Schulman, "Approximating KL
Divergence", 2020), with log q = log π_ref − log π_θ evaluated on tokens sampled from the policy:

    k1 = −log q,    k2 = ½ (log q)²,    k3 = q − 1 − log q  (≥ 0, unbiased; GRPO eq. 4)

rlx clamps log q to ±20 before the exponential in k3 only, so a far-off token cannot overflow to inf
(verl also clamps the output at 10; TRL clamps nothing). Inside ±20 the gradient is exact.
"""

from __future__ import annotations

import torch
from torch import Tensor


def k1(logp: Tensor, ref_logp: Tensor) -> Tensor:
    return logp - ref_logp  # [N, T]


def k2(logp: Tensor, ref_logp: Tensor) -> Tensor:
    return 0.5 * (ref_logp - logp) ** 2  # [N, T]


def k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    log_q = (ref_logp - logp).clamp(-20.0, 20.0)  # [N, T]
    return torch.exp(log_q) - 1.0 - log_q  # [N, T]
