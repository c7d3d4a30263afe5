"""reward=triton's speed path without a GPU: the harness's timing branch with a fake clock in place of
`_time_cuda` (the one function that needs CUDA), and the speedup component from timing records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rlx.data.kernels.generator import IMPORTS, generate
from rlx.rewards.base import Status
from rlx.rewards.triton.tensors import encode_tensor, to_torch
from rlx.rewards.triton.verdict import decide

REPO = Path(__file__).resolve().parents[2]
CHECKS = {"parses": True, "defines_model_new": True, "defines_jit_kernel": True}
OUTPUT = encode_tensor(torch.arange(6, dtype=torch.float32).view(2, 3))


def result(timing: dict | None, trial: dict | None = None) -> dict:
    """A session's replies: three trials (read as the candidate's and as the reference's: the fields of both
    records), the given timing, and the reference's timing draw (its output: OUTPUT)."""
    record = {
        "output": OUTPUT,
        "inputs": [{"tensor": OUTPUT}],
        "launch_count": 1,
        "launches": [{"kernel": "k", "ints": {"B": 4}}],
        "refused": [],
        "canaries_ok": True,
        "inputs_unchanged": True,
        "output_from_kernel": True,
        **(trial or {}),
    }
    return {"trials": [{"trial": t, **record} for t in range(3)], "timing": timing, "timed": {"trial": 3, **record}}


def timed(ms: float, refused: list | None = None, outputs: list | None = None) -> dict:
    """A timing record; by default its three checked outputs are right (OUTPUT, the timing draw's)."""
    return {
        "event": "timing",
        "ms": ms,
        "refused": refused or [],
        "outputs": [OUTPUT] * 3 if outputs is None else outputs,
    }


@pytest.mark.parametrize(
    ("candidate_ms", "refused", "reward", "fast_1"),
    [
        (0.8, [], 1.0 + 0.5 * 2.0, 1.0),  # 2 ms / 0.8 ms = 2.5x, capped at 2
        (1.6, [], 1.0 + 0.5 * 1.25, 1.0),  # 1.25x
        (4.0, [], 1.0 + 0.5 * 0.5, 0.0),  # slower than torch: some speed credit, not fast_1
        (0.1, ["relu"], 1.0, 0.0),  # fell back to torch while timed: no speed at all
    ],
)
def test_speedup_component_from_timing_records(candidate_ms, refused, reward, fast_1):
    verdict = decide(
        CHECKS,
        result(timed(candidate_ms, refused)),
        result({"event": "timing", "ms": 2.0, "refused": []}),
        speedup_cap=2.0,
        speedup_weight=0.5,
    )
    assert verdict.status == Status.PASS
    assert verdict.reward == pytest.approx(reward) and verdict.components["fast_1"] == fast_1


def test_a_wrong_output_while_timed_is_as_wrong_as_a_wrong_trial():
    """The checked timed forwards got the reference's timing draw; one output there that is not the reference's
    (a kept output copied out by a kernel) fails the verdict, however fast the forward was."""
    wrong = encode_tensor(torch.zeros(2, 3))
    verdict = decide(CHECKS, result(timed(0.1, outputs=[OUTPUT, wrong, OUTPUT])), result(timed(2.0)), 2.0, 0.5)
    assert verdict.status == Status.FAIL and verdict.reward == 0.0 and verdict.components["fast_1"] == 0.0
    assert verdict.details["mismatch"][0].startswith("timed forward:"), verdict.details


@pytest.mark.parametrize(
    ("candidate", "reference", "why"),
    [
        (timed(0.5, outputs=[]), result(timed(2.0)), "no timed output was checked"),
        (timed(0.5), {**result(timed(2.0)), "timed": None}, "the reference made no timing draw"),
        (timed(0.5, outputs=[{"dtype": "float32"}]), result(timed(2.0)), "timed forward:"),
    ],
)
def test_speed_is_earned_only_by_checked_timed_outputs(candidate, reference, why):
    verdict = decide(CHECKS, result(candidate), reference, speedup_cap=2.0, speedup_weight=0.5)
    if why.startswith("timed forward"):  # a malformed output is a wrong one
        assert verdict.status == Status.FAIL and verdict.reward == 0.0
        assert verdict.details["mismatch"][0].startswith(why)
    else:
        assert verdict.status == Status.PASS and verdict.reward == 1.0 and verdict.components["fast_1"] == 0.0
        assert verdict.details["speedup"] == f"unavailable ({why})"


