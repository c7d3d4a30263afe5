"""The frozen reference policy π_ref for the KL term, held outside the LightningModule's module tree.

It is not a submodule, so it is in no state dict (checkpoints stay policy-sized: the reference is the starting
policy, restorable from its source), receives no gradients, and is not moved by Lightning: the RLModule moves it
with `.to(device)` when fit or validation starts. It is not hidden in `__dict__` either: the module holds this
small object, and runs reference forwards only through `with reference.forward_model() as ref: ...`, so another
holder with the same interface (a LoRA policy with its adapters disabled) can stand in without a second copy.

With `algo.ref_sync_steps` the frozen copy is refreshed toward the policy every N RL steps (TR-DPO / TRL
sync_ref_model): then it is no longer the starting policy, and the RLModule saves its weights in checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from peft import PeftModel


@torch.no_grad()
def polyak_update(target: nn.Module, source: nn.Module, alpha: float) -> None:
    """θ_ref ← α·θ + (1 − α)·θ_ref for every parameter (TR-DPO, Gorbatovski et al. 2024, arXiv 2404.09656, §3: "soft"
    update with α, "hard" update α = 1; TRL's SyncRefModelCallback with ref_model_mixup_alpha)."""
    for ref, new in zip(target.parameters(), source.parameters(), strict=True):
        ref.mul_(1.0 - alpha).add_(new.detach().to(ref.dtype), alpha=alpha)


class FrozenReference:
    refreshable = True  # algo.ref_sync_steps can move it toward the policy (a copy of its own)

    def __init__(self, model: nn.Module) -> None:
        # Parameters keep requires_grad (forwards run under no_grad, and nothing optimises them): with it off,
        # torch takes another kernel path and the reference's log-probs differ from the identical policy's by ~1e-6,
        # so the KL and its gradient would not be exactly 0 at the start.
        self.model = model.eval()

    @contextmanager
    def forward_model(self) -> Iterator[nn.Module]:
        """The module to run reference forwards with, in eval mode and without autograd."""
        with torch.no_grad():
            yield self.model

    def refresh(self, policy: nn.Module, alpha: float) -> None:
        """Move the reference toward the current policy: α = 1 copies it (TR-DPO hard sync)."""
        polyak_update(self.model, policy, alpha)

    def to(self, device) -> FrozenReference:
        self.model.to(device)
        return self


class AdapterReference:
    """The reference of a LoRA run (`peft=lora`): the policy itself with its adapters disabled (peft's
    `disable_adapter()`, as TRL's GRPOTrainer does for a new adapter), never a second copy of the weights. It is
    exactly the starting policy because a new LoRA adapter starts at B = 0. Forwards run in eval mode without
    autograd; the policy's mode and adapters are restored afterwards. `.to()` has nothing of its own to move."""

    refreshable = False  # it *is* the base weights: there is no separate copy to move

    def __init__(self, policy: PeftModel) -> None:
        self.policy = policy

    @contextmanager
    def forward_model(self) -> Iterator[nn.Module]:
        training = self.policy.training
        self.policy.eval()
        try:
            with torch.no_grad(), self.policy.disable_adapter():
                yield self.policy
        finally:
            self.policy.train(training)

    def to(self, device) -> AdapterReference:
        return self
