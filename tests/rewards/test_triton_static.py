"""reward=triton's static check (rlx.rewards.triton.static) on its own: names resolved by scope as Python does
(checked against the standard library's symtable), the idioms people write accepted, and the constructs that
reach the harness's state, frames, strings-as-code or Triton's interpreter refused, each with its reason.
Cheap: no sandbox, no kernel runs."""

from __future__ import annotations

import ast
import pathlib
import symtable

import pytest

from rlx.rewards.triton.scopes import CLASS, Scope, Scopes
from rlx.rewards.triton.static import static_checks

CORPUS = pathlib.Path(__file__).parent / "recall" / "triton"
PROGRAMS = sorted((CORPUS / "honest").glob("*.py")) + sorted((CORPUS / "attacks").glob("*.py"))
HEAD = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
KERNEL = """
@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
"""
MODEL = """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._scale = 1.0

    def forward(self, x):
        y = torch.empty_like(x)
        _copy_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel())
        return y
"""
TRICKY_SCOPES = """
import torch
for getattr in ():
    pass
x = [y for y in range(3) if (z := y)]
class A:
    getattr = 1
    w = [getattr for _ in ()]
    def f(self):
        def g():
            nonlocal self
            self = 2
        return self, getattr, (lambda self: self)(1)
    def h(self, *args, **kw):
        global torch
        return [self for self in args], {k: v for k, v in kw.items()}
def outer(a):
    class Inner:
        b = a
        def m(self):
            return a, b
    try:
        pass
    except Exception as err:
        print(err)
    return Inner
"""


def _pairs(mine: Scope, table: symtable.SymbolTable):
    yield mine, table
    children = table.get_children()
    assert len(mine.children) == len(children), (table.get_name(), table.get_lineno())
    for child, sub in zip(mine.children, children, strict=True):
        yield from _pairs(child, sub)


@pytest.mark.parametrize(
    "source", [TRICKY_SCOPES] + [p.read_text() for p in PROGRAMS], ids=["tricky"] + [p.stem for p in PROGRAMS]
)
def test_scopes_resolve_every_name_as_symtable_does(source):
    scopes = Scopes(ast.parse(source))
    for scope, table in _pairs(scopes.module, symtable.symtable(source, "<candidate>", "exec")):
        if table.get_type() == "module":
            continue
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if name.startswith(".") or name == "__class__" or not symbol.is_referenced():  # super()'s implicit cell
                continue
            kind = scopes.resolve(name, scope).kind
            if symbol.is_free():
                assert kind == "free", (table.get_name(), name)
            elif symbol.is_global():
                assert kind == "global", (table.get_name(), name)
            elif symbol.is_local():
                assert kind == ("class" if scope.kind == CLASS else "local"), (table.get_name(), name)


@pytest.mark.parametrize("path", sorted((CORPUS / "honest").glob("*.py")), ids=lambda p: p.stem)
def test_honest_corpus_passes_the_static_check(path):
    result = static_checks(path.read_text())
    assert all(result.checks.values()) and not result.reason, result.reason


ACCEPTED = {
    "super_with_args": MODEL.replace("super().__init__()", "super(ModelNew, self).__init__()"),
    "old_style_parent_init": MODEL.replace("super().__init__()", "nn.Module.__init__(self)"),
    "own_private_method": MODEL + "\n    def _launch(self):\n        return self._scale\n",
    "functional_typing_functools": "import torch.nn.functional as F\nfrom typing import Optional\nimport functools\n"
    + MODEL,
    "staticmethod_helper": MODEL
    + "\n    @staticmethod\n    def _grid(n: int):\n        return (triton.cdiv(n, 128),)\n",
    "main_guard_test_code": MODEL + '\nif __name__ == "__main__":\n    import numpy as np\n    print(np.zeros(3))\n',
    "optional_import": "try:\n    import apex\nexcept ImportError:\n    apex = None\n" + MODEL,
    "local_attribute_store": MODEL + "\ndef reset(x):\n    x.grad = None\n    x.requires_grad = False\n",
    "own_layers_and_buffers": MODEL.replace(
        "self._scale = 1.0",
        "self.conv = nn.Conv2d(3, 8, 3)\n        self.register_buffer('mask', torch.ones(8))\n"
        "        self.w = nn.Parameter(torch.full((8,), 0.5))",
    ),
    "constexpr_global": "_MODE: tl.constexpr = tl.constexpr(1)\n" + MODEL,
    "task_name_rebound_at_top": "class Model(nn.Module):\n    pass\n" + MODEL + "\nm = Model()\n",
}


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_accepted_idiom(name):
    result = static_checks(HEAD + KERNEL + ACCEPTED[name])
    assert result.checks["vocabulary"], result.reason


