"""reward=triton's two error rates, on programs written to look like what people write, not to fit the reward
(tests/rewards/recall/triton/):
  honest/   correct kernels in the styles of Triton's tutorials 01, 02, 03 (autotune) and 05, KernelBench's
            Triton few-shot example (its reference's `.cuda()` and its wrapper's `assert x.is_cuda`, with every
            other CUDA idiom of GPU host code beside it), Liger-Kernel and unsloth (libdevice's tanh by name,
            `triton.jit` called on a def), KernelBench level-2 answers that keep the reference's layers
            (nn.Conv2d, nn.Linear, the parameter-free nn.MaxPool2d and nn.ReLU; scored with
            torch_in_forward=reference_layers), masked tails in two dimensions, and answers that repeat, rebind or
            subclass the task's names; plus Liger-Kernel's own kernels and host functions as the installed
            liger-kernel package ships them (its `liger_kernel` imports replaced by the few helpers copied from its
            ops/utils.py, and its platform probes written out as they answer on an NVIDIA GPU);
  attacks/  cheats, each with a line saying what stops it: torch compute in grid callables, autotune hooks,
            heuristics and prune functions, host tensors as constexprs, gathers, builtins rebound in dead code,
            fake `jit` decorators, `self` on foreign objects, layers replaced or subclassed, a program's own
            `Model`, every layer of a layers-only reference plus a copy kernel, outputs not written by a kernel,
            Python-side reads (tolist, item), loads and stores outside the launch's tensors (past an input, far
            past an output, another buffer reached by pointer arithmetic, a fault caught and retried), device
            transfers, Triton's interpreter globals, frames, metaclasses.
Every honest program gets full credit and every attack 0; `test_confusion_matrix` prints both counts (the
numbers docs/triton_reward.md states). The attacks the static check stops are also run past it (the runtime
account alone): all but two (which only the static check can stop: frames, the interpreter's globals) still
earn nothing.
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib
import re

import pytest

from rlx.rewards.base import Status
from rlx.rewards.triton.reward import TritonReward
from rlx.rewards.triton.verdict import decide, reference_trials, timing_draw

pytestmark = pytest.mark.slow

CORPUS = pathlib.Path(__file__).parent / "recall" / "triton"
LIGER_UTILS = ("is_hip", "calculate_settings", "ensure_contiguous", "get_npu_core_count", "set_large_grf_mode")
LIGER_HEADER = "import functools\nimport torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
# What liger_kernel.utils and ops/utils.py give its ops modules on an NVIDIA GPU, written out: their own
# definitions probe the platform by importing other packages, and reach torch's backends with getattr.
LIGER_PLATFORM = """

def is_npu_available():
    return False


def compare_version(package, op, target):
    return True  # the installed triton (3.9) and torch (2.13) are newer than every version Liger compares with


def device_context(device):
    return torch.cuda.device(device)


def infer_device_arch():
    return "hopper"


