"""PPO's value loss: a per-token loss matrix [N, T], aggregated like the policy loss."""

from __future__ import annotations

import torch
from torch import Tensor


def clipped_value_loss(values: Tensor, old_values: Tensor, returns: Tensor, clip: float | None) -> Tensor:
    """PPO's value loss (arXiv 1707.06347, eq. 9's L^VF; the clipped form is from OpenAI baselines' ppo2):

        L = ½ · max((V − R)², (V_old + clip(V − V_old, −ε_v, ε_v) − R)²)

    so a value estimate cannot move more than ε_v from the one that computed the advantages in a way that
    lowers the loss; `clip=None` gives the plain ½ (V − R)².

    Args: values (trainable), old_values (from `prepare`), returns (GAE targets): [N, T].
    Returns: loss [N, T].
    """
    unclipped = (values - returns) ** 2  # [N, T]
    if clip is None:
        return 0.5 * unclipped  # [N, T]
    clipped_values = old_values + (values - old_values).clamp(-clip, clip)  # [N, T]
    return 0.5 * torch.maximum(unclipped, (clipped_values - returns) ** 2)  # [N, T]
