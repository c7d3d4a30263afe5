"""The pieces behind a run's life on the command line: the lock that names its holder, the progress ticker, the
sweep's size, the status a signal leaves."""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest
from hydra.core.utils import JobReturn, JobStatus
from hydra.types import RunMode
from omegaconf import OmegaConf

from rlx.cli import status
from rlx.cli.hydra_callbacks import RunDirBusy, RunDirLock, SweepProgress, sweep_size
from rlx.cli.lock import HeldLock, describe_holder
from rlx.cli.ticker import Ticker
from tests.conftest import REPO

HOLD = textwrap.dedent(
    """
    import sys, time
    from rlx.cli.lock import HeldLock
    lock = HeldLock(sys.argv[1])
    assert lock.acquire()
    lock.describe(line="warm start attempt 1: step 10/1500")
    print("held", flush=True)
    time.sleep(60)
    """
)


def hold(path):
    """A child process holding the lock at `path` (until killed)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child


def test_a_held_lock_names_its_holder_and_a_dead_holders_lock_is_taken_over(tmp_path):
    path = tmp_path / ".rlx.lock"
    child = hold(path)
    try:
        waiter = HeldLock(path)
        assert not waiter.acquire()
        record = waiter.holder()
        assert record["pid"] == child.pid and record["host"] == socket.gethostname()
        assert record["line"] == "warm start attempt 1: step 10/1500"  # the holder's progress
        assert describe_holder(record).startswith(f"PID {child.pid} on {socket.gethostname()} (since ")
        assert json.loads(path.read_text())["pid"] == child.pid  # the failed attempt changed nothing
    finally:
        child.kill()
        child.wait()
    assert waiter.acquire() and waiter.holder()["pid"] == os.getpid()  # the kernel dropped the dead holder's flock
    waiter.release()


def test_a_second_run_into_a_held_directory_is_refused_naming_the_holder(tmp_path):
    child = hold(tmp_path / "run" / ".rlx.lock")
    try:
        config = OmegaConf.create({"hydra": {"run": {"dir": str(tmp_path / "run")}}})
        with pytest.raises(RunDirBusy, match=rf"in use by PID {child.pid} on "):
            RunDirLock().on_run_start(config)
    finally:
        child.kill()
        child.wait()
    RunDirLock().on_run_start(config)  # free once the holder is gone


def test_the_ticker_prints_off_a_terminal_every_interval_with_an_eta(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])
    out = io.StringIO()
    ticker = Ticker("warm start attempt 1", 100, every_s=10, stream=out)
    for step in range(1, 41):  # 1 s a step
        now[0] = float(step)
        ticker.update(step, loss=0.5)
    lines = out.getvalue().splitlines()
    # printed when waiting one more step would pass 10 s: after steps 9, 18, 27, 36
    assert [line.split()[6] for line in lines] == ["9/100", "18/100", "27/100", "36/100"]
    assert lines[0].endswith("warm start attempt 1: step 9/100  loss 0.5  eta 1.5 min")  # 91 steps left at 1 s each


def test_sweep_size_is_the_product_of_the_swept_values():
    config = OmegaConf.create(
        {"hydra": {"overrides": {"task": ["algo=grpo,dr_grpo", "seed=0,1,2", "algo.beta=0"]}, "sweeper": {}}}
    )
    assert sweep_size(config) == 6
    assert sweep_size(OmegaConf.create({"hydra": {"sweeper": {"n_trials": 4}, "overrides": {"task": []}}})) == 4
    # a sweep config's params, one of them narrowed on the command line (which Hydra's sweeper lets win):
    # 2 values of k × 1 correction × 5 seeds, not 4 × 2 × 5 × 2 × 1
    swept = {"rollout.max_staleness": "0,1,2,4", "rollout_correction": "none,token_tis", "seed": "0,1,2,3,4"}
    narrowed = {"task": ["+sweeps=staleness", "rollout.max_staleness=0,1", "rollout_correction=none"]}
    assert sweep_size(OmegaConf.create({"hydra": {"overrides": narrowed, "sweeper": {"params": swept}}})) == 10


def test_a_signal_leaves_status_stopped_with_the_phase(tmp_path):
    status.enter("warm start")
    status.write_stopped(tmp_path, 128 + signal.SIGTERM)
    doc = json.loads((tmp_path / "status.json").read_text())
    assert doc["status"] == "stopped" and doc["phase"] == "warm start" and doc["signal"] == "SIGTERM"


def test_a_run_directory_given_relative_is_the_same_lock_as_its_absolute_output_dir(tmp_path, monkeypatch):
    # hydra.run.dir as typed (relative to the launch directory), then the job's absolute output_dir: one lock,
    # not a second flock that would refuse the process itself (the installed wheel's run did)
    monkeypatch.chdir(tmp_path)
    lock = RunDirLock()
    lock.on_run_start(OmegaConf.create({"hydra": {"run": {"dir": "outputs/run"}}}))
    (tmp_path / "outputs" / "run").mkdir(parents=True, exist_ok=True)
    lock.on_job_start(OmegaConf.create({"hydra": {"runtime": {"output_dir": str(tmp_path / "outputs" / "run")}}}))
    assert lock.lock is not None and lock.lock.path == tmp_path / "outputs" / "run" / ".rlx.lock"
    lock.lock.release()


def test_the_other_ranks_of_a_run_do_not_take_its_lock(tmp_path, monkeypatch):
    # Lightning's DDP launcher starts rank 1 as `python -m rlx ...` again, into the run directory rank 0 holds
    child = hold(tmp_path / "run" / ".rlx.lock")
    try:
        config = OmegaConf.create({"hydra": {"run": {"dir": str(tmp_path / "run")}}})
        monkeypatch.setenv("LOCAL_RANK", "1")
        lock = RunDirLock()
        lock.on_run_start(config)  # no refusal: the holder is this run's rank 0
        assert lock.lock is None
        monkeypatch.setenv("LOCAL_RANK", "0")
        with pytest.raises(RunDirBusy):
            RunDirLock().on_run_start(config)
    finally:
        child.kill()
        child.wait()


def test_cpu_seconds_are_split_by_phase_and_restart_with_each_job():
    def burn(seconds: float) -> None:
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass

    status.start_job()
    status.enter("warm start")
    burn(0.2)
    status.enter("RL")
    burn(0.1)
    split = status.cpu_by_phase()
    # process_time counts every thread; the test's own thread is the one burning, so each phase holds ≥ its burn
    assert split["warm start"] >= 0.2 and split["RL"] >= 0.1 and split.get("starting", 0.0) < 0.2
    assert split["warm start"] < 0.2 + 0.15  # the RL burn is not charged to the warm start
    status.start_job()  # a sweep worker's next job
    assert "warm start" not in status.cpu_by_phase() and status.phase() == "starting"


def test_sweep_progress_counts_across_workers_copies(tmp_path, caplog):
    """joblib runs each job in a worker holding a pickled copy of the callbacks: the count must come from the
    sweep directory, not from one copy's memory (it printed "1/50 runs done" after every job)."""
    config = OmegaConf.create(
        {
            "hydra": {
                "mode": RunMode.MULTIRUN,
                "sweep": {"dir": str(tmp_path / "sweep")},
                "overrides": {"task": ["seed=0,1,2"]},
                "sweeper": {},
            }
        }
    )
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / SweepProgress.PROGRESS_FILE).write_text("completed\n")  # a sweep run here before
    main = SweepProgress()
    main.on_multirun_start(config)
    workers = [pickle.loads(pickle.dumps(main)) for _ in range(3)]
    outcomes = [JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.COMPLETED]
    with caplog.at_level("INFO", logger="rlx"):
        for worker, outcome in zip(workers, outcomes, strict=True):
            worker.on_job_end(config, JobReturn(status=outcome))
    assert [r.getMessage() for r in caplog.records] == [
        "sweep: 1/3 runs done (1 completed)",
        "sweep: 2/3 runs done (1 completed, 1 failed)",
        "sweep: 3/3 runs done (2 completed, 1 failed)",
    ]


def test_sweep_progress_under_the_real_joblib_launcher(tmp_path):
    """The same through Hydra's joblib launcher, two workers: every count from 1 to 4 is printed once, and the
    workers write to the one sweep directory the launcher made (its ${now:} resolved once)."""
    (tmp_path / "app.py").write_text(
        "import hydra\n@hydra.main(version_base=None, config_path=None)\ndef main(cfg):\n    pass\nmain()\n"
    )
    progress = "+hydra.callbacks.progress._target_=rlx.cli.hydra_callbacks.SweepProgress"
    args = ["app.py", "-m", "+x=1,2,3,4", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", progress]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = re.findall(r"sweep: (\d)/4 runs done", proc.stdout + proc.stderr)
    assert sorted(counts) == ["1", "2", "3", "4"]
    [written] = list((tmp_path / "multirun").glob("*/*/.progress"))
    assert written.read_text().split() == ["completed"] * 4
