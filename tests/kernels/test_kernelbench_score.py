"""`python -m rlx.score reward=triton task=<problem.py> completion=<file>` scores a completion against a
KernelBench problem file as published: an honest Triton answer gets full credit, a cheat 0, on a CPU at the
shrunk sizes the verdict names; arguments that cannot work are one line naming the argument and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlx.errors import ConfigError
from rlx.score import main
from tests.conftest import output, run_cli

PROBLEM = Path(__file__).parent / "kernelbench" / "level1" / "1_Softsign_activation.py"

HONEST = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softsign_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x / (1.0 + tl.abs(x)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        grid = (triton.cdiv(n_elements, 4096),)
        softsign_kernel[grid](x, out, n_elements, BLOCK_SIZE=4096)
        return out
"""
# launches a kernel that stores (so it looks like an answer), then lets torch compute the result
CHEAT = HONEST.replace("        return out\n", "        return x / (1 + x.abs())\n")


@pytest.mark.slow
@pytest.mark.parametrize(("completion", "status", "reward"), [(HONEST, "PASS", 1.0), (CHEAT, "VIOLATION", 0.0)])
def test_a_problem_file_as_published(tmp_path, test_cache, completion, status, reward):
    answer = tmp_path / "answer.py"
    answer.write_text(completion)
    argv = ["-m", "rlx.score", "reward=triton", f"task={PROBLEM}", f"completion={answer}", "reward.seed=0"]
    proc = run_cli(argv, tmp_path, test_cache)
    assert proc.returncode == 0, output(proc)
    verdict = json.loads(proc.stdout)
    assert (verdict["status"], verdict["reward"]) == (status, reward), verdict
    # scored at the sizes a CPU run of data=kernelbench uses: 2048 x 262144 scaled by 1/64
    assert verdict["task"] == {
        "file": str(PROBLEM),
        "level": 1,
        "torch_in_forward": "kernels_only",
        "sizes": {"batch_size": [2048, 32], "features": [262144, 4096]},
    }
    if status == "VIOLATION":  # refused for its torch compute: by its words, or by what ran in forward
        checks = verdict["details"]["checks"]
        assert checks.get("vocabulary") is False or checks.get("no_fallback") is False, verdict


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["reward=math"], "is a KernelBench problem file: score it with reward=triton (got reward=math)"),
        (["reward=triton", "cpu_max_elements=lots"], "cpu_max_elements must be an integer >= 1 (got 'lots')"),
        (["reward=triton", "cpu_min_size=0"], "cpu_min_size must be an integer >= 1 (got 0)"),
    ],
)
def test_arguments_that_cannot_work_name_the_fix(tmp_path, argv, expected):
    answer = tmp_path / "answer.py"
    answer.write_text(HONEST)
    with pytest.raises(ConfigError) as err:
        main([*argv, f"task={PROBLEM}", f"completion={answer}"])
    assert expected in str(err.value)


def test_a_python_file_that_is_not_a_problem(tmp_path):
    task, answer = tmp_path / "helpers.py", tmp_path / "answer.py"
    task.write_text("def helper():\n    return 1\n")
    answer.write_text(HONEST)
    with pytest.raises(ConfigError) as err:
        main(["reward=triton", f"task={task}", f"completion={answer}"])
    assert str(err.value).startswith(f"task={task}: helpers.py is not a KernelBench problem: it defines no `Model`")


def test_the_shrink_arguments_belong_to_a_problem_file(tmp_path):
    task, answer = tmp_path / "row.json", tmp_path / "answer.py"
    task.write_text(json.dumps({"source": PROBLEM.read_text()}))
    answer.write_text(HONEST)
    with pytest.raises(ConfigError, match=r"cpu_max_elements shrink a KernelBench problem file \(task=\*\.py\)"):
        main(["reward=triton", f"task={task}", f"completion={answer}", "cpu_max_elements=1000"])
