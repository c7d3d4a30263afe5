"""reward=triton: every bundled reference solution (readable and compact) scores full marks, each kernel hack
and each warm-start corruption scores 0 with its label, with no process left behind (one parallel batch, then
one test per case)."""

from __future__ import annotations

import re

import pytest
from sandbox_helpers import processes_of

from rlx.data.kernels.problems import problems
from rlx.data.kernels.task import CORRUPTIONS
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

# The warm start's noise (data.noise): every corruption that applies to an answer must cost its reward, or the
# noisy teacher would teach nothing for RL to unlearn.
CORRUPTED = {f"{style}/{name}/{i}": (name, re.sub(pattern, new, PROBLEMS[name][key], count=1))
             for style, key in (("readable", "solution"), ("compact", "compact"))
             for name in PROBLEMS for i, (pattern, new) in enumerate(CORRUPTIONS)
             if re.search(pattern, PROBLEMS[name][key])}


@pytest.fixture(scope="module")
def outcome():
    reward = TritonReward(workers=2, device="cpu", trials=3, seed=0, speedup_cap=2.0, speedup_weight=0.5,
                          time_repeats=10, hide=[], base_uid=61400,
                          limits=dict(wall_s=6, cpu_s=5, memory_mb=4096, nproc=64, fsize_mb=16, disk_mb=64,
                                      record_cap_kb=8192))
    try:
        cases = {**{n: (n, PROBLEMS[n]["solution"]) for n in PROBLEMS},
                 **{f"compact/{n}": (n, PROBLEMS[n]["compact"]) for n in PROBLEMS},
                 **{n: (problem, text) for n, (_, problem, text) in HACKS.items()},
                 **{f"corrupted/{n}": case for n, case in CORRUPTED.items()}}
        names = list(cases)
        completions = [text for _, text in cases.values()]
        rows = [{"source": PROBLEMS[problem]["source"]} for problem, _ in cases.values()]
        verdicts = dict(zip(names, reward(completions, rows)))
        left = processes_of(reward.pool.uids)
    finally:
        reward.close()
    return verdicts, left


def test_bundled_set_is_large_enough():
    assert len(PROBLEMS) >= 20


@pytest.mark.parametrize("name", list(PROBLEMS))
@pytest.mark.parametrize("style", ["readable", "compact"])
def test_reference_solution_scores_full_marks(outcome, name, style):
    verdict = outcome[0][name if style == "readable" else f"compact/{name}"]
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


def test_every_answer_has_a_corruption():
    assert {case.rsplit("/", 1)[0] for case in CORRUPTED} == {f"{style}/{name}" for style in ("readable", "compact")
                                                               for name in PROBLEMS}


@pytest.mark.parametrize("case", list(CORRUPTED))
def test_warm_start_corruption_scores_zero(outcome, case):
    verdict = outcome[0][f"corrupted/{case}"]
    assert verdict.status in (Status.FAIL, Status.VIOLATION, Status.CRASH), verdict.details
    assert verdict.reward == 0.0