REFUSED = {
    # (program text after HEAD + KERNEL, what the reason names)
    "builtin_rebound_in_dead_loop": (MODEL + "for getattr in ():\n    pass\nf = getattr(torch, 'relu')\n", "getattr"),
    "builtin_rebound_in_class": (MODEL + "class B:\n    if False:\n        eval = 1\n    y = eval('1')\n", "eval"),
    "fake_jit_name": (
        MODEL + "def jit(f):\n    return f\n@jit\ndef k(x):\n    tl.store(x, tl.load(x))\n",
        "outside a kernel",
    ),
    "self_not_a_method": (MODEL + "def peek(self):\n    return self._C\n", "._C"),
    "method_taken_from_class": (MODEL + "f = ModelNew.forward\n", "taken from its class"),
    "foreign_private": (MODEL + "def f(m):\n    return m._parameters\n", "._parameters"),
    "library_private": (MODEL + "g = torch._C\n", "torch._C"),
    "module_by_other_path": ("import torch.nn.functional as F\n" + MODEL + "u = F.torch.utils\n", "another path"),
    "module_as_value": (MODEL + "t = torch\n", "used as a value"),
    "denied_submodule": (MODEL + "lib = torch.library\n", "torch.library"),
    "denied_import": ("import os\n" + MODEL, "import os"),
    "star_import": ("from torch import *\n" + MODEL, "star"),
    "dunder_walk": (MODEL + "c = ().__class__.__base__\n", "__base__"),
    "frame_attribute": (MODEL + "g = (i for i in ()).gi_frame\n", "gi_frame"),
    "interpreter_global": (MODEL + "b = interpreter_builder\n", "interpreter"),
    "task_reference": (MODEL + "def f():\n    return Model()\n", "the task's Model"),
    "monkeypatch_library": (MODEL + "T = torch.Tensor\nT.tolist = None\n", "module-level"),
    "dunder_method": (MODEL + "class D(nn.Module):\n    def __del__(self):\n        pass\n", "__del__"),
    "metaclass_keyword": (MODEL + "class E(nn.Module, metaclass=type):\n    pass\n", "metaclass"),
    "tensor_subclass": (MODEL + "class T2(torch.Tensor):\n    pass\n", "bases"),
    "metaclass_call": (MODEL + "M = torch.autograd.function.FunctionMeta\n", "metaclass"),
    "string_eval": ("import typing\n" + MODEL + "h = typing.get_type_hints\n", "get_type_hints"),
    "attrgetter": ("import operator\n" + MODEL + "a = operator.attrgetter('_C')\n", "attrgetter"),
    "foreign_super": (MODEL + "def f(x):\n    return super(torch.Tensor, x).tolist()\n", "super()"),
    "tl_on_host": (MODEL + "def f(p):\n    return tl.load(p)\n", "outside a kernel"),
    "kernel_calls_python": (
        MODEL + "def helper():\n    pass\n@triton.jit\ndef k2(x):\n    helper()\n    tl.store(x, tl.load(x))\n",
        "kernel calls helper",
    ),
    "kernel_item_assignment": (MODEL + "@triton.jit\ndef k3(x, Y: tl.constexpr):\n    Y[0] = 1\n", "item assignment"),
    "kernel_torch": (MODEL + "@triton.jit\ndef k4(x):\n    tl.store(x, torch.relu(tl.load(x)))\n", "inside a kernel"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_with_its_reason(name):
    text, reason = REFUSED[name]
    result = static_checks(HEAD + KERNEL + text)
    assert not result.checks["vocabulary"] and reason in result.reason, result.reason


def test_kernels_are_known_by_the_decorator_their_import_holds():
    own_jit = "def jit(f):\n    return triton.jit(f)\n@jit\ndef fake(x):\n    tl.store(x, tl.load(x))\n"
    result = static_checks(HEAD + KERNEL + own_jit + MODEL)
    assert result.kernels == {("_copy_kernel", 6)}  # the first decorator's line, as the code object reports it
    alias = HEAD.replace("import triton\n", "import triton\nfrom triton import jit\n") + "@jit\ndef k(x):\n pass\n"
    assert static_checks(alias).kernels == {("k", 6)}


def test_hostile_text_never_raises():
    for text in ("(" * 6000 + ")" * 6000, "x = " + "-" * 100000 + "1", "\x00", "def f(:"):
        result = static_checks(text)
        assert not result.checks["parses"] and not result.checks["vocabulary"]


def test_an_unknown_torch_in_forward_stops_the_reward_at_start():
    from rlx.rewards.triton.reward import TritonReward

    limits = dict(wall_s=20, cpu_s=15, memory_mb=4096, fsize_mb=16, disk_mb=64, output_kb=8192)
    with pytest.raises(
        ValueError, match=r"reward\.torch_in_forward must be 'kernels_only' .*'reference_layers'.* or null"
    ):
        TritonReward(2, "cpu", 1, 0, 2.0, 0.5, 0.5, 10, limits, 62100, torch_in_forward="level2")


def test_a_module_level_alias_of_triton_jit_marks_kernels():
    alias = HEAD + "jit = triton.jit\n@jit\ndef k(x):\n    tl.store(x, tl.load(x))\n"
    result = static_checks(alias + MODEL.replace("_copy_kernel", "k"))
    assert result.kernels == {("k", 6)} and result.checks["vocabulary"], result.reason


def test_torch_in_forward_null_takes_the_task_s_policy():
    from types import SimpleNamespace

    from rlx.rewards.triton.reward import TritonReward

    def bound(configured, task):
        reward = SimpleNamespace(torch_in_forward=configured)
        TritonReward.bind(reward, task)  # type: ignore[arg-type]
        return TritonReward.policy.fget(reward)  # type: ignore[attr-defined]

    level2 = SimpleNamespace(torch_in_forward="reference_layers")  # data=kernelbench at level 2
    assert bound(None, level2) == "reference_layers"
    assert bound(None, object()) == "kernels_only"  # data=kernels states nothing
    assert bound("kernels_only", level2) == "kernels_only"  # the command line wins
    with pytest.raises(ValueError, match="torch_in_forward='everything'"):
        bound(None, SimpleNamespace(torch_in_forward="everything"))
