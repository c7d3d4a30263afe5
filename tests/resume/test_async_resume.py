"""rollout.max_staleness=2 killed with SIGKILL and resumed with ckpt_path=last ends with exactly the uninterrupted
run's metrics.csv, samples.jsonl, heldout.jsonl and final state: every step once, the batches that were in flight
at the checkpoint (two, sampled by two older versions) regenerated bit for bit from the checkpointed versions'
weights and seeds; and the killed trainer leaves no sampler process behind. Killed at three points: before the
first checkpoint (the resume starts over), with two batches in flight past a checkpoint, and after the second
checkpoint with the sampler ahead of it."""

from __future__ import annotations

import signal
import time

import psutil
import pytest
import torch

from tests.conftest import REPO, start_cli
from tests.resume.runs import TINY, checkpoint, metric_rows, rlx, samples, summary, training_steps

pytestmark = pytest.mark.slow
STEPS = 8
ARGS = [*TINY, f"trainer.max_steps={STEPS}", "rollout.max_staleness=2", "checkpoint.every_n_steps=3"]


def kill_at_row(args: list[str], cache, run, row: int) -> dict[psutil.Process, str]:
    """Start the run, SIGKILL it once metrics.csv holds `row`; returns the processes it had started, with
    their command lines."""
    proc = start_cli(["-m", "rlx", *args], REPO, cache)
    children: dict[psutil.Process, str] = {}
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        if row in training_steps(run):
            children = {c: " ".join(c.cmdline()) for c in psutil.Process(proc.pid).children(recursive=True)}
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"the run ended before it could be killed:\n{out[-2000:]}"
    return children


@pytest.fixture(scope="module")
def reference(tmp_path_factory, test_cache):
    """The uninterrupted run, once for every kill point."""
    run = tmp_path_factory.mktemp("async-resume") / "uninterrupted"
    done = rlx([*ARGS, f"hydra.run.dir={run}"], test_cache)
    assert done.returncode == 0, done.stdout[-3000:]
    return run


# metrics.csv row at which the trainer is killed: 1 (no checkpoint yet), 4 (checkpoint at step 3, batches 3
# and 4 in flight), 6 (the checkpoint at step 6 being written or just written, the sampler ahead of it)
@pytest.mark.parametrize("row", [1, 4, 6])
def test_sigkill_then_resume_equals_uninterrupted(tmp_path, test_cache, reference, row):
    run = tmp_path / "run"
    children = kill_at_row([*ARGS, f"hydra.run.dir={run}"], test_cache, run, row)
    assert any("spawn_main" in line for line in children.values()), children  # the sampler was running
    gone, alive = psutil.wait_procs(list(children), timeout=15)
    assert not alive, f"processes outlived the killed trainer: {alive}"  # the sampler watches its parent
    if row == 4:
        saved = checkpoint(run / "checkpoints" / "last.ckpt")
        assert saved["global_step"] == 3
        in_flight = saved["rlx"]["async"]
        assert sorted(in_flight["admitted"]) == [3, 4]  # batches 3 and 4, admitted at steps 1 and 2 ...
        assert [in_flight["admitted"][t]["version"] for t in (3, 4)] == [1, 2]  # ... by versions 1 and 2
        assert sorted(in_flight["weights"]) == [1, 2]  # both versions' weights, older than the checkpoint's
    if row == 1:
        assert not (run / "checkpoints" / "last.ckpt").exists()  # ckpt_path=last then starts the run over

    resumed = rlx([*ARGS, f"hydra.run.dir={run}", "ckpt_path=last"], test_cache)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert training_steps(run) == list(range(STEPS))  # every step once, in order
    assert metric_rows(run) == metric_rows(reference)
    assert samples(run) == samples(reference)
    assert samples(run, "heldout.jsonl") == samples(reference, "heldout.jsonl")
    final, expected = checkpoint(run / "checkpoints" / "last.ckpt"), checkpoint(reference / "checkpoints" / "last.ckpt")
    for key, tensor in expected["state_dict"].items():  # the policy's weights, bit for bit
        assert final["state_dict"][key].equal(tensor), key
    ours, theirs = final["rlx"].pop("async"), expected["rlx"].pop("async")
    assert final["rlx"] == expected["rlx"]  # the curriculum (which drew two batches ahead) and the rest
    assert ours["admitted"] == theirs["admitted"] and ours["admitted_through"] == theirs["admitted_through"]
    for version, weights in theirs["weights"].items():
        assert all(torch.equal(a, b) for a, b in zip(ours["weights"][version], weights, strict=True))
    assert summary(run)["after"] == summary(reference)["after"]
