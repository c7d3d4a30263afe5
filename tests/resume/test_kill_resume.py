"""A run killed with SIGKILL (or stopped by SIGTERM) and resumed into its own directory ends with exactly
the metrics.csv, samples.jsonl, heldout.jsonl and final state of the uninterrupted run: every step once, every
value equal but the wall-clock columns (CPU, fixed seed). The uninterrupted runs are jobs of one multirun.
Covered: GRPO killed mid-epoch of the prompt set, PPO (critic and its optimiser) killed exactly at an epoch
boundary, GRPO with learnable_band (its pass-rate table and RNG), REINFORCE (the running-mean baseline) stopped
by SIGTERM.

The prompt set has 16 prompts, 4 per step (an epoch is 4 steps); 8 steps per run.
"""

from __future__ import annotations

import signal

import pytest

from tests.resume.runs import TINY, checkpoint, metric_rows, rlx, samples, summary, training_steps

pytestmark = pytest.mark.slow
STEPS = 8


def args(algo: str, curriculum: str, *extra: str) -> list[str]:
    return [f"algo={algo}", f"curriculum={curriculum}", *TINY, f"trainer.max_steps={STEPS}", *extra]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, test_cache):
    sweep = tmp_path_factory.mktemp("uninterrupted")
    done = rlx(
        [
            "-m",
            "~hydra/callbacks",
            "algo=grpo,ppo,reinforce",
            "curriculum=uniform,learnable_band",
            *TINY,
            f"trainer.max_steps={STEPS}",
            f"hydra.sweep.dir={sweep}",
            "hydra.sweep.subdir=${algo.name}-${hydra:runtime.choices.curriculum}",
        ],
        test_cache,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    return lambda algo, curriculum: sweep / f"{algo}-{curriculum}"


def assert_same_run(run, reference) -> None:
    assert training_steps(run) == list(range(STEPS))  # every step once, in order
    assert metric_rows(run) == metric_rows(reference)
    assert samples(run) == samples(reference)
    assert samples(run, "heldout.jsonl") == samples(reference, "heldout.jsonl")  # every evaluation's rows once
    final, expected = checkpoint(run / "checkpoints" / "last.ckpt"), checkpoint(reference / "checkpoints" / "last.ckpt")
    assert final["global_step"] == STEPS
    assert final["rlx"] == expected["rlx"]  # curriculum and advantage state
    for key, tensor in expected["state_dict"].items():  # policy (and critic) weights, bit for bit
        assert final["state_dict"][key].equal(tensor), key
    for ours, theirs in zip(final["optimizer_states"], expected["optimizer_states"], strict=True):  # (critic's too)
        for param, state in theirs["state"].items():
            assert all(ours["state"][param][k].equal(v) for k, v in state.items()), param
    assert final["lr_schedulers"] == expected["lr_schedulers"]
    assert summary(run)["after"] == summary(reference)["after"]


@pytest.mark.parametrize(
    ("algo", "curriculum", "every", "kill_at_row", "position"),
    [
        ("grpo", "uniform", 3, 4, 12),  # checkpoint at step 3: 12 of the epoch's 16 prompts used (mid-epoch)
        ("ppo", "uniform", 4, 5, 16),  # checkpoint at step 4: the epoch's last prompt used (an epoch boundary)
        ("grpo", "learnable_band", 3, 4, None),
    ],
    ids=["grpo-mid-epoch", "ppo-epoch-boundary", "grpo-learnable_band"],
)
def test_sigkill_then_resume_equals_uninterrupted(
    algo, curriculum, every, kill_at_row, position, uninterrupted, tmp_path, test_cache
):
    run = tmp_path / "run"
    run_args = args(algo, curriculum, f"checkpoint.every_n_steps={every}", f"hydra.run.dir={run}")
    killed = rlx(run_args, test_cache, stop_at_row=kill_at_row)
    assert killed.returncode == -signal.SIGKILL, f"the run ended before it could be killed:\n{killed.stdout[-2000:]}"
    saved = checkpoint(run / "checkpoints" / "last.ckpt")
    assert saved["global_step"] == every  # the kill came after this checkpoint and before the next
    if position is not None:
        assert saved["rlx"]["sampler"]["position"] == position  # of the epoch's 16 shuffled prompts
    assert kill_at_row in training_steps(run)  # rows after the checkpoint exist, and must be dropped

    resumed = rlx([*run_args, "ckpt_path=last"], test_cache)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert_same_run(run, uninterrupted(algo, curriculum))
    segments = summary(run)["segments"]
    assert [(s["from_step"], s["to_step"]) for s in segments] == [(0, every), (every, STEPS)]


def test_sigterm_finishes_the_step_checkpoints_and_resumes_exactly(uninterrupted, tmp_path, test_cache):
    run = tmp_path / "run"
    run_args = args("reinforce", "uniform", "checkpoint.every_n_steps=null", f"hydra.run.dir={run}")
    stopped = rlx(run_args, test_cache, stop_at_row=1, sig=signal.SIGTERM)
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stdout[-3000:]
    assert "stopped by SIGTERM" in stopped.stdout
    step = checkpoint(run / "checkpoints" / "last.ckpt")["global_step"]  # no periodic checkpoints: the signal's
    assert 2 <= step < STEPS
    assert training_steps(run) == list(range(step))  # the step in flight finished; none started after it

    resumed = rlx([*run_args, "ckpt_path=last"], test_cache)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert_same_run(run, uninterrupted("reinforce", "uniform"))
    baseline = checkpoint(run / "checkpoints" / "last.ckpt")["rlx"]["advantage"]
    assert baseline["count"] == STEPS and baseline["baseline"] != 0.0

    # extending the finished run: explicit in the log, and its steps follow on (the old final evaluation goes)
    longer = [a for a in run_args if not a.startswith("trainer.max_steps=")]
    extended = rlx([*longer, "trainer.max_steps=10", "ckpt_path=last"], test_cache)
    assert extended.returncode == 0, extended.stdout[-3000:]
    assert f"the checkpointed run had {STEPS}: the LR schedule (algo.lr_schedule) now spans 10 steps" in extended.stdout
    assert training_steps(run) == list(range(10))
    before = metric_rows(uninterrupted("reinforce", "uniform"))[:-1]  # all but its final evaluation, now dropped
    assert metric_rows(run)[: len(before)] == before
    assert summary(run)["steps"] == 10 and len(summary(run)["segments"]) == 3
