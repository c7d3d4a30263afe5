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
from rlx.rewards.triton.reward import decide
from rlx.rewards.triton.tensors import encode_tensor

REPO = Path(__file__).resolve().parents[2]
CHECKS = {"parses": True, "defines_model_new": True, "defines_jit_kernel": True}
OUTPUT = encode_tensor(torch.arange(6, dtype=torch.float32).view(2, 3))


def result(timing: dict | None, trial: dict | None = None) -> dict:
    """A session's replies: three trials (read as the candidate's and as the reference's: the fields of both
    records), and the given timing."""
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
    return {"trials": [{"trial": t, **record} for t in range(3)], "timing": timing}


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
        result({"event": "timing", "ms": candidate_ms, "refused": refused}),
        result({"event": "timing", "ms": 2.0, "refused": []}),
        speedup_cap=2.0,
        speedup_weight=0.5,
    )
    assert verdict.status == Status.PASS
    assert verdict.reward == pytest.approx(reward) and verdict.components["fast_1"] == fast_1


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
        ({"event": "timing", "ms": 1.0, "refused": []}, timing),
    ):
        verdict = decide(CHECKS, result(candidate), result(reference), speedup_cap=2.0, speedup_weight=0.5)
        assert verdict.status == Status.PASS and verdict.reward == 1.0
        assert verdict.details["speedup"].startswith("unavailable")


def test_no_speed_term_unless_correct():
    wrong = result({"event": "timing", "ms": 0.1, "refused": []}, trial={"output": encode_tensor(torch.zeros(2, 3))})
    verdict = decide(CHECKS, wrong, result({"event": "timing", "ms": 2.0, "refused": []}), 2.0, 0.5)
    assert verdict.status == Status.FAIL and verdict.reward == 0.0 and verdict.components["fast_1"] == 0.0


FAKE_CLOCK = """
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from rlx.rewards.triton import harness
calls = []
def fake_clock(call, repeats):  # stands in for CUDA events: runs the forward like _time_cuda, returns a time
    for _ in range(repeats):
        calls.append(call())
    return 0.25
harness._time_cuda = fake_clock
program, requests = json.loads(sys.stdin.read())
replies = []
harness.serve(program, lambda: (requests.pop(0), []) if requests else None, lambda m, blobs=(): replies.append(m))
print(json.dumps({"replies": replies, "calls": len(calls)}))
"""


def run_harness(tmp_path, candidate: str) -> dict:
    """The harness's serve loop fed a load, two forwards and a timing request (a list, not a sandbox)."""
    problem = generate([(4, 128)], ["float32"], ["relu"], [], [], fused=False)[0]  # relu, one program per row
    inputs = [
        [{"tensor": encode_tensor(torch.randn(4, 128, generator=torch.Generator().manual_seed(t)))}] for t in (0, 1)
    ]
    requests = [
        {"op": "load", "mode": "candidate", "task": problem.source, "init_seed": 0, "device": "cpu"},
        *({"op": "forward", "trial": t, "inputs": inputs[t]} for t in (0, 1)),
        {"op": "time", "inputs": inputs[0], "repeats": 4},
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


def test_harness_times_the_candidate_under_its_allow_list(tmp_path):
    solution = generate([(4, 128)], ["float32"], ["relu"], [], [], fused=False)[0].solution
    clean = run_harness(tmp_path, solution)
    assert clean["replies"][0] == {"ok": True}
    assert [r["trial"] for r in clean["replies"][1:3]] == [0, 1] and clean["replies"][1]["launch_count"] == 1
    assert clean["replies"][3] == {"event": "timing", "ms": 0.25, "refused": []} and clean["calls"] == 4
    # a forward that launches its kernel while checked (2 trials) and falls back to torch once timed
    sneaky = solution.replace(
        " def forward(self,x):\n",
        " calls=0\n def forward(self,x):\n  ModelNew.calls+=1\n  if ModelNew.calls>2: return torch.relu(x)\n",
    )
    timed = run_harness(tmp_path, sneaky)["replies"][3]
    # refused, recorded with where it ran, reported as no timing
    assert len(timed["refused"]) == 1 and timed["refused"][0].startswith("aten.relu") and "error" in timed
