"""rlx's Hydra callbacks (conf/hydra/callbacks/rlx.yaml): one writer per run directory, a failed job reported
once, a sweep's progress. Hydra builds them in every process it starts, before the job's output directory
exists: standard library, Hydra, rlx.cli and rlx.distributed.env (os only) only.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from rlx.cli.lock import HeldLock, describe_holder
from rlx.distributed.env import env_is_rank_zero

log = logging.getLogger("rlx")
LOCK_FILE = ".rlx.lock"


class RunDirBusy(SystemExit):
    """Raised from a Hydra callback, whose ordinary exceptions Hydra turns into warnings: a SystemExit passes
    through to rlx.__main__, which prints its one line and exits with status 1."""

    def __init__(self, message: str) -> None:
        super().__init__(1)
        self.message = message

    def __str__(self) -> str:
        return self.message


class RunDirLock(Callback):
    """A run holds `<run_dir>/.rlx.lock` while its process lives; a second process started into the same
    directory (a resume while the first still runs, a requeued job beside its predecessor) refuses in one line
    naming the holder, before Hydra writes anything there (`on_run_start` comes before the job's directory,
    .hydra/ and rlx.log are written). A dead holder's lock is free (the kernel drops an flock with its process)."""

    def __init__(self) -> None:
        self.lock: HeldLock | None = None

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        run_dir = OmegaConf.select(config, "hydra.run.dir", default=None)
        if run_dir is not None:
            self.take(Path(str(run_dir)))

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        # a multirun's job directory, or a run directory whose ${now:} name only resolved now
        self.take(Path(str(config.hydra.runtime.output_dir)))

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if config.hydra.mode == RunMode.MULTIRUN and self.lock is not None:
            self.lock.release()  # the next job of this process takes its own directory's
            self.lock = None

    def take(self, run_dir: Path) -> None:
        if not env_is_rank_zero():  # the other ranks of a DDP/FSDP run are the holder's own (its children or peers)
            return
        # resolved: hydra.run.dir may be relative to the launch directory, or hold `..` or a symbolic link, while
        # the job's output_dir is another spelling of the same directory; a second flock on the same file from
        # this process (another open file description) would refuse the process itself
        path = run_dir.resolve() / LOCK_FILE
        if self.lock is not None and self.lock.path == path:
            return
        lock = HeldLock(path)
        if not lock.acquire():
            raise RunDirBusy(
                f"{run_dir} is in use by {describe_holder(lock.holder())}: two processes would interleave "
                "their steps in one metrics.csv. Wait for it to end (or stop it), then resume with ckpt_path=last"
            )
        if self.lock is not None:
            self.lock.release()
        self.lock = lock


class _WithoutHydrasFailureLine(io.TextIOBase):
    """stderr without the "Error executing job with overrides: [...]" line Hydra writes when it re-raises a
    failed job's error: rlx reports the error itself, once (rlx.__main__)."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        if text.startswith("Error executing job with overrides:"):
            return len(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


@dataclass(frozen=True)
class FirstFailure:
    """The first failed job of a multirun: the error Hydra's sweeper raises when the batch ends is this job's."""

    number: str
    overrides: str
    job_dir: Path
    sweep_dir: Path

    def describe(self, message: str) -> str:
        """One line for the sweep's end: how many jobs failed of those run, which one this error is, where its
        traceback and the sweep's report are (a bug's traceback is in status.json, not on the console)."""
        failed, ended = FailedJob.failed, FailedJob.ended
        return (
            f"{failed} of the {ended} jobs the sweep ran failed; the first, #{self.number} ({self.overrides}): "
            f"{message} (its traceback: {self.job_dir / 'status.json'}; the sweep's report: "
            f"{self.sweep_dir / 'report.md'})"
        )


class FailedJob(Callback):
    """Counts a multirun's jobs and failed jobs, and remembers the first failure (the error names it). Class
    attributes: Hydra's basic launcher runs every job in this process (a parallel launcher's workers keep theirs)."""

    first: FirstFailure | None = None
    failed = 0
    ended = 0

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if config.hydra.mode == RunMode.MULTIRUN:
            FailedJob.ended += 1
        if job_return.status != JobStatus.FAILED:
            return
        if config.hydra.mode == RunMode.MULTIRUN:
            FailedJob.failed += 1
            if FailedJob.first is None:
                FailedJob.first = FirstFailure(
                    str(config.hydra.job.get("num", "?")),
                    " ".join(job_return.overrides or []),
                    Path(str(config.hydra.runtime.output_dir)),
                    Path(str(config.hydra.sweep.dir)),
                )
        if not isinstance(sys.stderr, _WithoutHydrasFailureLine):
            sys.stderr = _WithoutHydrasFailureLine(sys.stderr)

    @staticmethod
    def restore_stderr() -> None:
        if isinstance(sys.stderr, _WithoutHydrasFailureLine):
            sys.stderr = sys.stderr.stream


class SweepProgress(Callback):
    """`sweep: 3/8 runs done (2 completed, 1 failed)` after each job of a multirun (the total when the sweeper
    says it: the basic sweeper's product of the swept values, optuna's n_trials).

    The count lives in `<sweep dir>/.progress`, a line appended per finished job, not in this object: a parallel
    launcher (joblib) runs each job in a worker holding its own copy of the callbacks, where an in-memory count
    would read 1 after every job."""

    PROGRESS_FILE = ".progress"

    def __init__(self) -> None:
        self.total: int | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.total = sweep_size(config)
        progress_file(config).unlink(missing_ok=True)  # a sweep started again into the same directory counts anew

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if config.hydra.mode != RunMode.MULTIRUN:
            return
        outcome = "completed" if job_return.status == JobStatus.COMPLETED else "failed"
        path = progress_file(config)
        path.parent.mkdir(parents=True, exist_ok=True)
        # one short O_APPEND write per job: workers finishing together never interleave inside a line
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{outcome}\n".encode())
        finally:
            os.close(fd)
        done = Counter(path.read_text(encoding="utf-8").split())
        of = f"/{self.total}" if self.total else ""
        counts = ", ".join(f"{n} {k}" for k, n in sorted(done.items()))
        log.info("sweep: %d%s runs done (%s)", sum(done.values()), of, counts)


def progress_file(config: DictConfig) -> Path:
    return Path(str(config.hydra.sweep.dir)) / SweepProgress.PROGRESS_FILE


def sweep_size(config: DictConfig) -> int | None:
    """The number of jobs a sweep runs, when it can be told in advance."""
    trials = OmegaConf.select(config, "hydra.sweeper.n_trials", default=None)
    if isinstance(trials, int):
        return trials

    task = [str(o) for o in OmegaConf.select(config, "hydra.overrides.task", default=[]) or []]
    params = OmegaConf.select(config, "hydra.sweeper.params", default=None) or {}
    try:  # the sweep config's params first, then the command line, which replaces a key they share
        parsed = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in params.items()] + task)
    except Exception:  # noqa: BLE001 — an unparsable override is Hydra's error to report
        return None
    total = 1
    for override in {o.get_key_element(): o for o in parsed}.values():
        if override.is_sweep_override():
            if not override.is_discrete_sweep():
                return None  # interval(): only a sweeper that samples it knows how many
            total *= len(list(override.sweep_string_iterator()))
    return total
