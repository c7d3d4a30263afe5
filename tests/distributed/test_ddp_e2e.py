"""The CLI with trainer=ddp on two CPU processes (gloo) against the same config on one process, a few steps on a
tiny task with a real learning signal.

What must hold exactly: one run directory written by rank 0 (summary.json with world_size 2, samples.jsonl rows
tagged with their rank), both ranks ending with bitwise equal weights, disjoint prompts per step across ranks,
the same global batch as one process (the same prompts every step), the held-out split evaluated once (val/n),
the same held-out score before training (the same weights, greedy decoding, prompts of equal length).
What holds only statistically: the learning. Two processes draw other completions than one (each rank samples
its share with its own stream, and a batch of 16 rows rounds differently in the last bits from one of 32), so
the runs diverge after the first update; they stay samples of the same process. The update itself is exact (two
ranks on the same rollouts equal one process to 1e-9: tests/distributed/test_ranks.py; the README's 250-step
runs agree within 0.015 in mean reward per 50 steps). Tolerance here: the mean reward over 3 steps × 32
completions of a 0/1 reward has per-completion sd ≤ 0.5, so the difference of the two runs' means has sd
≤ 0.5·sqrt(2/96) ≈ 0.07; 0.25 is 3.5 of those. It fails a run whose learning broke (a lost rank's gradient, a
doubled step would still pass; those are test_ranks.py's to catch), not one that sampled differently.
"""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import REPO, TINY_TASK, run_cli

pytestmark = pytest.mark.slow

# The harness's tiny task (a real learning signal), 8 prompts × 4 completions a step. Six steps: a signal sent
# once step 0's row is on disk has several steps left to stop the run in (one landing in the last step cannot).
STEPS = 6
RUN = [
    *TINY_TASK,
    "algo.prompts_per_step=8",
    "algo.group_size=4",
    "trainer.accelerator=cpu",
    f"trainer.max_steps={STEPS}",
    "trainer.val_check_interval=3",
    "samples_every=1",
    "samples_per_step=1000",
]
VAL = 9


def rlx(args: list[str], run_dir: Path, cache: Path) -> subprocess.CompletedProcess:
    return run_cli(["-m", "rlx", f"hydra.run.dir={run_dir}", *args], REPO, cache, check=True)


def metrics(run: Path) -> list[dict]:
    with (run / "metrics.csv").open() as handle:
        return list(csv.DictReader(handle))


def step_prompts(run: Path) -> dict[int, dict[int, list[str]]]:
    """{step: {rank: prompts of every completion that rank trained on}}"""
    out: dict[int, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for line in (run / "samples.jsonl").read_text().splitlines():
        row = json.loads(line)
        out[row["step"]][row["rank"]].append(row["prompt"])
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory, test_cache):
    root = tmp_path_factory.mktemp("ddp")
    rlx(RUN, root / "one", test_cache)  # first: builds the warm start, so the two ranks below only load it
    rlx(["trainer=ddp", *RUN], root / "two", test_cache)
    return root / "one", root / "two"


def test_two_ranks_write_one_run_directory(runs):
    _, two = runs
    summary = json.loads((two / "summary.json").read_text())
    assert summary["world_size"] == 2 and summary["steps"] == STEPS
    assert summary["before"]["val/n"] == summary["after"]["val/n"] == VAL  # the whole split (5 + 4 rows), once
    assert summary["weights_in_sync"] and len(set(summary["weights_fingerprint"])) == 1
    assert len(summary["weights_fingerprint"]) == 2
    assert json.loads((two / "status.json").read_text())["status"] == "completed"  # rank 0's, never overwritten
    assert (two / "policy" / "config.json").is_file()
    rows = metrics(two)
    assert max(float(r["optim/grad_norm"]) for r in rows if r.get("optim/grad_norm")) > 0  # the sync synced something
    assert [float(r["val/n"]) for r in rows if r.get("val/n")] == [
        VAL
    ] * 3  # before, at steps 3 and 6 (the last is `after`)


def test_each_step_splits_its_prompts_between_the_ranks(runs):
    _, two = runs
    prompts = step_prompts(two)
    assert sorted(prompts) == list(range(STEPS))
    for step, by_rank in prompts.items():
        assert sorted(by_rank) == [0, 1]
        assert len(by_rank[0]) == len(by_rank[1]) == 16  # 4 prompts × 4 completions each
        assert not set(by_rank[0]) & set(by_rank[1]), step  # a prompt (a group) never spans ranks