@pytest.mark.parametrize(
    "timing",
    [
        {"event": "timing", "error": "RuntimeError: broke while timed", "refused": []},
        {"event": "timing", "ms": float("nan"), "refused": []},
        {"event": "timing", "ms": True, "refused": []},
        {"event": "timing", "ms": 0.0, "refused": []},
    ],
)
def test_unusable_timings_mean_no_speed_never_a_crash(timing):
    for candidate, reference in (
        (timing, {"event": "timing", "ms": 2.0, "refused": []}),
        (timed(1.0), timing),
    ):
        verdict = decide(CHECKS, result(candidate), result(reference), speedup_cap=2.0, speedup_weight=0.5)
        assert verdict.status == Status.PASS and verdict.reward == 1.0
        assert verdict.details["speedup"].startswith("unavailable")


def test_no_speed_term_unless_correct():
    wrong = result(timed(0.1), trial={"output": encode_tensor(torch.zeros(2, 3))})
    verdict = decide(CHECKS, wrong, result({"event": "timing", "ms": 2.0, "refused": []}), 2.0, 0.5)
    assert verdict.status == Status.FAIL and verdict.reward == 0.0 and verdict.components["fast_1"] == 0.0


FAKE_CLOCK = """
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from rlx.rewards.triton import harness
calls = []
def fake_clock(call, repeats):  # stands in for CUDA events: runs the forward like _time_cuda, returns a time
    for _ in range(harness.WARMUP + repeats):
        calls.append(call())
    return 0.25
harness._time_cuda = fake_clock
program, requests = json.loads(sys.stdin.read())
replies = []
harness.serve(program, lambda: (requests.pop(0), []) if requests else None, lambda m, blobs=(): replies.append(m))
print(json.dumps({"replies": replies, "calls": len(calls)}))
"""


def relu_input(seed: int) -> torch.Tensor:
    return torch.randn(4, 128, generator=torch.Generator().manual_seed(seed))


