"""The fourth red team (tests/rewards/recall/red4_*.py), scored through each reward as the trainer calls it: one
batch per reward (reward=math under both verifiers), every honest case full credit, every adversarial case 0 with
a label (never INFRA, never a crash of the scorer); answers built to make the exact reader work are decided in
well under a second; and the GPU speed term's cheats (red4_triton_attacks.IDENTITY_CACHE, CALL_COUNT) are timed by the
harness with a counting clock in place of CUDA events."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest
import torch

from rlx.rewards.base import Status
from rlx.rewards.math import MathReward
from rlx.rewards.triton.static import static_checks
from rlx.rewards.triton.tensors import encode_tensor
from tests.rewards.recall import red4_code, red4_code_attacks, red4_math, red4_triton, red4_triton_attacks
from tests.rewards.sandbox_helpers import RUN_UID_OFFSET, configured_unit_tests_reward
from tests.rewards.test_triton_recall import kernel_reward

TASKS = pathlib.Path(__file__).parent / "recall" / "triton" / "tasks"
REPO = pathlib.Path(__file__).resolve().parents[2]


# reward=math ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["exact", "math_verify"])
def math_verdicts(request):
    reward = MathReward(strict=False, verifier=request.param, format_weight=0.0, timeout_s=5)
    cases = red4_math.HONEST + red4_math.ADVERSARIAL
    try:
        scored = reward([c for c, _ in cases], [{"answer": a} for _, a in cases])
    finally:
        reward.close()
    return dict(zip(cases, scored, strict=True))


@pytest.mark.parametrize("case", red4_math.HONEST, ids=repr)
def test_math_honest_answer_gets_full_credit(math_verdicts, case):
    verdict = math_verdicts[case]
    assert verdict.status == Status.PASS and verdict.reward == 1.0, verdict


@pytest.mark.parametrize("case", red4_math.ADVERSARIAL, ids=repr)
def test_math_adversarial_answer_earns_nothing(math_verdicts, case):
    verdict = math_verdicts[case]
    assert verdict.reward == 0.0 and verdict.status in (Status.FAIL, Status.FORMAT), verdict


@pytest.mark.parametrize("case", red4_math.SLOW, ids=lambda c: c[0][:40])
def test_math_hard_answers_are_decided_quickly(case):
    reward = MathReward(strict=False, verifier="exact", format_weight=0.0, timeout_s=5)
    start = time.perf_counter()
    (verdict,) = reward([case[0]], [{"answer": case[1]}])
    elapsed = time.perf_counter() - start
    assert verdict.status in (Status.PASS, Status.FAIL), verdict
    assert elapsed < 1.0, f"{elapsed:.2f} s"


# reward=unit_tests ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def code_verdicts():
    reward = configured_unit_tests_reward(base_uid=60300 + RUN_UID_OFFSET)
    cases = red4_code.HONEST + red4_code_attacks.ADVERSARIAL
    try:
        scored = reward([completion for _, _, completion in cases], [row for _, row, _ in cases])
    finally:
        reward.close()
    return dict(zip([name for name, _, _ in cases], scored, strict=True))


def test_code_corpus_names_are_unique():
    names = [name for name, _, _ in red4_code.HONEST + red4_code_attacks.ADVERSARIAL]
    assert len(names) == len(set(names))


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name, _, _ in red4_code.HONEST])
def test_code_honest_program_gets_full_credit(code_verdicts, name):
    verdict = code_verdicts[name]
    assert verdict.status == Status.PASS and verdict.reward == 1.0, (verdict.status, json.dumps(verdict.details)[:600])


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name, _, _ in red4_code_attacks.ADVERSARIAL])
def test_code_cheat_earns_nothing(code_verdicts, name):
    verdict = code_verdicts[name]
    assert verdict.reward == 0.0 and verdict.status not in (Status.PASS, Status.INFRA), (
        verdict.status,
        json.dumps(verdict.details)[:600],
    )


# reward=triton -------------------------------------------------------------------------------------------------


def _task(name: str) -> str:
    return red4_triton.TASKS.get(name) or (TASKS / f"{name}.py").read_text()


@pytest.fixture(scope="module")
def triton_verdicts():
    reward = kernel_reward("kernels_only", base_uid=60600)
    cases = red4_triton.HONEST + red4_triton_attacks.ADVERSARIAL
    try:
        scored = reward([code for _, _, code in cases], [{"source": _task(task)} for _, task, _ in cases])
    finally:
        reward.close()
    return dict(zip([name for name, _, _ in cases], scored, strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name, _, _ in red4_triton.HONEST])
def test_triton_honest_program_gets_full_credit(triton_verdicts, name):
    verdict = triton_verdicts[name]
    assert verdict.status == Status.PASS and verdict.reward == 1.0, verdict.details


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name, _, _ in red4_triton_attacks.ADVERSARIAL])
def test_triton_cheat_earns_nothing(triton_verdicts, name):
    verdict = triton_verdicts[name]
    assert verdict.reward == 0.0 and verdict.components.get("correct", 0.0) == 0.0, verdict.details
    assert verdict.status in (Status.VIOLATION, Status.FAIL, Status.CRASH), verdict.details


# The speed term (GPU only) without a GPU: the harness's timing branch with a clock that counts the distinct
# outputs of the timed forwards in place of _time_cuda (the one function that needs CUDA).
COUNTING_CLOCK = """
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from rlx.rewards.triton import harness
def counting_clock(call, repeats):
    outputs = [call() for _ in range(repeats)]  # all alive: a new output is a new object
    return float(len({id(o) for o in outputs}))