def test_two_ranks_train_on_the_global_batch_of_one_process(runs):
    one, two = runs
    single, double = step_prompts(one), step_prompts(two)
    for step in single:
        assert sorted(single[step][0]) == sorted(double[step][0] + double[step][1])
    s1, s2 = (json.loads((run / "summary.json").read_text()) for run in runs)
    assert s1["world_size"] == 1
    # the same starting weights, evaluated greedily on the same rows: the same held-out score
    assert s2["before"] == s1["before"]


def test_two_ranks_learn_like_one_process(runs):
    rewards = [[float(r["reward/mean"]) for r in metrics(run) if r.get("reward/mean")] for run in runs]
    assert len(rewards[0]) == len(rewards[1]) == STEPS
    assert abs(sum(rewards[0]) / STEPS - sum(rewards[1]) / STEPS) <= 0.25, rewards


def test_fsdp_under_torchrun(runs, tmp_path, test_cache):
    """trainer=fsdp with the ranks started by torchrun (Lightning detects it and starts nothing itself): the
    same one run directory, a full checkpoint and policy gathered on rank 0, the same start as one process."""
    one, _ = runs
    run = tmp_path / "fsdp"
    torchrun = Path(sys.executable).with_name("torchrun")
    run_cli(
        [
            "--standalone",
            "--nproc-per-node=2",
            "-m",
            "rlx",
            f"hydra.run.dir={run}",
            "trainer=fsdp",
            *RUN,
            "trainer.max_steps=2",
            "trainer.val_check_interval=2",
        ],
        REPO,
        test_cache,
        python=torchrun,
        check=True,
    )
    summary = json.loads((run / "summary.json").read_text())
    assert summary["world_size"] == 2 and summary["steps"] == 2 and summary["weights_in_sync"]
    assert summary["after"]["val/n"] == VAL
    assert summary["before"] == json.loads((one / "summary.json").read_text())["before"]
    for by_rank in step_prompts(run).values():
        assert len(by_rank[0]) == len(by_rank[1]) == 16 and not set(by_rank[0]) & set(by_rank[1])

    import torch
    from transformers import AutoModelForCausalLM

    policy = AutoModelForCausalLM.from_pretrained(run / "policy")
    checkpoint = torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    saved = {k.removeprefix("policy."): v for k, v in checkpoint["state_dict"].items()}
    for name, param in policy.state_dict().items():  # whole tensors, not shards, equal to the exported policy
        if name in saved:
            assert saved[name].shape == param.shape and torch.equal(saved[name], param), name


def test_a_stopped_two_rank_run_resumes_exactly(runs, tmp_path, test_cache):
    """SIGTERM to rank 0 alone (as a scheduler's preemption might reach one task first): every rank finishes
    the same step (the signal is agreed across ranks), rank 0 writes the checkpoint, all exit 143; resumed
    with ckpt_path=last, the run ends with the uninterrupted run's metrics, samples and weights, bit for bit
    (every rank reseeds from (seed, step), and its sampling stream derives from that and its rank)."""
    from tests.resume.runs import checkpoint, metric_rows, samples, training_steps
    from tests.resume.runs import rlx as rlx_until

    _, reference = runs
    run = tmp_path / "run"
    args = [f"hydra.run.dir={run}", "trainer=ddp", *RUN]
    stopped = rlx_until(args, test_cache, stop_at_row=0, sig=signal.SIGTERM)
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stdout[-3000:]
    assert 0 < len(training_steps(run)) < STEPS
    rlx([*args[1:], "ckpt_path=last"], run, test_cache)
    assert training_steps(run) == list(range(STEPS))
    assert metric_rows(run) == metric_rows(reference)
    assert samples(run) == samples(reference)
    final, expected = checkpoint(run / "checkpoints" / "last.ckpt"), checkpoint(reference / "checkpoints" / "last.ckpt")
    assert final["rlx"] == expected["rlx"]  # the curriculum's state, the same on every rank
    for key, tensor in expected["state_dict"].items():
        assert final["state_dict"][key].equal(tensor), key
    s1, s2 = (json.loads((r / "summary.json").read_text()) for r in (run, reference))
    assert s1["weights_fingerprint"] == s2["weights_fingerprint"] and s1["after"] == s2["after"]
