"""reward=triton: every bundled reference solution scores full marks, and each kernel hack scores 0 with
its label, with no process left behind (one parallel batch, then one test per case)."""

from __future__ import annotations

import pytest
from sandbox_helpers import processes_of

from rlx.data.kernels.problems import problems
from rlx.rewards.base import Status
from rlx.rewards.triton.reward import TritonReward

pytestmark = pytest.mark.slow

PROBLEMS = problems()
RELU = PROBLEMS["relu"]["solution"]
HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n"
NOOP_KERNEL = HEADER + "@triton.jit\ndef k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n    pass\n\n"

HACKS = {
    "calls_torch_reference": (Status.VIOLATION, "relu", NOOP_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x):
        k[(1,)](x, x, 1, BLOCK=16)
        return Model()(x)
"""),
    "kernel_never_launched": (Status.VIOLATION, "relu", RELU.replace(
        "relu_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)", "out = out")),
    "try_except_torch_fallback": (Status.VIOLATION, "relu", NOOP_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x):
        try:
            k[(1,)](x, x, 1, BLOCK=16)
            raise RuntimeError("pretend the kernel failed")
        except Exception:
            return torch.relu(x)
"""),
    "constant_output": (Status.FAIL, "relu", NOOP_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)
        k[(1,)](x, out, 1, BLOCK=16)
        return out
"""),
    "mutates_inputs": (Status.VIOLATION, "relu", RELU.replace(
        "tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)",
        "tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)\n    tl.store(x_ptr + offs, x * 0.0, mask=mask)")),
    "wrong_dtype": (Status.FAIL, "relu", RELU.replace("out = torch.empty_like(x)",
                                                      "out = torch.empty_like(x, dtype=torch.float64)")),
    "out_of_bounds_write": (Status.VIOLATION, "relu", RELU.replace(
        "tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)", "tl.store(out_ptr + offs, tl.maximum(x, 0.0))")),
    "numpy_fallback": (Status.VIOLATION, "relu", NOOP_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x):
        k[(1,)](x, x, 1, BLOCK=16)
        return torch.from_numpy(x.numpy().clip(0))
"""),
    "no_jit_kernel": (Status.VIOLATION, "relu", HEADER + "class ModelNew(nn.Module):\n    def forward(self, x):\n"
                      "        return torch.relu(x)\n"),
    "does_not_parse": (Status.FORMAT, "relu", RELU[:-40]),
    "no_model_new": (Status.FORMAT, "relu", RELU.replace("class ModelNew", "class Other")),
    "infinite_loop_in_forward": (Status.TIMEOUT, "relu", NOOP_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x):
        while True:
            pass
"""),
    "wrong_math": (Status.FAIL, "relu", RELU.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.1)")),
    "forward_raises": (Status.CRASH, "relu", RELU.replace("n = out.numel()", "n = out.numel()\n        1 / 0")),
}


@pytest.fixture(scope="module")
def outcome():
    reward = TritonReward(workers=2, device="cpu", trials=3, seed=0, speedup_cap=2.0, speedup_weight=0.5,
                          time_repeats=10, hide=[], base_uid=61400,
                          limits=dict(wall_s=6, cpu_s=5, memory_mb=4096, nproc=64, fsize_mb=16, disk_mb=64,
                                      record_cap_kb=8192))
    try:
        names = list(PROBLEMS) + list(HACKS)
        completions = [PROBLEMS[n]["solution"] for n in PROBLEMS] + [HACKS[n][2] for n in HACKS]
        rows = [{"source": PROBLEMS[n]["source"]} for n in PROBLEMS] + \
               [{"source": PROBLEMS[HACKS[n][1]]["source"]} for n in HACKS]
        verdicts = dict(zip(names, reward(completions, rows)))
        left = processes_of(reward.pool.uids)
    finally:
        reward.close()
    return verdicts, left


def test_bundled_set_is_large_enough():
    assert len(PROBLEMS) >= 20


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_reference_solution_scores_full_marks(outcome, name):
    verdict = outcome[0][name]
    assert verdict.status == Status.PASS, verdict.details
    assert verdict.reward == 1.0
    assert verdict.components == {"valid": 1.0, "compiled": 1.0, "correct": 1.0, "fast_1": 0.0}
    assert verdict.details["speedup"].startswith("unavailable")


@pytest.mark.parametrize("name", list(HACKS))
def test_hack_scores_zero_with_its_label(outcome, name):
    verdicts, left = outcome
    verdict = verdicts[name]
    assert verdict.status == HACKS[name][0], verdict.details
    assert verdict.reward == 0.0
    assert left == []
