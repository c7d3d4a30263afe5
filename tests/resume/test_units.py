"""The pieces of exact resume, without a training run: seeding, the run-directory trim, the appending
metrics.csv, the start-up checks on ckpt_path, atomic commits, signals and requeue, the LR schedule of an
extended run, and the INFRA stop."""

from __future__ import annotations

import csv
import logging
import os
import random
import signal
import stat
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from rlx.algos.schedules import linear_decay
from rlx.callbacks.checkpoint import Checkpointing, Interrupted
from rlx.callbacks.csv_logger import AppendingWriter
from rlx.callbacks.infra import InfraStop
from rlx.callbacks.resume import RECORD, Resume, ResumeError, identity, newest_checkpoint, trim_history
from rlx.cli import stop
from rlx.seeding import isolated_rng, seed_step, step_seed


# ---------------------------------------------------------------- seeding
def test_step_seeds_are_a_pure_function_of_seed_and_step():
    assert step_seed(0, 5) == step_seed(0, 5)
    seeds = {step_seed(s, t) for s in range(3) for t in range(50)}
    assert len(seeds) == 150  # no two (seed, step) pairs share a stream; (0, 1) and (1, 0) included
    assert all(0 <= s < 2**63 for s in seeds)


def test_seed_step_sets_every_global_generator():
    draws = []
    for _ in range(2):
        random.random(), np.random.rand(), torch.rand(3)  # whatever ran before
        seed_step(7, 3)
        draws.append((random.random(), float(np.random.rand()), torch.rand(3).tolist()))
    assert draws[0] == draws[1]


def test_isolated_rng_leaves_no_trace():
    torch.manual_seed(1), random.seed(1), np.random.seed(1)
    expected = (torch.rand(2).tolist(), random.random(), float(np.random.rand()))
    torch.manual_seed(1), random.seed(1), np.random.seed(1)
    with isolated_rng():
        torch.manual_seed(99)
        torch.rand(1000), random.random(), np.random.rand(10)
    assert (torch.rand(2).tolist(), random.random(), float(np.random.rand())) == expected


