"""reward=triton: reference answers of generated problems (a sample spanning every family, shape and dtype;
bench/kernel_problems.py runs all 1170 of every operation rlx knows) score full marks, each kernel hack scores 0
with its label, each
warm-start corruption costs what it should (correctness, the plan, or both), with no process left behind (one
parallel batch, then one test per case)."""

from __future__ import annotations

import time

import pytest
from sandbox_helpers import RUN_UID_OFFSET, processes_of

from rlx.data.kernels.generator import IMPORTS, generate
from rlx.data.kernels.ops import BINARY, ROWS, UNARY
from rlx.data.kernels.task import CORRUPTIONS, PLAN_ONLY
from rlx.rewards.base import Status
from rlx.rewards.triton.reward import TritonReward

pytestmark = pytest.mark.slow

PROBLEMS = {
    p.name: p
    for p in generate(
        [(16, 48), (8, 64), (16, 100), (4, 128), (8, 200)],
        ["float32", "float16", "bfloat16"],
        list(UNARY),
        list(BINARY),
        list(ROWS),
        fused=True,
    )
}  # every operation rlx knows, not only data=kernels' default
# every 37th of the 1170: 32 problems, covering the four families, the five shapes and the three dtypes
SAMPLE = list(PROBLEMS)[::37]
BASE_UID = 61900 + RUN_UID_OFFSET  # as root: uids no other suite uses (sandbox_helpers)
RELU = PROBLEMS["relu 16x100 f32"].solution
# a kernel that loads and stores (so the static checks pass) but computes nothing of the task: o[0] = xp[0]
NOOP_KERNEL = "@triton.jit\ndef k(xp,o,n,B:tl.constexpr):\n tl.store(o,tl.load(xp))\n"

HACKS = {
    "calls_torch_reference": (
        Status.VIOLATION,
        NOOP_KERNEL
        + """
class ModelNew(nn.Module):
    def forward(self, x):
        k[(1,)](x, x, 1, B=16)
        return Model()(x)
""",
    ),
    "kernel_never_launched": (
        Status.VIOLATION,
        RELU.replace("  relu_k[(x.shape[0],)](x,y,x.shape[1],B=triton.next_power_of_2(x.shape[1]))\n", ""),
    ),
    "try_except_torch_fallback": (
        Status.VIOLATION,
        NOOP_KERNEL
        + """
class ModelNew(nn.Module):
    def forward(self, x):
        try:
            k[(1,)](x, x, 1, B=16)
            raise RuntimeError("pretend the kernel failed")
        except Exception:
            return torch.relu(x)
""",
    ),
    "constant_output": (
        Status.FAIL,
        NOOP_KERNEL
        + """
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)
        k[(1,)](x, out, 1, B=16)
        return out
""",
    ),
    "mutates_inputs": (
        Status.VIOLATION,
        RELU.replace(",mask=m)\nclass", ",mask=m)\n tl.store(xp+r*n+c,x*0.0,mask=m)\nclass"),
    ),
    "wrong_dtype": (Status.FAIL, RELU.replace("y=torch.empty_like(x)", "y=torch.empty_like(x,dtype=torch.float64)")),
    "out_of_bounds_write": (Status.VIOLATION, RELU.replace("tl.maximum(x,0.0),mask=m)", "tl.maximum(x,0.0))")),
    # an unmasked copy writes back what it read past the input's end: only distinct canaries per buffer see it
    "out_of_bounds_fixed_point": (Status.VIOLATION, RELU.replace(",mask=m", "").replace("tl.maximum(x,0.0)", "x")),
    "numpy_fallback": (
        Status.VIOLATION,
        NOOP_KERNEL
        + """
class ModelNew(nn.Module):
    def forward(self, x):
        k[(1,)](x, x, 1, B=16)
        return torch.from_numpy(x.numpy().clip(0))
""",
    ),
    "no_jit_kernel": (
        Status.VIOLATION,
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n",
    ),
    "does_not_parse": (Status.FORMAT, RELU[:-40]),
    "no_model_new": (Status.FORMAT, RELU.replace("class ModelNew", "class Other")),
    "infinite_loop_in_forward": (
        Status.TIMEOUT,
        NOOP_KERNEL
        + """
class ModelNew(nn.Module):
    def forward(self, x):
        while True:
            pass
""",
    ),
    "wrong_math": (Status.FAIL, RELU.replace("tl.maximum(x,0.0)", "tl.maximum(x,0.1)")),
    "forward_raises": (Status.CRASH, RELU.replace("  return y", "  1/0\n  return y")),
}
# Torch fallbacks the in-process allow-list alone did not see (they passed until the static vocabulary,
# rlx.rewards.triton.static, refused the words they need: `torch._C`, a kernel calling a Python helper)
HACKS["disable_torch_function"] = (
    Status.VIOLATION,
    NOOP_KERNEL
    + """
class ModelNew(nn.Module):
    def forward(self, x):
        k[(1,)](x, x, 1, B=16)
        with torch._C.DisableTorchFunction():
            return torch.relu(x)
""",
)
# under TRITON_INTERPRET=1 a kernel's body is Python: a helper called from it would run outside every check
HACKS["torch_inside_interpreted_kernel"] = (
    Status.VIOLATION,
    """
box = {}
def helper():
    box["y"] = torch.relu(box["x"])
@triton.jit
def k(xp,o,n,B:tl.constexpr):
    helper()
    tl.store(o,tl.load(xp))
class ModelNew(nn.Module):
    def forward(self, x):
        box["x"] = x
        k[(1,)](x, x, 1, B=16)
        return box["y"]
""",
)
# Warm-start noise (data.noise): each corruption of a sampled answer, by kind.
CORRUPTED = {
    f"{name}/{problem}": (problem, text)
    for problem in SAMPLE[::4]
    for name, corrupt in CORRUPTIONS.items()
    if (text := corrupt(PROBLEMS[problem].solution)) is not None
}


