"""What a checkpoint holds of the RLModule beyond Lightning's own (weights, optimisers, schedules, step): its
`rlx` entry, the state of the parts the module alone holds. The global RNGs need no saving: every RL step
reseeds them from (seed, step) (rlx.callbacks.checkpoint)."""

from __future__ import annotations

from typing import Any, Protocol

from rlx.models.reference import FrozenReference

# parts added after checkpoints were first written: absent from older ones, they start from their empty state
ADDED_LATER = ("entropy",)


class Stateful(Protocol):
    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


def save_state(parts: dict[str, Stateful], before: dict | None, reference: FrozenReference | None) -> dict:
    """The `rlx` entry: each part's state_dict under its name (the curriculum sampler: its own RNG, position,
    estimates; the advantage: e.g. the running-mean baseline; the non-finite guard's counts; entropy=adaptive:
    its coefficient and last measurement), the starting policy's held-out metrics `before`, and the weights of
    a `reference` refreshed toward the policy (algo.ref_sync_steps: no longer the starting policy; None: not
    saved)."""
    state: dict[str, Any] = {name: part.state_dict() for name, part in parts.items()}
    state["before"] = before
    if reference is not None:
        state["reference"] = reference.model.state_dict()
    return state


def load_state(state: dict, parts: dict[str, Stateful], reference: FrozenReference | None) -> dict | None:
    """Restore `parts` and a saved reference's weights from the `rlx` entry; returns `before`."""
    for name, part in parts.items():
        part.load_state_dict(state.get(name, {}) if name in ADDED_LATER else state[name])
    if "reference" in state and reference is not None:
        reference.model.load_state_dict(state["reference"])
    return state["before"]
