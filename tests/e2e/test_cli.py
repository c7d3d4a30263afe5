"""The CLI end to end on the embedded default, shrunk to seconds: outputs, export, resume (bad inputs:
test_errors.py)."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
import torch

from tests import conftest as harness
from tests.conftest import FAST_MODEL, REPO

pytestmark = pytest.mark.slow

SHORT = [
    "trainer.max_steps=4",
    "trainer.val_check_interval=2",
    "algo.prompts_per_step=4",
    "algo.group_size=4",
    "data.val_size=16",
    "checkpoint.every_n_steps=2",
    "samples_every=2",
]


def run_cli(args: list[str], run_dir: Path, cache: Path, check: bool = True) -> subprocess.CompletedProcess:
    return harness.run_cli(["-m", "rlx", f"hydra.run.dir={run_dir}", *args], REPO, cache, check=check)


def test_cli_runs_grpo_and_writes_every_output(tmp_path, test_cache):
    run = tmp_path / "run"
    proc = run_cli([*FAST_MODEL, *SHORT], run, test_cache)
    assert "held-out accuracy:" in proc.stdout and str(run) in proc.stdout
    summary = json.loads((run / "summary.json").read_text())
    assert set(summary) >= {"before", "after", "wall_s"}
    assert 0.0 <= summary["before"]["val/accuracy"] <= 1.0 and 0.0 <= summary["after"]["val/accuracy"] <= 1.0
    assert summary["steps"] == 4
    assert {"reward/mean", "loss/policy", "rollout/length_mean"} <= set(summary["train"])
    with (run / "metrics.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    columns = set(rows[0])
    for key in (
        "reward/mean",
        "reward/zero_std_frac",
        "loss/policy",
        "loss/kl",
        "loss/clipfrac",
        "loss/approx_kl",
        "adv/mean",
        "adv/std",
        "rollout/length_mean",
        "val/accuracy",
    ):
        assert key in columns, key
    steps_logged = {r["step"] for r in rows if r["reward/mean"]}
    assert len(steps_logged) == 4
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert samples and {"step", "prompt", "completion", "reference", "reward", "status"} <= set(samples[0])
    for step in {s["step"] for s in samples}:  # each step's samples come from several prompts, with the answer
        rows = [s for s in samples if s["step"] == step]
        assert len({s["prompt"] for s in rows}) == len(rows) == 4, rows
        assert all(
            str(int(s["prompt"][:-1].split("+")[0]) + int(s["prompt"][:-1].split("+")[1])) == s["reference"]["answer"]
            for s in rows
        )
    assert (run / "checkpoints" / "last.ckpt").is_file()

    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(run / "policy")
    tokenizer = AutoTokenizer.from_pretrained(run / "policy")
    assert model.num_parameters() > 0 and tokenizer.decode(tokenizer("12+34=")["input_ids"]) == "12+34="

    # the exported policy loads back through model=hf: the same code path a GPU user takes
    hf_run = tmp_path / "hf"
    run_cli(
        [
            "model=hf",
            f"model.name_or_path={run / 'policy'}",
            "trainer.max_steps=1",
            *[a for a in SHORT if not a.startswith("trainer.max_steps")],
        ],
        hf_run,
        test_cache,
    )
    assert json.loads((hf_run / "summary.json").read_text())["steps"] == 1

    # resume from the checkpoint: continues at step 4 and stops at 6 (not restarting at 0)
    resumed = tmp_path / "resumed"
    run_cli(
        [
            *FAST_MODEL,
            *[a for a in SHORT if not a.startswith("trainer.max_steps")],
            "trainer.max_steps=6",
            f"ckpt_path={run / 'checkpoints' / 'last.ckpt'}",
        ],
        resumed,
        test_cache,
    )
    summary2 = json.loads((resumed / "summary.json").read_text())
    assert summary2["steps"] == 6
    assert summary2["before"] == summary["before"]  # the starting policy's score travels with the checkpoint
    with (resumed / "metrics.csv").open() as handle:
        resumed_steps = sorted({int(r["step"]) for r in csv.DictReader(handle) if r["reward/mean"]})
    assert resumed_steps[0] >= 4, resumed_steps


def test_reference_model_only_exists_when_beta_is_positive(cfg_factory, test_cache):
    from rlx.train import build

    fast = [*FAST_MODEL, f"model.cache_dir={test_cache}"]
    without, _ = build(cfg_factory("algo.beta=0", *fast))
    assert without.reference is None
    with_ref, _ = build(cfg_factory("algo.beta=0.04", *fast))
    assert with_ref.reference is not None
    with with_ref.reference.forward_model() as ref:  # the FrozenReference holder: eval mode, no autograd
        assert not ref.training and not torch.is_grad_enabled()
    assert not any(k.startswith("reference") for k in with_ref.state_dict())  # checkpoints stay policy-sized


# heavy (outside CI's 30-minute budget; plain `pytest` runs it): the unit-test reward trains in CI through
# tests/e2e/test_score.py
@pytest.mark.heavy
def test_cli_unit_tests_reward_logs_validity_and_correctness(tmp_path, test_cache):
    run = tmp_path / "programs"
    run_cli(
        [
            "reward=unit_tests",
            *FAST_MODEL,
            "trainer.max_steps=2",
            "trainer.val_check_interval=2",
            "algo.prompts_per_step=4",
            "algo.group_size=4",
            "data.val_size=16",
        ],
        run,
        test_cache,
    )
    with (run / "metrics.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("reward/mean")]
    assert len(rows) == 2
    for key in ("reward/pass_frac", "reward/valid", "reward/correct"):
        assert all(0.0 <= float(r[key]) <= 1.0 for r in rows), key
    assert all(float(r["reward/correct"]) <= float(r["reward/valid"]) for r in rows)
    assert 0.0 <= json.loads((run / "summary.json").read_text())["after"]["val/accuracy"] <= 1.0


# heavy (outside CI's 30-minute budget; plain `pytest` runs it): the triton reward is scored in CI by
# tests/rewards/test_triton_*
@pytest.mark.heavy
def test_cli_triton_reward_logs_validity_and_correctness(tmp_path, test_cache):
    # The tiny model after a 40-step warm start writes mostly garbage: the point is the whole path (compact
    # warm-start corpus, sandboxed kernels under TRITON_INTERPRET, components logged), not the numbers.
    run = tmp_path / "kernels"
    run_cli(
        [
            "reward=triton",
            *FAST_MODEL,
            "model.warm_start.batch_size=4",
            "data.val_size=4",
            "trainer.max_steps=2",
            "trainer.val_check_interval=2",
            "algo.prompts_per_step=2",
            "algo.group_size=4",
            # the recipe samples 8 completions per held-out row (val/pass@1); one keeps that path and drops
            # most of the test's decoding (the 40-step warm start's garbage runs to max_new_tokens)
            "val_samples=1",
        ],
        run,
        test_cache,
    )
    with (run / "metrics.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("reward/mean")]
    assert len(rows) == 2
    for key in (
        "reward/valid",
        "reward/compiled",
        "reward/correct",
        "reward/fast_1",
        "reward/plan",
        "reward/infra_frac",
    ):
        assert all(0.0 <= float(r[key]) <= 1.0 for r in rows), key
    assert all(float(r["reward/correct"]) <= float(r["reward/valid"]) for r in rows)
    assert all(float(r["reward/infra_frac"]) == 0.0 for r in rows)  # the sandbox itself never broke
    summary = json.loads((run / "summary.json").read_text())
    assert 0.0 <= summary["after"]["val/accuracy"] <= 1.0 and 0.0 <= summary["after"]["val/pass@1"] <= 1.0
    config = (run / "config.yaml").read_text()  # reward=triton brought data=kernels and its warm-start preset
    assert "rlx.data.kernels.task.KernelTask" in config and "prompt_style: name" in config
    assert "batch_size: 4" in config and "lr: 0.002" in config
