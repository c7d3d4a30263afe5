"""reward=triton's two error rates, on programs written to look like what people write, not to fit the reward
(tests/rewards/recall/triton/):
  honest/   correct kernels in the styles of Triton's tutorials 01, 02, 03 (autotune) and 05, KernelBench's
            Triton few-shot example, Liger-Kernel and unsloth, and KernelBench level-2 answers that keep the
            reference's nn.Conv2d / nn.Linear (scored with torch_in_forward=reference_layers); plus Liger-Kernel's
            own kernels and host functions as the installed liger-kernel package ships them (its `liger_kernel`
            imports replaced by the few helpers copied from its ops/utils.py);
  attacks/  cheats, each with a line saying what stops it: torch compute in grid callables, autotune hooks,
            heuristics and prune functions, host tensors as constexprs, gathers, builtins rebound in dead code,
            fake `jit` decorators, `self` on foreign objects, layers replaced or subclassed, outputs not written by
            a kernel, Python-side reads (tolist, item), Triton's interpreter globals, frames, metaclasses.
Every honest program gets full credit and every attack 0; `test_confusion_matrix` prints both counts (the
numbers docs/rewards.md states). The attacks the static check stops are also run past it (the runtime
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
from rlx.rewards.triton.reward import TritonReward, decide, reference_trials

pytestmark = pytest.mark.slow

CORPUS = pathlib.Path(__file__).parent / "recall" / "triton"
LIGER_UTILS = ("is_hip", "calculate_settings", "ensure_contiguous")
LIGER_HEADER = "import functools\nimport torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"
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
    tasks = {t: (CORPUS / "tasks" / f"{t}.py").read_text() for t in ("softmax", "relu_squared", "swiglu")}
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

    def program(body: str, forward: str) -> str:
        model = f"\n\n\nclass ModelNew(nn.Module):\n    def forward(self, *inputs):\n        return {forward}\n"
        return "\n".join([LIGER_HEADER, utils, body, model])

    return {
        "liger/softmax.py": {
            "code": program(softmax, "LigerSoftmaxFunction.apply(*inputs)"),
            "task": tasks["softmax"],
            "mode": "kernels_only",
        },
        "liger/relu_squared.py": {
            "code": program(relu_squared, "relu_squared_forward(*inputs)"),
            "task": tasks["relu_squared"],
            "mode": "kernels_only",
        },
        "liger/swiglu.py": {
            "code": program(swiglu + swiglu_host, "swiglu_forward(*inputs)"),
            "task": tasks["swiglu"],
            "mode": "kernels_only",
        },
    }


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
    check = reward._candidate_check(case["task"], [list(expected[t].inputs) for t in sorted(expected)])
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