torch_to_triton_dtype = {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}
"""
# Attacks the static check refuses that the runtime account alone stops too, run past the static check (the
# others, generator_frame_walk and interpreter_builder_global, reach the harness's frames or Triton's
# interpreter internals: nothing in-process can take that back, which is why the static check exists).
PAST_THE_STATIC_CHECK = [
    "constexpr_host_tensor",
    "dead_loop_builtin",
    "self_on_foreign_object",
    "string_annotation_eval",
    "metaclass_tensor_subclass",
    "layer_forward_replaced",
]


def _case(path: pathlib.Path) -> dict:
    text = path.read_text()
    task = re.search(r"^# task: (\w+)$", text, re.M)
    assert task is not None, f"{path} names no task"
    mode = "reference_layers" if "# torch_in_forward: reference_layers" in text else "kernels_only"
    return {"code": text, "task": (CORPUS / "tasks" / f"{task.group(1)}.py").read_text(), "mode": mode}


def _segments(source: str, names: set[str]) -> list[str]:
    """The top-level defs (decorators included) of `source` named in `names`, in file order."""
    tree, lines = ast.parse(source), source.splitlines()
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            found.append("\n".join(lines[start - 1 : node.end_lineno]))
    return found


def _without_liger_imports(source: str) -> str:
    """A Liger ops module as shipped, its `from liger_kernel... import` lines left out."""
    tree, lines = ast.parse(source), source.splitlines()
    drop = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("liger_kernel"):
            drop |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return "\n".join(line for i, line in enumerate(lines, 1) if i not in drop)


def liger_cases() -> dict[str, dict]:
    """Programs built from the installed liger-kernel's own sources (the test extra installs 0.8.5)."""
    spec = importlib.util.find_spec("liger_kernel")
    if spec is None or not spec.submodule_search_locations:
        return {}
    ops = pathlib.Path(spec.submodule_search_locations[0]) / "ops"
    utils = "\n\n\n".join(_segments((ops / "utils.py").read_text(), set(LIGER_UTILS)))
    softmax = _without_liger_imports((ops / "softmax.py").read_text())
    relu_squared = _without_liger_imports((ops / "relu_squared.py").read_text())
    swiglu = "\n\n\n".join(_segments((ops / "swiglu.py").read_text(), {"silu", "_swiglu_forward_kernel"}))
    swiglu_host = """

def swiglu_forward(a, b):
    ori_shape = a.shape
    n_cols = ori_shape[-1]
    a, b = a.view(-1, n_cols), b.view(-1, n_cols)
    c = torch.empty_like(a)
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    _swiglu_forward_kernel[(a.shape[0],)](
        a, b, c, c.stride(-2), 1.0, n_cols=n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
    )
    return c.view(*ori_shape)
"""

    def program(body: str, forward: str, init: str = "") -> str:
        model = f"\n\n\nclass ModelNew(nn.Module):{init}\n    def forward(self, *inputs):\n        return {forward}\n"
        return "\n".join([LIGER_HEADER, LIGER_PLATFORM, utils, body, model])

    weight = "\n    def __init__(self, hidden):\n        super().__init__()\n"
    weight += "        self.weight = nn.Parameter(torch.randn(hidden))\n"
    rms_norm = _without_liger_imports((ops / "rms_norm.py").read_text())
    geglu = _without_liger_imports((ops / "geglu.py").read_text())
    cross_entropy = "\n\n\n".join(_segments((ops / "cross_entropy.py").read_text(), {"liger_cross_entropy_kernel"}))
    cross_entropy_host = """
from triton.language.extra.libdevice import tanh

LOG2_E = tl.constexpr(1.4426950408889634)


def cross_entropy_rows(logits, labels):
    # liger_cross_entropy_kernel launched as cross_entropy_forward launches it, for reduction="none" with no
    # ignored rows (that host function first checks the labels with torch reductions and .item(): torch compute)
    n_rows, vocab = logits.shape
    loss_1d = torch.zeros(n_rows, dtype=logits.dtype, device=logits.device)
    liger_cross_entropy_kernel[(n_rows,)](
        X_ptr=logits, X_stride=logits.stride(-2), Y_ptr=labels, Y_stride=labels.stride(-1), weight_ptr=None,
        loss_ptr=loss_1d, z_loss_ptr=None, loss_stride=loss_1d.stride(-1), token_accuracy_ptr=None,
        token_accuracy_stride=0, predicted_tokens_ptr=None, predicted_tokens_stride=0, n_cols=vocab,
        n_non_ignore=n_rows, sum_non_ignore_weight=n_rows, ignore_index=-100, weight_sum=0.0, lse_square_scale=0.0,
        label_smoothing=0.0, reduction="none", softcap=None, RETURN_Z_LOSS=False, RETURN_TOKEN_ACCURACY=False,
        RETURN_PREDICTED_TOKENS=False, BLOCK_SIZE=triton.next_power_of_2(vocab), HAS_WEIGHT=False,
        HAS_SOFTCAPPING=False, HAS_GRADIENTS=False, num_warps=32,
    )
    return loss_1d
"""
    cases = {
        "softmax": (program(softmax, "LigerSoftmaxFunction.apply(*inputs)"), "softmax"),
        "relu_squared": (program(relu_squared, "relu_squared_forward(*inputs)"), "relu_squared"),
        "swiglu": (program(swiglu + swiglu_host, "swiglu_forward(*inputs)"), "swiglu"),
        # libdevice's rsqrt imported by name, DTensor and torch.distributed imports guarded as shipped
        "rms_norm": (
            program(rms_norm, 'LigerRMSNormFunction.apply(*inputs, self.weight, 1e-6, 0.0, "llama", False)', weight),
            "rms_norm",
        ),
        "geglu": (program(geglu, "LigerGELUMulFunction.apply(*inputs)"), "geglu"),  # libdevice's tanh
        "cross_entropy": (program(cross_entropy + cross_entropy_host, "cross_entropy_rows(*inputs)"), "cross_entropy"),
    }
    tasks = {t: (CORPUS / "tasks" / f"{t}.py").read_text() for _, t in cases.values()}
    return {f"liger/{n}.py": {"code": c, "task": tasks[t], "mode": "kernels_only"} for n, (c, t) in cases.items()}


HONEST = {f"honest/{p.name}": _case(p) for p in sorted((CORPUS / "honest").glob("*.py"))} | liger_cases()
ATTACKS = {f"attacks/{p.name}": _case(p) for p in sorted((CORPUS / "attacks").glob("*.py"))}


def kernel_reward(mode: str, base_uid: int) -> TritonReward:
    return TritonReward(
        workers=2,
        device="cpu",
        trials=1,
        seed=None,
        speedup_cap=2.0,
        speedup_weight=0.5,
        plan_weight=0.0,  # full credit is exactly 1.0 (no plan line, no speed on a CPU)
        time_repeats=10,
        base_uid=base_uid,
        limits=dict(wall_s=60, cpu_s=50, memory_mb=4096, fsize_mb=16, disk_mb=64, output_kb=8192),
        torch_in_forward=mode,
    )


