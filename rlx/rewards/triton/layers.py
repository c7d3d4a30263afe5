"""The reference's torch.nn layers, under reward.torch_in_forward=reference_layers (KernelBench level 2: keep the
reference's layers, fuse the rest in Triton).

Candidate side (`Layers`, read by rlx.rewards.triton.account): the program may run the forward of every torch.nn
module type the task's `Model` instantiates (nn.Conv2d, nn.Linear, nn.MaxPool2d, nn.ReLU, ...), as many instances
of each as the reference builds; its own forward, not one replaced on the instance, and not a subclass. Each
call that ran an ATen op is counted by type (the frame of that forward, kept until the forward ends so that its
identity is not reused).

Reference side (`LayerCalls`, a dispatch mode around the reference's forward in its own sandbox): the same count
for the reference (calls of torch.nn modules other than `Model` itself, each op going to the innermost module
forward it runs in), and whether any op that computes ran outside them (in `Model.forward` itself or in a module
class of the task's own). A reference that computes nothing outside its layers (5 of KernelBench level 2's 100:
`Conv3d -> MaxPool3d -> MaxPool3d -> sum`-like chains of modules) would be answered in full by running its layers
and copying the result in a kernel; there the checker (rlx.rewards.triton.reward) refuses a program whose layer
calls cover every one of the reference's.
"""

from __future__ import annotations

import sys
from types import CodeType, FrameType

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from rlx.rewards.triton.tensors import storage_ptr

# ATen ops that compute nothing: metadata, views, allocations (rlx.rewards.triton.account's classes of op)
VIEWS = {
    "view", "_unsafe_view", "_reshape_alias", "slice", "select", "unsqueeze", "unsqueeze_", "squeeze", "squeeze_",
    "expand", "permute", "t", "t_", "transpose", "transpose_", "as_strided", "as_strided_", "alias", "detach",
    "detach_", "unbind", "split", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "narrow",
    "diagonal", "unfold", "view_as_real", "view_as_complex", "movedim", "real", "imag", "set_", "_neg_view",
    "_conj", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "record_stream",
}  # fmt: skip
# New storage filled with nothing or with values from Python alone (no tensor's values read): torch.empty,
# torch.ones, torch.full, torch.arange, torch.tensor([...]) (aten.lift_fresh of what it built from the list).
ALLOCATIONS = {
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided", "zeros",
    "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "scalar_tensor",
    "arange", "linspace", "logspace", "eye", "lift_fresh",
}  # fmt: skip
FILLS = {("fill_", "Scalar"), ("zero_", "")}
# Allocations whose positional arguments are sizes and Python scalars: a tensor among them is a value they read
# (torch.linspace(x[i, j], x[i, j], 1, out=...) copied an input's elements with no other op: its Tensor overloads
# take the bounds' values). The `*_like` / `new_*` ops take their first tensor for its shape, dtype and device only.
FROM_VALUES = {"linspace", "logspace", "arange", "full", "scalar_tensor", "eye"}


def type_key(kind: type) -> str:
    """A module type as both sandboxes name it: `torch.nn.modules.conv.Conv2d`."""
    return f"{kind.__module__}.{kind.__qualname__}"


def torch_layer(module: object) -> bool:
    return isinstance(module, torch.nn.Module) and type(module).__module__.startswith("torch.nn.")


def computes(name: str, overload: str, args: tuple, fresh: set[int]) -> bool:
    """Whether an ATen op reads values: not a view, an allocation or a constant fill of storage allocated here."""
    if name in FROM_VALUES and any(isinstance(arg, torch.Tensor) for arg in args):
        return True
    if name in VIEWS or name in ALLOCATIONS:
        return False
    return not ((name, overload) in FILLS and bool(args) and storage_ptr(args[0]) in fresh)


class Layers:
    """The torch.nn module types the reference Model instantiates, the code of each one's own forward, and how
    many instances it builds (a program may run as many of each, not more)."""

    def __init__(self, counts: dict[type, int]) -> None:
        self.code: dict[type, CodeType] = {}
        for kind in counts:
            code = getattr(getattr(kind, "forward", None), "__code__", None)
            if isinstance(code, CodeType):
                self.code[kind] = code
        self.counts = counts

    @classmethod
    def of(cls, model: object) -> Layers:
        """Every torch.nn module type in `model` (its own class, defined in the task file, aside), with counts."""
        counts: dict[type, int] = {}
        for module in model.modules() if isinstance(model, torch.nn.Module) else ():
            if torch_layer(module):
                counts[type(module)] = counts.get(type(module), 0) + 1
        return cls(counts)

    def owns(self, frame: FrameType, used: dict[type, set[int]]) -> bool | None:
        """True: the frame runs an allowed layer's own forward (one of the first `counts[type]` instances this
        forward ran); False: another module's forward; None: no module's."""
        module = frame.f_locals.get("self")
        if not isinstance(module, torch.nn.Module):
            return None
        kind = type(module)
        if self.code.get(kind) is not frame.f_code or "forward" in module.__dict__:
            return False
        seen = used.setdefault(kind, set())
        if id(module) not in seen and len(seen) >= self.counts[kind]:
            return False
        seen.add(id(module))
        return True


class Calls:
    """Module calls that ran ATen ops, by type, each call known by its forward's frame (held, so that a finished
    call's frame identity is not taken by the next one)."""

    def __init__(self) -> None:
        self.frames: dict[int, FrameType] = {}
        self.by_type: dict[str, int] = {}

    def note(self, frame: FrameType, kind: type) -> None:
        if id(frame) not in self.frames:
            self.frames[id(frame)] = frame
            key = type_key(kind)
            self.by_type[key] = self.by_type.get(key, 0) + 1


def _innermost_module(frame: FrameType | None) -> tuple[FrameType, torch.nn.Module] | None:
    """The innermost frame that runs a module's own `forward` (its class's, or one set on the instance)."""
    while frame is not None:
        if frame.f_code.co_name == "forward":
            module = frame.f_locals.get("self")
            if isinstance(module, torch.nn.Module):
                return frame, module
        frame = frame.f_back
    return None


class LayerCalls(TorchDispatchMode):
    """Around the reference's forward (reference sandbox only: no candidate code there): its torch.nn layer
    calls by type, and whether any op that computes ran outside them."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # as rlx.rewards.triton.account.DispatchAccount: no torch._dynamo import per forward

    def __init__(self, root: object) -> None:
        super().__init__()
        self.root, self.calls, self.outside = root, Calls(), False
        self.fresh: set[int] = set()  # storages allocated during the forward (their constant fills compute nothing)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name, overload = func._schema.name.split("::")[-1], func._overloadname
        found = _innermost_module(sys._getframe(1))
        if found is not None and found[1] is not self.root and torch_layer(found[1]):
            self.calls.note(found[0], type(found[1]))
        elif computes(name, overload, args, self.fresh):
            self.outside = True
        result = func(*args, **kwargs)
        if name in ALLOCATIONS and isinstance(result, torch.Tensor):
            self.fresh.add(storage_ptr(result))
        return result