@pytest.fixture(scope="module")
def outcome():
    reward = TritonReward(
        workers=2,
        device="cpu",
        trials=3,
        seed=0,
        speedup_cap=2.0,
        speedup_weight=0.5,
        plan_weight=0.5,
        time_repeats=10,
        base_uid=BASE_UID,
        limits=dict(wall_s=6, cpu_s=5, memory_mb=4096, fsize_mb=16, disk_mb=64, output_kb=8192),
    )
    try:
        cases = {
            **{n: (n, PROBLEMS[n].solution) for n in SAMPLE},
            **{n: ("relu 16x100 f32", text) for n, (_, text) in HACKS.items()},
            **{f"corrupted/{n}": case for n, case in CORRUPTED.items()},
        }
        rows = [
            {"source": PROBLEMS[p].source, "preamble": IMPORTS, "plan": PROBLEMS[p].plan} for p, _ in cases.values()
        ]
        verdicts = dict(zip(cases, reward([text for _, text in cases.values()], rows), strict=True))
    finally:
        reward.close()
    # the candidates' two jails and the references' (uids BASE_UID + 0..2) live until close(); after it nothing of
    # theirs may be left (a jail's last processes die with its namespace: allow the kernel a moment)
    deadline = time.monotonic() + 10.0
    while (left := processes_of([BASE_UID, BASE_UID + 1, BASE_UID + 2])) and time.monotonic() < deadline:
        time.sleep(0.1)
    return verdicts, left


def test_sample_spans_every_family_shape_and_dtype():
    picked = [PROBLEMS[n] for n in SAMPLE]
    assert {p.family for p in picked} == {"unary", "binary", "row", "fused"}
    assert {p.shape for p in picked} == {p.shape for p in PROBLEMS.values()}
    assert {p.dtype for p in picked} == {"float32", "float16", "bfloat16"}


@pytest.mark.parametrize("name", SAMPLE)
def test_reference_answer_scores_full_marks(outcome, name):
    verdict = outcome[0][name]
    assert verdict.status == Status.PASS, verdict.details
    assert verdict.reward == 1.5  # correct + plan_weight * plan
    assert verdict.components == {"valid": 1.0, "compiled": 1.0, "correct": 1.0, "fast_1": 0.0, "plan": 1.0}
    assert verdict.details["speedup"].startswith("unavailable")


@pytest.mark.parametrize("name", list(HACKS))
def test_hack_earns_no_correctness_with_its_label(outcome, name):
    verdicts, left = outcome
    verdict = verdicts[name]
    assert verdict.status == HACKS[name][0], verdict.details
    assert verdict.components.get("correct", 0.0) == 0.0
    assert verdict.reward == 0.0 and verdict.components["plan"] == 0.0  # no plan term without a PASS
    assert left == []


def test_every_corruption_kind_is_exercised():
    assert {case.split("/")[0] for case in CORRUPTED} == set(CORRUPTIONS)


@pytest.mark.parametrize("case", list(CORRUPTED))
def test_warm_start_corruption_costs_its_part(outcome, case):
    verdict = outcome[0][f"corrupted/{case}"]
    kind = case.split("/")[0]
    if kind in PLAN_ONLY:  # the code still passes; the plan earns nothing
        assert verdict.status == Status.PASS and verdict.components["plan"] == 0.0 and verdict.reward == 1.0
    else:
        assert verdict.status in (Status.FAIL, Status.VIOLATION, Status.CRASH), verdict.details
        assert verdict.components["correct"] == 0.0
        assert verdict.components["plan"] == 0.0 and verdict.reward == 0.0  # the plan is paid to a PASS only