def run_harness(tmp_path, candidate: str) -> dict:
    """The harness's serve loop fed a load, two forwards and a timing request of four forwards whose checked
    ones get the timing draw (seed 2), as TritonReward sends them on a GPU (a list, not a sandbox)."""
    problem = generate([(4, 128)], ["float32"], ["relu"], [], [], fused=False)[0]  # relu, one program per row
    inputs = [[{"tensor": encode_tensor(relu_input(t))}] for t in (0, 1)]
    draw = [{"tensor": encode_tensor(relu_input(2))}]
    requests = [
        {"op": "load", "mode": "candidate", "task": problem.source, "init_seed": 0, "device": "cpu"},
        *({"op": "forward", "trial": t, "inputs": inputs[t]} for t in (0, 1)),
        {"op": "time", "inputs": inputs[0], "check": draw, "repeats": 4},
    ]
    out = subprocess.run(
        [sys.executable, "-c", FAKE_CLOCK],
        input=json.dumps([IMPORTS + candidate, requests]),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


SOLUTION = generate([(4, 128)], ["float32"], ["relu"], [], [], fused=False)[0].solution


def test_harness_times_the_candidate_under_its_allow_list(tmp_path):
    clean = run_harness(tmp_path, SOLUTION)
    assert clean["replies"][0] == {"ok": True}
    assert [r["trial"] for r in clean["replies"][1:3]] == [0, 1] and clean["replies"][1]["launch_count"] == 1
    timing = clean["replies"][3]
    assert {k: timing[k] for k in ("event", "ms", "refused")} == {"event": "timing", "ms": 0.25, "refused": []}
    assert clean["calls"] == 3 + 4  # warm-up and timed forwards
    # three of the four timed forwards got the timing draw; their outputs are its ReLU
    assert len(timing["outputs"]) == 3
    for output in timing["outputs"]:
        assert torch.equal(to_torch(output), torch.relu(relu_input(2)))
    # a forward that launches its kernel while checked (2 trials) and falls back to torch once timed
    sneaky = SOLUTION.replace(
        " def forward(self,x):\n",
        " calls=0\n def forward(self,x):\n  ModelNew.calls+=1\n  if ModelNew.calls>2: return torch.relu(x)\n",
    )
    timed = run_harness(tmp_path, sneaky)["replies"][3]
    # refused, recorded with where it ran, reported as no timing
    assert len(timed["refused"]) == 1 and timed["refused"][0].startswith("aten.relu") and "error" in timed


# A forward that keeps its last trial's output and, past the trials, has a kernel copy it into a new output: the
# output is written by a kernel the forward launched, and the copy costs less than the computation it skips.
KEPT_COPY = (
    SOLUTION.replace(
        "class ModelNew(nn.Module):\n",
        """@triton.jit
def copy_k(src,o,n,B:tl.constexpr):
 r=tl.program_id(0)
 c=tl.arange(0,B)
 tl.store(o+r*n+c,tl.load(src+r*n+c))
class ModelNew(nn.Module):
 def __init__(self):
  super().__init__()
  self.calls,self.kept=0,None
""",
    )
    .replace(
        "  return y\n",
        """  if self.calls>=2:
   self.kept=y
  self.calls+=1
  return y
""",
    )
    .replace(
        "  y=torch.empty_like(x)\n",
        """  y=torch.empty_like(x)
  if self.kept is not None:
   copy_k[(x.shape[0],)](self.kept,y,x.shape[1],B=triton.next_power_of_2(x.shape[1]))
   return y
""",
    )
)


def test_a_kept_output_copied_by_a_kernel_while_timed_earns_nothing(tmp_path):
    assert "copy_k[" in KEPT_COPY and "self.kept=y" in KEPT_COPY  # the replacements took
    replies = run_harness(tmp_path, KEPT_COPY)["replies"]
    first = replies[1]
    assert first["launch_count"] == 1 and torch.equal(to_torch(first["output"]), torch.relu(relu_input(0)))
    timing = replies[3]
    assert "ms" in timing and len(timing["outputs"]) == 3, timing  # timed without an error: it launched a kernel
    reference = result({"event": "timing", "ms": 2.0, "refused": []})
    reference["timed"] = {**reference["timed"], "output": encode_tensor(torch.relu(relu_input(2)))}
    candidate = {"trials": [{**t, "output": encode_tensor(torch.relu(relu_input(0)))} for t in result(None)["trials"]]}
    reference["trials"] = candidate["trials"]
    verdict = decide(CHECKS, {**candidate, "timing": timing}, reference, speedup_cap=2.0, speedup_weight=0.5)
    assert verdict.status == Status.FAIL and verdict.reward == 0.0, verdict.details
    assert verdict.details["mismatch"][0].startswith("timed forward:")
    honest = run_harness(tmp_path, SOLUTION)["replies"][3]
    verdict = decide(CHECKS, {**candidate, "timing": honest}, reference, speedup_cap=2.0, speedup_weight=0.5)
    assert verdict.status == Status.PASS and verdict.reward == pytest.approx(1.0 + 0.5 * 2.0), verdict.details


# An honest forward that writes every output into one buffer it keeps (allocated once, as CUDA-graph style code
# does): each checked output is copied as its forward returns, before a later forward overwrites the buffer.
KEPT_BUFFER = SOLUTION.replace("class ModelNew(nn.Module):\n", "class ModelNew(nn.Module):\n buffer=None\n").replace(
    "  y=torch.empty_like(x)\n",
    "  if ModelNew.buffer is None:\n   ModelNew.buffer=torch.empty_like(x)\n  y=ModelNew.buffer\n",
)


def test_a_reused_output_buffer_is_checked_as_each_forward_left_it(tmp_path):
    assert "ModelNew.buffer=torch.empty_like(x)" in KEPT_BUFFER  # the replacements took
    timing = run_harness(tmp_path, KEPT_BUFFER)["replies"][3]
    assert "ms" in timing and len(timing["outputs"]) == 3, timing
    for output in timing["outputs"]:
        assert torch.equal(to_torch(output), torch.relu(relu_input(2)))