# ---------------------------------------------------------------- the run directory's history
def write_csv(path: Path, header: list[str], rows: list[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)


def test_trim_without_a_checkpoint_drops_every_row_the_evaluation_before_rl_included(tmp_path):
    # a segment killed at step 1 before its first checkpoint: ckpt_path=last starts over and writes them again
    write_csv(
        tmp_path / "metrics.csv",
        ["reward/mean", "step", "val/accuracy"],
        [{"step": 0, "val/accuracy": 0.5}, {"step": 0, "reward/mean": 0.1}, {"step": 1, "reward/mean": 0.2}],
    )
    (tmp_path / "samples.jsonl").write_text("".join(f'{{"step": {s}, "completion": "x"}}\n' for s in (0, 1)))
    (tmp_path / "heldout.jsonl").write_text('{"step": 0, "status": "PASS"}\n' * 3)
    assert trim_history(tmp_path, None) == (3, 5)
    with (tmp_path / "metrics.csv").open(newline="") as handle:
        assert next(csv.reader(handle)) == ["reward/mean", "step", "val/accuracy"] and not list(handle)
    assert (tmp_path / "samples.jsonl").read_text() == (tmp_path / "heldout.jsonl").read_text() == ""


def test_trim_drops_rows_from_the_checkpoint_step_on_and_torn_lines(tmp_path):
    write_csv(
        tmp_path / "metrics.csv",
        ["reward/mean", "step", "val/accuracy"],
        [
            {"step": 0, "val/accuracy": 0.5},
            *({"step": s, "reward/mean": s / 10} for s in range(6)),
            {"step": 2, "val/accuracy": 0.6},
            {"step": 5, "val/accuracy": 0.7},
        ],
    )
    with (tmp_path / "metrics.csv").open("a") as handle:
        handle.write("0.9,")  # a row cut off by a SIGKILL
    (tmp_path / "samples.jsonl").write_text(
        "".join(f'{{"step": {s}, "completion": "x"}}\n' for s in range(6)) + '{"step": 6, "compl'
    )
    (tmp_path / "heldout.jsonl").write_text("".join(f'{{"step": {s}, "status": "PASS"}}\n' for s in (0, 0, 3, 3, 5)))
    assert trim_history(tmp_path, 3) == (
        5,
        5,
    )  # steps 3, 4, 5, the step-5 evaluation, the torn row; heldout's step-5 row
    with (tmp_path / "metrics.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["step"], bool(r["reward/mean"])) for r in rows] == [
        ("0", False),
        ("0", True),
        ("1", True),
        ("2", True),
        ("2", False),
    ]  # the step-2 evaluation stays
    assert [line[:10] for line in (tmp_path / "samples.jsonl").read_text().splitlines()] == [
        '{"step": 0',
        '{"step": 1',
        '{"step": 2',
    ]
    assert [line[:10] for line in (tmp_path / "heldout.jsonl").read_text().splitlines()] == ['{"step": 0'] * 2 + [
        '{"step": 3'
    ] * 2  # evaluated after 3 steps, before step 3's checkpoint was committed: kept; the one after 5 steps goes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heldout.jsonl", "metrics.csv", "samples.jsonl"]


def test_appending_writer_keeps_the_history_and_widens_the_header(tmp_path):
    write_csv(tmp_path / "metrics.csv", ["reward/mean", "step"], [{"step": 0, "reward/mean": 0.1}])
    writer = AppendingWriter(str(tmp_path))  # Lightning's writer deleted metrics.csv here
    writer.log_metrics({"reward/mean": 0.2}, step=1)
    writer.save()  # same columns: appended
    writer.log_metrics({"val/reward": 0.5, "val/accuracy": 0.25}, step=1)  # new columns (the resume crash)
    writer.save()
    with (tmp_path / "metrics.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    assert reader.fieldnames == ["reward/mean", "step", "val/accuracy", "val/reward"]
    assert [(r["step"], r["reward/mean"], r["val/accuracy"]) for r in rows] == [
        ("0", "0.1", ""),
        ("1", "0.2", ""),
        ("1", "", "0.25"),
    ]


# ---------------------------------------------------------------- ckpt_path, checked before anything is built
def fake_checkpoint(path: Path, cfg, step: int, **record) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    ident = identity(cfg, list(cfg.checkpoint.match), list(cfg.checkpoint.match_ignore))
    torch.save({"global_step": step, RECORD: {"identity": ident, "max_steps": 10, "segments": [], **record}}, path)
    return path


def test_resume_checks_name_the_problem_in_one_line(cfg_factory, tmp_path):
    cfg = cfg_factory("trainer.max_steps=10")
    other = cfg_factory("algo=ppo", "trainer.max_steps=10")
    run_ckpts = Path(cfg.checkpoint.dirpath)
    messages = {}
    cases = {
        "missing": (cfg_factory("ckpt_path=/nowhere/last.ckpt"), None),
        "corrupt": (cfg_factory(f"ckpt_path={tmp_path / 'corrupt.ckpt'}"), b"PK\x03\x04 not a zip archive"),
        "foreign": (cfg_factory(f"ckpt_path={tmp_path / 'foreign.ckpt'}"), {"state_dict": {}}),
    }
    for name, (case_cfg, content) in cases.items():
        path = Path(case_cfg.ckpt_path)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif content is not None:
            torch.save(content, path)
        with pytest.raises(ResumeError) as err:
            Resume.prepare(case_cfg)
        messages[name] = str(err.value)
    fake_checkpoint(tmp_path / "ppo.ckpt", other, 4)
    with pytest.raises(ResumeError) as err:
        Resume.prepare(cfg_factory(f"ckpt_path={tmp_path / 'ppo.ckpt'}", "trainer.max_steps=10"))
    messages["other config"] = str(err.value)
    fake_checkpoint(tmp_path / "far.ckpt", cfg, 30)
    with pytest.raises(ResumeError) as err:
        Resume.prepare(cfg_factory(f"ckpt_path={tmp_path / 'far.ckpt'}", "trainer.max_steps=10"))
    messages["beyond max_steps"] = str(err.value)
    fake_checkpoint(run_ckpts / "last.ckpt", cfg, 4)
    with pytest.raises(ResumeError) as err:
        Resume.prepare(cfg)  # a new run into a directory that holds one
    messages["fresh over a run"] = str(err.value)

    assert "does not exist" in messages["missing"] and "ckpt_path=last" in messages["missing"]
    assert "not a readable checkpoint" in messages["corrupt"] and "truncated or corrupt" in messages["corrupt"]
    assert "not written by rlx" in messages["foreign"]
    assert "algo.name is 'ppo' in the checkpoint and 'grpo' here" in messages["other config"]
    assert "more keys differ" in messages["other config"]
    assert "set trainer.max_steps >= 30" in messages["beyond max_steps"]
    assert "resume it with ckpt_path=last" in messages["fresh over a run"]
    assert all("\n" not in m for m in messages.values()), messages


def test_a_missing_checkpoint_fails_before_the_model_loads(cfg_factory):
    from rlx.train import train

    cfg = cfg_factory("model=hf", "model.name_or_path=/no/such/model", "ckpt_path=/no/such.ckpt")
    started = time.perf_counter()
    with pytest.raises(ResumeError, match="does not exist"):  # not the model's error: it was never loaded
        train(cfg)
    assert time.perf_counter() - started < 5


def test_ckpt_path_last_finds_the_newest_or_starts_fresh(cfg_factory, tmp_path, caplog):
    cfg = cfg_factory("ckpt_path=last", "trainer.max_steps=10")
    dirpath = Path(cfg.checkpoint.dirpath)
    with caplog.at_level(logging.INFO):
        assert Resume.prepare(cfg).path is None
    assert "no checkpoint" in caplog.text
    for step in (2, 10, 4):
        fake_checkpoint(dirpath / f"step={step}.ckpt", cfg, step)
    assert newest_checkpoint(dirpath) == dirpath / "step=10.ckpt"
    fake_checkpoint(dirpath / "last.ckpt", cfg, 6)
    resume = Resume.prepare(cfg)
    assert (resume.path, resume.step) == (str(dirpath / "last.ckpt"), 6)


def test_cache_dir_may_differ_but_the_seed_may_not(cfg_factory, tmp_path):
    path = fake_checkpoint(tmp_path / "a.ckpt", cfg_factory("model.cache_dir=/elsewhere"), 2)
    assert Resume.prepare(cfg_factory(f"ckpt_path={path}")).step == 2
    with pytest.raises(ResumeError, match="seed is 0 in the checkpoint and 1 here"):
        Resume.prepare(cfg_factory(f"ckpt_path={path}", "seed=1"))


def test_summary_totals_cover_every_segment(cfg_factory, tmp_path):
    cfg = cfg_factory()
    path = fake_checkpoint(
        tmp_path / "a.ckpt", cfg, 4, peak_rss_mb=900.0, segments=[{"from_step": 0, "to_step": 4, "wall_s": 30.0}]
    )
    resume = Resume.prepare(cfg_factory(f"ckpt_path={path}"))
    totals = resume.totals(SimpleNamespace(global_step=10), wall_s=12.04, peak_rss_mb=700.0)
    assert totals == {
        "wall_s": 42.0,
        "peak_rss_mb": 900.0,
        "segments": [{"from_step": 0, "to_step": 4, "wall_s": 30.0}, {"from_step": 4, "to_step": 10, "wall_s": 12.0}],
    }


# ---------------------------------------------------------------- checkpoint callback
def callback(tmp_path: Path, **kwargs) -> Checkpointing:
    settings = {
        "dirpath": str(tmp_path / "checkpoints"),
        "every_n_steps": 10,
        "every_minutes": None,
        "keep": 0,
        "signals": ["SIGTERM", "SIGUSR1"],
        "requeue": False,
        "match": [],
        "match_ignore": [],
        "seed": 0,
    }
    return Checkpointing(**{**settings, **kwargs})


@pytest.mark.parametrize(
    ("key", "value"),
    [("every_n_steps", 0), ("every_minutes", 0), ("keep", -2), ("signals", ["SIGKILL"]), ("signals", ["SIGNOPE"])],
)
def test_bad_checkpoint_settings_name_the_key(tmp_path, key, value):
    with pytest.raises(ValueError, match=f"checkpoint.{key}"):
        callback(tmp_path, **{key: value})


def test_commit_renames_into_last_and_keeps_numbered_links(tmp_path):
    cb = callback(tmp_path, keep=2)
    cb.dirpath.mkdir()
    last, previous = cb.dirpath / "last.ckpt", None
    for step in (10, 20, 30):
        partial = cb.dirpath / ".last.ckpt.partial"
        partial.write_text(f"state at {step}")
        cb.pending = (partial, step)
        assert previous is None or last.read_text() == previous  # the old last.ckpt is whole until the rename
        cb.commit()
        previous = f"state at {step}"
    assert sorted(p.name for p in cb.dirpath.iterdir()) == ["last.ckpt", "step=20.ckpt", "step=30.ckpt"]
    assert (cb.dirpath / "last.ckpt").read_text() == "state at 30"
    assert os.stat(cb.dirpath / "last.ckpt").st_ino == os.stat(cb.dirpath / "step=30.ckpt").st_ino
    assert (cb.dirpath / "step=20.ckpt").read_text() == "state at 20"
    assert cb.committed_step == 30


def test_checkpoints_fall_due_by_steps_by_minutes_and_at_the_end(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(
        "rlx.callbacks.checkpoint.time", SimpleNamespace(monotonic=lambda: clock[0], perf_counter=time.perf_counter)
    )
    written = []
    trainer = SimpleNamespace(
        global_step=0,
        max_steps=100,
        should_stop=False,
        save_checkpoint=lambda path, weights_only: (
            written.append(trainer.global_step),
            Path(path).write_text("state"),
        ),
    )
    cb = callback(tmp_path, every_n_steps=5, every_minutes=2)
    cb.on_train_start(SimpleNamespace(lr_scheduler_configs=[], max_steps=100), None)
    for step in (1, 2, 5, 6):
        trainer.global_step = step
        cb.on_train_batch_end(trainer, None, None, None, step - 1)
    clock[0] += 121  # two minutes since the step-5 checkpoint
    trainer.global_step = 7
    cb.on_train_batch_end(trainer, None, None, None, 6)
    trainer.global_step, trainer.should_stop = 8, True  # another callback stops the run: its last checkpoint
    cb.on_train_batch_end(trainer, None, None, None, 7)
    trainer.global_step, trainer.should_stop = 100, False
    cb.on_train_batch_end(trainer, None, None, None, 99)
    cb.restore_handlers()
    assert written == [5, 7, 8, 100]


def test_an_exception_discards_the_uncommitted_checkpoint(tmp_path):
    cb = callback(tmp_path)
    cb.dirpath.mkdir()
    (cb.dirpath / "last.ckpt").write_text("step 10")
    partial = cb.dirpath / ".last.ckpt.partial"
    partial.write_text("step 20, whose metrics row may never have been written")
    cb.pending = (partial, 20)
    cb.on_exception(None, None, RuntimeError("the step broke"))
    assert sorted(p.name for p in cb.dirpath.iterdir()) == ["last.ckpt"]
    assert (cb.dirpath / "last.ckpt").read_text() == "step 10"


def test_sigusr1_exits_after_the_checkpoint_and_requeues_the_slurm_job(tmp_path, monkeypatch):
    log = tmp_path / "scontrol.log"
    fake = tmp_path / "bin" / "scontrol"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    cb = callback(tmp_path, requeue=True)
    trainer = SimpleNamespace(global_step=7, max_steps=10, should_stop=False, _results=None, save_checkpoint=save)
    cb.install_handlers()
    try:
        os.kill(os.getpid(), signal.SIGUSR1)  # only recorded: the step in flight is not interrupted
        assert stop.pending() == cb.caught == signal.SIGUSR1 and cb.received is None  # agreed (over ranks) later
        cb.on_train_batch_start(trainer, None, None, 7)  # agreed, but no checkpoint of step 7 exists: the step runs
        assert cb.received == signal.SIGUSR1 and cb.pending is None
        trainer.global_step = 8
        cb.on_train_batch_end(trainer, None, None, None, 7)  # step 8's checkpoint falls due
        assert cb.pending is not None
        with pytest.raises(Interrupted) as exit_:
            cb.on_train_batch_start(trainer, None, None, 8)  # committed, then the exit
    finally:
        cb.restore_handlers()
    assert exit_.value.code == 128 + signal.SIGUSR1 and exit_.value.step == 8
    assert log.read_text().split() == ["requeue", "4242"]
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL


def save(path, weights_only) -> None:
    Path(path).write_text("state")


def test_a_signal_handled_while_the_ranks_agree_stops_the_run_after_this_step(tmp_path, monkeypatch):
    """A signal that arrives while agreed_signal's collective waits is handled when it returns, after the ranks
    agreed on nothing: it must not be lost with that result (the run then never stopped: CI, stop 22). rlx.cli.stop
    holds it, and the agreement after the step's checkpoint decision takes it up."""
    cb = callback(tmp_path)
    cb.install_handlers()
    sent = []

    def signalled_during_the_wait(caught):
        if not sent:
            sent.append(os.kill(os.getpid(), signal.SIGTERM))  # the Python handler runs as the collective returns
            return None  # what every rank had before it: nothing
        return caught

    monkeypatch.setattr("rlx.callbacks.checkpoint.agreed_signal", signalled_during_the_wait)
    trainer = SimpleNamespace(global_step=3, max_steps=10, should_stop=False, _results=None, save_checkpoint=save)
    try:
        cb.on_train_batch_end(trainer, None, None, None, 2)
        assert cb.received == signal.SIGTERM and cb.pending is not None  # agreed again: this step's checkpoint
        with pytest.raises(Interrupted) as exit_:
            cb.on_train_batch_start(trainer, None, None, 3)
    finally:
        cb.restore_handlers()
    assert exit_.value.code == 128 + signal.SIGTERM and (cb.dirpath / "last.ckpt").read_text() == "state"


def test_a_longer_run_continues_the_configured_schedule_and_says_so(tmp_path, caplog):
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=1.0)
    finished = linear_decay(optimizer, total_steps=4, warmup_steps=0, final_fraction=0.0)
    for _ in range(4):
        optimizer.step()
        finished.step()
    assert optimizer.param_groups[0]["lr"] == 0.0  # the end of the 4-step run
    extended = linear_decay(torch.optim.SGD([param], lr=1.0), total_steps=8, warmup_steps=0, final_fraction=0.0)
    extended.load_state_dict(finished.state_dict())
    extended.optimizer.load_state_dict(optimizer.state_dict())  # what Lightning restores
    cb = callback(tmp_path)
    cb.first_step = 4
    trainer = SimpleNamespace(max_steps=8, lr_scheduler_configs=[SimpleNamespace(scheduler=extended)])
    with caplog.at_level(logging.WARNING):
        cb.continue_schedule(trainer, saved_max_steps=4)
    assert extended.optimizer.param_groups[0]["lr"] == 0.5  # 1 - 4/8: the 8-step schedule at step 4
    assert "now spans 8 steps and continues from step 4, so the lr changes 0 -> 0.5" in caplog.text


# ---------------------------------------------------------------- INFRA stop
def test_infra_stop_needs_k_failing_steps_in_a_row_and_names_the_reward():
    class UnitTestsReward:
        pass

    guard = InfraStop(max_frac=0.5, steps=3)
    module = SimpleNamespace(reward=UnitTestsReward())
    trainer = SimpleNamespace(callback_metrics={}, should_stop=False, global_step=0)
    for step, frac in enumerate([0.9, 0.9, 0.1, 0.6, 0.8], start=1):
        trainer.global_step, trainer.callback_metrics = step, {"reward/infra_frac": torch.tensor(frac)}
        guard.on_train_batch_end(trainer, module, None, None, step)
        assert not trainer.should_stop  # the streak was broken at step 3
    assert guard.state_dict() == {"streak": 2, "seen": 5, "scored": 5}  # every step scored some of its samples
    trainer.global_step, trainer.callback_metrics = 6, {"reward/infra_frac": torch.tensor(1.0)}
    guard.on_train_batch_end(trainer, module, None, None, 6)
    assert trainer.should_stop
    message = str(guard.stop_error)
    assert "UnitTestsReward" in message and "3 steps in a row" in message and "infra_stop.max_frac" in message
    with pytest.raises(ValueError, match="infra_stop.max_frac"):
        InfraStop(max_frac=1.0, steps=3)


def test_a_run_none_of_whose_steps_scored_a_sample_ends_in_an_infra_error():
    """Shorter than the INFRA streak limit, but not one sample scored: not a completed run (and a resumed run
    counts the steps before its checkpoint)."""

    class ScorerDown:
        pass

    module = SimpleNamespace(reward=ScorerDown())
    guard = InfraStop(max_frac=0.5, steps=5)
    guard.load_state_dict({"streak": 1, "seen": 1, "scored": 0})  # the checkpoint's step scored nothing either
    trainer = SimpleNamespace(callback_metrics={"reward/infra_frac": torch.tensor(1.0)}, should_stop=False)
    trainer.global_step = 2
    guard.on_train_batch_end(trainer, module, None, None, 1)
    guard.on_train_end(trainer, module)
    assert not trainer.should_stop and "nothing was scored" in str(guard.stop_error)
    assert "ScorerDown" in str(guard.stop_error) and "any sample of the run's 2 RL steps" in str(guard.stop_error)
    scored = InfraStop(max_frac=0.5, steps=5)
    trainer.callback_metrics = {"reward/infra_frac": torch.tensor(0.75)}  # one sample in four scored: a signal
    scored.on_train_batch_end(trainer, module, None, None, 1)
    scored.on_train_end(trainer, module)
    assert scored.stop_error is None
