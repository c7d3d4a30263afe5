"""metrics.csv's columns are stable: the default run's header is pinned, every training column has a value at
every training step (no column that appears when a status, an outcome or a difficulty is first seen), and no
column duplicates another."""

from __future__ import annotations

import csv
import math

import pytest
import torch

from rlx.curriculum.uniform import UniformSampler
from rlx.rewards.base import Status
from rlx.step_log import length_by_outcome

# The shrunk default run's header (`python -m rlx` with tests/conftest.py's ONE_STEP and FAST_MODEL): a new or
# renamed metric changes it here, on purpose. Wall-clock columns are included; their values are not compared.
DEFAULT_HEADER = (
    "adv/mean,adv/std,curriculum/epoch,curriculum/groups,curriculum/pass_rate_d0,curriculum/pass_rate_d1,"
    "curriculum/rounds,epoch,loss/approx_kl,loss/approx_kl_k1,loss/clipfrac,loss/clipfrac_high,loss/clipfrac_low,"
    "loss/kl,loss/policy,optim/grad_norm,optim/lr,policy/entropy,reward/correct,reward/format,reward/infra_frac,"
    "reward/mean,reward/status_crash,reward/status_fail,reward/status_format,reward/status_infra,reward/status_oom,"
    "reward/status_pass,reward/status_timeout,reward/status_violation,reward/zero_std_frac,"
    "reward/zero_std_frac_batch,rollout/length_fail,rollout/length_mean,rollout/length_pass,rollout/rounds,"
    "rollout/seconds,rollout/staleness_max,rollout/staleness_mean,rollout/tok_per_s,rollout/truncated_frac,step,"
    "time/generate,time/prepare,time/score,time/step,time/steps_per_hour,time/tok_per_s,time/update,"
    "train/skipped_updates,train/trained_frac,val/accuracy,val/n,val/reward"
).split(",")


def test_both_outcome_lengths_are_logged_when_one_side_is_empty():
    lengths = torch.tensor([3, 5])
    out = length_by_outcome(lengths, [Status.PASS.value, Status.PASS.value], torch.tensor([True, True]))
    assert out["rollout/length_pass"] == 4.0  # (3 + 5) / 2
    assert math.isnan(out["rollout/length_fail"])  # no failed completion: a mean of nothing


def test_every_difficulty_has_its_column_before_it_is_drawn():
    sampler = UniformSampler(seed=0)
    sampler.bind([{"prompt": "a", "difficulty": 0}, {"prompt": "b", "difficulty": 2}])
    sampler.begin_step(0)
    metrics = sampler.metrics()
    assert math.isnan(metrics["curriculum/pass_rate_d0"]) and math.isnan(metrics["curriculum/pass_rate_d2"])
    sampler.observe([1], [[1.0, 0.0]])
    assert sampler.metrics()["curriculum/pass_rate_d2"] == 0.5  # (1 + 0) / 2


@pytest.mark.slow
def test_the_default_runs_header_is_pinned_and_every_training_row_is_full(artifacts):
    proc, expect = artifacts.default_run()  # shared with the other e2e tests: no extra run
    assert proc.returncode == 0
    with (expect["run"] / "metrics.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        header, rows = list(reader.fieldnames or []), list(reader)
    assert header == DEFAULT_HEADER
    statuses = {f"reward/status_{s.value.lower()}" for s in Status}
    assert statuses <= set(header), "every status has its column, 0 when no completion had it"
    training = [r for r in rows if r["reward/mean"]]
    assert training, "the run logged its RL step"
    columns = [c for c in header if not c.startswith("val/") and c not in ("step", "epoch")]
    empty = sorted({c for r in training for c in columns if r[c] == ""})
    assert not empty, f"training columns missing from a training row: {empty}"
    assert "loss/approx_kl_k3" not in header  # it was loss/approx_kl under a second name