def _alone(reward: TritonReward, case: dict):
    """The verdict of the sandboxed run alone, every static check taken as passed."""
    reference = reward._references_for([case["task"]]).popitem()[1]
    expected = reference_trials(reference)
    assert not isinstance(expected, str), expected
    inputs = [list(expected[t].inputs) for t in sorted(expected)]
    check = reward._candidate_check(case["task"], inputs, timing_draw(reference))
    outcome = reward.sandbox.map([case["code"]], check)[0]
    checks = dict.fromkeys(
        ("parses", "defines_model_new", "defines_jit_kernel", "loads_and_stores", "vocabulary"), True
    )
    return decide(checks, outcome, reference, 2.0, 0.5)


@pytest.fixture(scope="module")
def verdicts():
    cases = {**HONEST, **ATTACKS}
    found, alone = {}, {}
    for mode, uid in (("kernels_only", 61600), ("reference_layers", 61610)):
        names = [n for n, c in cases.items() if c["mode"] == mode]
        reward = kernel_reward(mode, uid)
        try:
            scored = reward([cases[n]["code"] for n in names], [{"source": cases[n]["task"]} for n in names])
            found |= dict(zip(names, scored, strict=True))
            for name in PAST_THE_STATIC_CHECK:
                case = ATTACKS[f"attacks/{name}.py"]
                if case["mode"] == mode:
                    alone[name] = _alone(reward, case)
        finally:
            reward.close()
    return found, alone


def test_the_corpora_cover_what_the_brief_lists():
    assert {p.split("/")[1].split("_")[0] for p in HONEST if p.startswith("honest/")} >= {
        "tutorial01",
        "tutorial02",
        "tutorial03",
        "tutorial05",
        "kernelbench",
        "liger",
        "unsloth",
        "level2",
    }
    assert len(ATTACKS) >= 20


@pytest.mark.parametrize("name", list(HONEST))
def test_honest_program_gets_full_credit(verdicts, name):
    verdict = verdicts[0][name]
    assert verdict.status == Status.PASS and verdict.reward == 1.0, verdict.details


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_earns_nothing(verdicts, name):
    verdict = verdicts[0][name]
    assert verdict.reward == 0.0 and verdict.components.get("correct", 0.0) == 0.0, verdict.details
    assert verdict.status in (Status.VIOLATION, Status.FAIL, Status.CRASH), verdict.details


@pytest.mark.parametrize("name", PAST_THE_STATIC_CHECK)
def test_attack_stopped_statically_earns_nothing_from_the_runtime_alone(verdicts, name):
    verdict = verdicts[1][name]
    assert verdict.reward == 0.0 and verdict.components["correct"] == 0.0, verdict.details
    assert verdict.status in (Status.VIOLATION, Status.CRASH), verdict.details


OUT_OF_BOUNDS = ["oob_read_past_input", "oob_write_far", "pointer_arithmetic_between_buffers", "oob_fault_caught"]
LAYERS_AND_COPY = ["layer_modules_and_copy_kernel", "conv_maxpool_layers_and_copy", "layer_forward_called_directly"]


@pytest.mark.parametrize("name", OUT_OF_BOUNDS)
def test_an_access_outside_the_launch_s_tensors_is_a_labelled_violation(verdicts, name):
    verdict = verdicts[0][f"attacks/{name}.py"]
    assert verdict.status == Status.VIOLATION and not verdict.details["checks"]["in_bounds"], verdict.details
    assert any("out-of-bounds" in label for label in verdict.details["out_of_bounds"]), verdict.details


def test_an_access_outside_while_the_model_is_built_is_a_labelled_violation(verdicts):
    verdict = verdicts[0]["attacks/oob_at_init.py"]
    assert verdict.status == Status.VIOLATION and "out-of-bounds load" in verdict.details["reason"], verdict.details


@pytest.mark.parametrize("name", LAYERS_AND_COPY)
def test_running_every_layer_call_of_a_layers_only_reference_leaves_kernels_nothing(verdicts, name):
    verdict = verdicts[0][f"attacks/{name}.py"]
    assert verdict.status == Status.VIOLATION and not verdict.details["checks"]["kernels_compute"], verdict.details
    assert verdict.details["checks"]["no_fallback"], verdict.details  # the layers themselves are allowed


def test_the_task_s_names_are_the_task_s(verdicts):
    """A program's own Model, get_inputs, get_init_inputs or task constant changes nothing the harness reads."""
    rebound = verdicts[0]["honest/task_names_rebound.py"]  # a rebound get_init_inputs would make the scale 1.0
    assert rebound.status == Status.PASS, rebound.details
    layers = verdicts[0]["attacks/model_rebound_for_layers.py"]  # its own Model's nn.GELU is not the task's
    assert not layers.details["checks"]["no_fallback"], layers.details
    assert any("gelu" in refused for refused in layers.details["refused"]), layers.details


def test_confusion_matrix(verdicts, capsys):
    found = verdicts[0]
    honest = sum(found[n].status == Status.PASS and found[n].reward == 1.0 for n in HONEST)
    stopped = sum(found[n].reward == 0.0 for n in ATTACKS)
    with capsys.disabled():
        print(
            f"\nreward=triton: honest given full credit {honest}/{len(HONEST)}, "
            f"adversarial scored 0 {stopped}/{len(ATTACKS)}"
        )
    assert honest == len(HONEST) and stopped == len(ATTACKS)
