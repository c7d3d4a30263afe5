"""The networks one RL step reads and trains, as one record: the policy, and the optional frozen reference
(for a KL term) and critic (PPO's value model)."""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from rlx.models.reference import AdapterReference, FrozenReference


@dataclass(frozen=True)
class Models:
    """`policy`: π_θ, the trained causal LM (possibly peft-wrapped); `reference`: π_ref behind its
    `forward_model()` (rlx.models.reference), None when the algorithm reads no reference; `critic`: the value
    model (rlx.models.critic), None without one."""

    policy: nn.Module
    reference: FrozenReference | AdapterReference | None = None
    critic: nn.Module | None = None
