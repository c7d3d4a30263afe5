"""KernelBench level 2: an answer keeps the reference's layer (a convolution) and fuses what follows it in a
Triton kernel. That answer is comparable only if ModelNew's layer starts with Model's weights, which KernelBench's
evaluator arranges by seeding torch before building each model (src/kernelbench/eval.py: set_seed(seed) before
Model(*init_inputs) and again before ModelNew(*init_inputs)). Checked here on reward=triton's own harness
(rlx.rewards.triton.harness, which builds both models in its sandbox): the same weights as each other and as
KernelBench's sequence gives; and, where reward=triton has the `torch_in_forward` key (the triton helper's), the
honest answer gets full credit on the level-2 problem file under the policy level 2 implies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from rlx.data.kernelbench.shrink import fit
from rlx.data.kernelbench.task import ScoredProblem
from rlx.rewards.triton import harness
from rlx.rewards.triton.reward import INIT_SEED
from tests.conftest import output, run_cli

PROBLEM = Path(__file__).parent / "kernelbench" / "level2" / "1_Conv2d_Sigmoid_Scale_Shift.py"

# keeps nn.Conv2d (built as Model builds it, so it draws the same weights) and fuses sigmoid, scale and the
# per-channel shift into one kernel
ANSWER = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sigmoid_scale_shift_kernel(x_ptr, shift_ptr, out_ptr, n_elements, plane, channels, scale,
                               BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    shift = tl.load(shift_ptr + (offsets // plane) % channels, mask=mask)
    tl.store(out_ptr + offsets, scale / (1.0 + tl.exp(-x)) + shift, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scale, shift_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale = scale
        self.shift = nn.Parameter(torch.randn(shift_shape) * 0.1)

    def forward(self, x):
        x = self.conv(x).contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        grid = (triton.cdiv(n_elements, 1024),)
        sigmoid_scale_shift_kernel[grid](
            x, self.shift, out, n_elements, x.shape[2] * x.shape[3], x.shape[1], self.scale, BLOCK_SIZE=1024
        )
        return out
"""
# the same layers built in another order: the shift draws from the generator first, so the weights differ
REORDERED = ANSWER.replace(
    "        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)\n        self.scale = scale\n"
    "        self.shift = nn.Parameter(torch.randn(shift_shape) * 0.1)\n",
    "        self.shift = nn.Parameter(torch.randn(shift_shape) * 0.1)\n"
    "        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)\n        self.scale = scale\n",
)


@pytest.fixture(autouse=True)
def interpreted(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # as in the sandbox: @triton.jit of exec'd source (no file)


def built(program: str, task: str | None) -> torch.nn.Module:
    """The model reward=triton's harness builds: the reference (task None) or the candidate."""
    state: dict = {}
    mode = "reference" if task is None else "candidate"
    reply = harness._load(program, {"mode": mode, "task": task, "init_seed": INIT_SEED, "device": "cpu"}, state)
    assert reply == {"ok": True}, reply
    return state["model"]


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


@pytest.fixture(scope="module")
def source() -> str:
    return fit(PROBLEM.read_text(), 262144, 8).source  # shrunk, sized by its inputs (no child process)


def test_model_and_model_new_start_from_the_same_weights(source):
    reference, candidate = weights(built(source, None)), weights(built(ANSWER, source))
    assert reference.keys() == candidate.keys() == {"conv.weight", "conv.bias", "shift"}
    assert all(torch.equal(reference[k], candidate[k]) for k in reference)
    # ... and from the weights KernelBench's evaluator gives: seed, get_init_inputs(), seed, Model(*init_inputs)
    namespace: dict = {}
    exec(compile(source, "<task>", "exec"), namespace)
    torch.manual_seed(INIT_SEED)
    init_inputs = namespace["get_init_inputs"]()
    torch.manual_seed(INIT_SEED)
    kernelbench = weights(namespace["Model"](*init_inputs))
    assert all(torch.equal(reference[k], kernelbench[k]) for k in reference)


def test_the_comparison_can_fail_layers_built_in_another_order_draw_other_weights(source):
    reference, reordered = weights(built(source, None)), weights(built(REORDERED, source))
    assert not torch.equal(reference["conv.weight"], reordered["conv.weight"])


def test_with_the_same_weights_the_answer_computes_the_reference(source):
    """The answer's kernel, run here by Triton's interpreter: KernelBench's fp32 tolerance (1e-4) holds with the
    seeded weights and fails with the reordered ones."""
    namespace: dict = {}
    exec(compile(source, "<task>", "exec"), namespace)
    torch.manual_seed(1)
    (x,) = namespace["get_inputs"]()
    with torch.no_grad():
        expected = built(source, None)(x)
        assert torch.allclose(built(ANSWER, source)(x), expected, atol=1e-4, rtol=1e-4)
        assert not torch.allclose(built(REORDERED, source)(x), expected, atol=1e-4, rtol=1e-4)


@pytest.mark.slow  # sizing on the meta device: a child process that imports torch
def test_level_2_implies_reference_layers():
    problem = ScoredProblem.read(PROBLEM, 393216, 8)  # as rlx.score reads task=<this file>
    assert problem.level == 2 and problem.torch_in_forward == "reference_layers"
    assert problem.describe()["sizes"]["batch_size"] == [64, 16]


def has_policy_key() -> bool:
    from tests.conftest import compose_config

    return "torch_in_forward" in compose_config(["reward=triton"]).reward


@pytest.mark.slow
@pytest.mark.parametrize("policy", [["reward.torch_in_forward=reference_layers"], []], ids=["explicit", "implied"])
def test_the_honest_level_2_answer_gets_full_credit(tmp_path, test_cache, policy):
    if not has_policy_key():
        pytest.skip(
            "reward.torch_in_forward is not on this branch yet (the triton helper's key): until it lands, "
            "reward=triton refuses any layer built in __init__ and any torch call in forward"
        )
    answer = tmp_path / "answer.py"
    answer.write_text(ANSWER)
    argv = ["-m", "rlx.score", "reward=triton", f"task={PROBLEM}", f"completion={answer}", "reward.seed=0", *policy]
    proc = run_cli(argv, tmp_path, test_cache)
    assert proc.returncode == 0, output(proc)
    verdict = json.loads(proc.stdout)
    assert verdict["task"]["torch_in_forward"] == "reference_layers"  # level 2's (the file is in level2/)
    assert verdict["status"] == "PASS" and verdict["reward"] == 1.0, verdict
