"""The frozen reference policy π_ref for the KL term, held outside the LightningModule's module tree.

It is not a submodule, so it is in no state dict (checkpoints stay policy-sized: the reference is the starting
policy, restorable from its source), receives no gradients, and is not moved by Lightning: the RLModule moves it
with `.to(device)` when fit or validation starts. It is not hidden in `__dict__` either: the module holds this
small object, and runs reference forwards only through `with reference.forward_model() as ref: ...`, so another
holder with the same interface (a LoRA policy with its adapters disabled) can stand in without a second copy.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch
from torch import nn


class FrozenReference:
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

    def to(self, device) -> "FrozenReference":
        self.model.to(device)
        return self


class AdapterReference:
    """The reference of a LoRA run (`peft=lora`): the policy itself with its adapters disabled (peft's
    `disable_adapter()`, as TRL's GRPOTrainer does for a new adapter), never a second copy of the weights. It is
    exactly the starting policy because a new LoRA adapter starts at B = 0. Forwards run in eval mode without
    autograd; the policy's mode and adapters are restored afterwards. `.to()` has nothing of its own to move."""

    def __init__(self, policy: nn.Module) -> None:
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

    def to(self, device) -> "AdapterReference":
        return self