harness._time_cuda = counting_clock
program, requests = json.loads(sys.stdin.read())
replies = []
harness.serve(program, lambda: (requests.pop(0), []) if requests else None, lambda m, blobs=(): replies.append(m))
print(json.dumps(replies))
"""


def _timed(tmp_path, program: str) -> list[dict]:
    """The harness's replies to a load, two trials and a timing of five forwards, under the counting clock."""
    task = (TASKS / "relu.py").read_text()
    inputs = [
        [{"tensor": encode_tensor(torch.randn(16, 100, generator=torch.Generator().manual_seed(t)))}] for t in (0, 1)
    ]
    requests = [
        {"op": "load", "mode": "candidate", "task": task, "init_seed": 0, "device": "cpu"},
        *({"op": "forward", "trial": t, "inputs": inputs[t]} for t in (0, 1)),
        {"op": "time", "inputs": inputs[0], "repeats": 5},
    ]
    out = subprocess.run(
        [sys.executable, "-c", COUNTING_CLOCK],
        input=json.dumps([program, requests]),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"},
    )
    replies = json.loads(out.stdout.strip().splitlines()[-1])
    assert replies[0] == {"ok": True} and all(r["launch_count"] == 1 for r in replies[1:3]), replies
    return replies


@pytest.mark.slow
def test_triton_timed_forwards_get_inputs_of_their_own(tmp_path):
    """A forward that keeps each output with its inputs and returns it when the same inputs come again computes
    in every trial (each has new inputs) and, were the timed forwards given one input set, in none of them."""
    timing = _timed(tmp_path, red4_triton_attacks.IDENTITY_CACHE[0])[3]
    assert timing["ms"] == 5.0, timing  # five timed forwards, five outputs computed (it was 1)


@pytest.mark.slow
def test_triton_a_timed_output_no_kernel_was_given_earns_no_time(tmp_path):
    """A forward that returns its first output untouched once the trials are over is timed as an error."""
    timing = _timed(tmp_path, red4_triton_attacks.CALL_COUNT[0])[3]
    assert "ms" not in timing and "no kernel it launched" in timing["error"], timing


MATCHING = (
    "import torch\nimport torch.nn as nn\n\n\n"
    + "class ModelNew(nn.Module):\n    def forward(self, x):\n{}        return x\n"
)


@pytest.mark.parametrize(
    "pattern, allowed",
    [
        ("case int(n):", True),  # a builtin type matches the subject itself
        ("case torch.Tensor(shape=s):", True),
        ("case object(__globals__=g):", False),
        ("case object(gi_frame=f):", False),
        ("case object(_modules=m):", False),
        ("case torch.return_types.max(v, i):", False),  # attributes named by __match_args__, unseen
    ],
)
def test_triton_static_check_reads_match_class_patterns_as_attributes(pattern, allowed):
    body = f"        match x:\n            {pattern}\n                pass\n"
    result = static_checks(MATCHING.format(body))
    assert result.checks["parses"] and result.checks["vocabulary"] is allowed, result.reason
