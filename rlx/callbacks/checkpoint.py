"""Checkpointing (the `checkpoint` group): periodic, timed, on-signal and final checkpoints, written so that
last.ckpt is always the newest complete one, and the per-step seeding that makes a resume exact.

When a checkpoint is due at the end of RL step k-1 (trainer.global_step = k), it is written where Lightning's
own ModelCheckpoint writes (on_train_batch_end: the loops then restore as "step k-1 done, its evaluation
done"), into a temporary file. It is renamed to last.ckpt at the start of step k (or at the end of training),
once the step's metrics row and any evaluation after it are on disk: a SIGKILL at any instant leaves a
last.ckpt whose every earlier row is in metrics.csv, and the rows after it are dropped on resume
(rlx.callbacks.resume). A rename is atomic, so a crash mid-write never damages last.ckpt.

The signals of checkpoint.signals (SIGTERM, SIGINT, SIGUSR1) do not stop a step halfway: rlx.cli.stop's one
handler only records the signal; the step finishes, its checkpoint is written and committed, and the process
exits with 128 + the signal number. A signal that arrives while a checkpoint is being written waits for the
write; one that arrives during the write after the step's agreement is agreed again once the file is written,
so the run still stops at this step. A second signal stops at once, without this step's checkpoint (the
previous last.ckpt stays). Lightning's own handlers (its SIGTERM flag, SLURMEnvironment's auto_requeue, which
saves an hpc checkpoint from inside the handler wherever the step is) are replaced for these signals while the
RL loop runs. As Lightning does, SIGUSR1 (SLURM's `--signal=USR1@<s>` warning) may requeue the job:
checkpoint.requeue.

A full disk while a checkpoint is written removes the half-written file and ends the run with one line naming
the file, the free space and the fix (rlx.cli.files); the previous last.ckpt, metrics.csv and samples stay.

Every RL step first reseeds the global RNGs from (seed, step) (rlx.seeding), so what a step draws does not
depend on what ran before it in this process: a resumed run repeats the uninterrupted run exactly.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
import warnings
from pathlib import Path

from lightning.pytorch.callbacks import Checkpoint

from rlx.callbacks.resume import LAST, NUMBERED, RECORD
from rlx.cli import stop
from rlx.cli.files import guarded, remove, temp_dir
from rlx.distributed.world import World, agreed_signal
from rlx.peak_memory import peak_rss_mb
from rlx.seeding import seed_step

log = logging.getLogger(__name__)


class Interrupted(SystemExit):
    """Raised at a step boundary after the on-signal checkpoint: a multirun stops too (a SystemExit is
    not a failed job that Hydra would step over), and the exit status is 128 + the signal number."""

    def __init__(self, signum: int, step: int, checkpoint: Path) -> None:
        super().__init__(128 + signum)
        self.signum, self.step, self.checkpoint = signum, step, checkpoint


def checkpoint_fix(dirpath: Path) -> str:
    """What to do after a full disk stopped a checkpoint: the last complete one (if any) is intact."""
    last = dirpath / LAST
    then = (
        f"then resume with ckpt_path=last ({last} is intact)"
        if last.is_file()
        else "then run the command again (no checkpoint had been written yet)"
    )
    return f"free space there, {then}; checkpoint.dirpath=<dir> puts checkpoints on another disk"


class Checkpointing(Checkpoint):
    def __init__(
        self,
        dirpath: str,
        every_n_steps: int | None,
        every_minutes: float | None,
        keep: int,
        signals: list[str],
        requeue: bool,
        match: list[str],
        match_ignore: list[str],
        seed: int,
    ) -> None:
        if every_n_steps is not None and (not isinstance(every_n_steps, int) or every_n_steps < 1):
            raise ValueError(f"checkpoint.every_n_steps must be a step count >= 1 or null (got {every_n_steps!r})")
        if every_minutes is not None and not every_minutes > 0:
            raise ValueError(f"checkpoint.every_minutes must be > 0 or null (got {every_minutes!r})")
        if not isinstance(keep, int) or keep < -1:
            raise ValueError(
                f"checkpoint.keep counts the step=<N>.ckpt copies kept: 0 for none, -1 for all (got {keep!r})"
            )
        unknown = [name for name in signals if not isinstance(getattr(signal, str(name), None), signal.Signals)]
        if unknown or any(name in ("SIGKILL", "SIGSTOP") for name in signals):
            raise ValueError(
                f"checkpoint.signals holds {unknown or signals} which cannot be handled: use signal names "
                "such as [SIGTERM, SIGUSR1], or [] for none"
            )
        super().__init__()
        self.dirpath = Path(dirpath)
        self.every_n_steps, self.every_minutes, self.keep = every_n_steps, every_minutes, keep
        self.signals = [getattr(signal, name) for name in signals]
        self.requeue, self.seed = requeue, seed
        self.match, self.match_ignore = list(match), list(match_ignore)  # read by Resume.prepare from the config
        self.identity: dict = {}  # this config's resolved `match` nodes (Resume.attach)
        self.record: dict = {}  # the run record of the checkpoint this segment resumed
        self.first_step = 0
        self.started = time.perf_counter()
        self.last_saved = time.monotonic()
        self.pending: tuple[Path, int] | None = None  # written, not yet renamed to last.ckpt
        self.committed_step: int | None = None  # the step of the newest last.ckpt this segment wrote
        self.received: int | None = None  # the signal every rank has agreed on (agreed_signal)

    def begin_segment(self, identity: dict, record: dict, step: int, started: float) -> None:
        self.identity, self.record, self.first_step, self.started = identity, record, step, started

    # ---------------------------------------------------------------- writing
    @property
    def caught(self) -> int | None:
        """The stop signal this process received, if it is one this callback acts on (rlx.cli.stop records it)."""
        signum = stop.pending()
        return signum if signum in self.signals else None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        step = trainer.global_step
        # several ranks: every rank stops after the same step. The handler records the signal in rlx.cli.stop,
        # never in `received`: a signal that arrives while agreed_signal waits for the other ranks is handled when
        # the wait returns, and an assignment to the value being agreed would then be overwritten by the
        # agreement's result (the signal lost, the run not stopped); it is agreed at the next agreement instead.
        self.received = agreed_signal(self.caught)
        due = (
            self.received is not None
            or trainer.should_stop
            or step >= trainer.max_steps
            or (self.every_n_steps is not None and step % self.every_n_steps == 0)
            or (self.every_minutes is not None and time.monotonic() - self.last_saved >= 60 * self.every_minutes)
        )
        if due:
            self.save(trainer, step)
        if self.received is None:  # (agreed: the same on every rank, so every rank takes part in what follows)
            self.received = agreed_signal(self.caught)  # a signal that came while the checkpoint was written
            if self.received is not None and not due:
                self.save(trainer, step)

    def save(self, trainer, step: int) -> None:
        """The full training state into a temporary file (rank 0 writes it), renamed to last.ckpt by `commit`."""
        self.dirpath.mkdir(parents=True, exist_ok=True)
        partial = self.dirpath / f".{LAST}.partial"
        fix = checkpoint_fix(self.dirpath)
        # a signal waits for the write; a full disk removes the partial file and ends the run in one line (the
        # file is staged in the temp directory first: Lightning's fsspec transaction)
        with guarded(self.dirpath / LAST, "the checkpoint", fix, partial=partial, staged_in=temp_dir()):
            trainer.save_checkpoint(partial, weights_only=False)
            if World.current().is_zero:
                with partial.open("rb") as handle:
                    os.fsync(handle.fileno())
            self.pending, self.last_saved = (partial, step), time.monotonic()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.commit()
        if self.received is None:  # a signal during the evaluation after the last step: agreed before this one
            self.received = agreed_signal(self.caught)
        if self.received is not None and self.committed_step == trainer.global_step:
            self.exit(trainer)  # else the signal came after this step's checkpoint was due: one more step
        stop.check()  # a signal this callback does not act on (or a second one): stop now
        seed_step(self.seed, trainer.global_step)
        # Each metrics.csv row holds this step's values only: the step's metrics reach the loggers through
        # rlx.callbacks.step_metrics, never through Lightning's result collection (which, within an epoch, would
        # re-log a sporadic key's stale value in every later row).

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0) -> None:
        stop.check()  # an evaluation outside the RL loop stops between batches too, if a raise was lost

    def on_train_end(self, trainer, pl_module) -> None:
        self.commit()
        self.restore_handlers()
        if self.received is None:
            self.received = agreed_signal(self.caught)  # a signal during the last step: it stops before evaluation
        if self.received is not None and self.committed_step == trainer.global_step:
            self.exit(trainer)

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:
        """A step that raised may have left no metrics row: its checkpoint is discarded, the previous stays."""
        if self.pending is not None and not isinstance(exception, Interrupted):
            remove(self.pending[0])
            self.pending = None
        self.restore_handlers()

    def commit(self) -> None:
        if self.pending is None:
            return
        partial, step = self.pending
        if not World.current().is_zero:  # rank 0 alone renames and links the file it wrote
            self.pending, self.committed_step = None, step
            return
        last = self.dirpath / LAST
        with stop.deferred("the checkpoint's rename"):
            os.replace(partial, last)
            self.pending, self.committed_step = None, step
            if self.keep != 0:
                self.link_numbered(last, step)
            directory = os.open(self.dirpath, os.O_RDONLY)
            try:
                os.fsync(directory)  # the rename itself survives a power loss
            finally:
                os.close(directory)
        log.info("checkpoint at step %d: %s", step, last)

    def link_numbered(self, last: Path, step: int) -> None:
        """step=<N>.ckpt beside last.ckpt (a hard link: no copy), and only the newest `keep` of them."""
        numbered = self.dirpath / f"step={step}.ckpt"
        numbered.unlink(missing_ok=True)
        try:
            os.link(last, numbered)  # a second name for the same file: no copy, no extra disk
        except OSError:
            with guarded(numbered, "a step-numbered copy of the checkpoint", checkpoint_fix(self.dirpath), numbered):
                numbered.write_bytes(last.read_bytes())
        steps = sorted(int(m.group(1)) for p in self.dirpath.iterdir() if (m := NUMBERED.fullmatch(p.name)))
        for old in steps[: -self.keep] if self.keep > 0 else []:
            (self.dirpath / f"step={old}.ckpt").unlink(missing_ok=True)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        segment = {
            "from_step": self.first_step,
            "to_step": trainer.global_step,
            "wall_s": round(time.perf_counter() - self.started, 1),
        }
        checkpoint[RECORD] = {
            "identity": self.identity,
            "seed": self.seed,
            "max_steps": trainer.max_steps,
            "segments": [*self.record.get("segments", []), segment],
            "peak_rss_mb": round(max(peak_rss_mb(), self.record.get("peak_rss_mb", 0.0)), 1),
        }

    def on_load_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        self.record, self.first_step = checkpoint.get(RECORD, self.record), int(checkpoint["global_step"])

    # ---------------------------------------------------------------- resuming
    def on_train_start(self, trainer, pl_module) -> None:
        self.last_saved = time.monotonic()
        self.install_handlers()
        saved = self.record.get("max_steps")
        if self.first_step > 0 and saved is not None and saved != trainer.max_steps:
            self.continue_schedule(trainer, saved)

    def continue_schedule(self, trainer, saved_max_steps: int) -> None:
        """A resume with another trainer.max_steps (extending a finished run): the LR schedules are the
        configured ones over the new max_steps, taken up at the checkpoint's step; the log says what changes."""
        changes = []
        for config in trainer.lr_scheduler_configs:
            scheduler = config.scheduler
            before = scheduler.get_last_lr()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # get_lr outside step() warns; at last_epoch it is the closed form
                lrs = scheduler.get_lr()
            for group, lr in zip(scheduler.optimizer.param_groups, lrs, strict=True):
                group["lr"] = lr
            scheduler._last_lr = list(lrs)
            changes.append(f"{before[0]:.3g} -> {lrs[0]:.3g}")
        log.warning(
            "trainer.max_steps=%d, the checkpointed run had %d: the LR schedule (algo.lr_schedule) now spans "
            "%d steps and continues from step %d, so the lr changes %s",
            trainer.max_steps,
            saved_max_steps,
            trainer.max_steps,
            self.first_step,
            ", ".join(changes) or "(no schedule)",
        )

    # ---------------------------------------------------------------- signals
    def install_handlers(self) -> None:
        """From now to the end of the RL loop the loop itself acts on `signals`, at its step boundaries (rlx.cli.stop
        routes them there; Lightning's own handlers, installed when fit starts, are replaced)."""
        stop.install([*stop.STOP_SIGNALS, *self.signals])
        stop.enter_step_boundaries(self.signals)

    def restore_handlers(self) -> None:
        stop.leave_step_boundaries()
        stop.uninstall(self.signals)

    def exit(self, trainer) -> None:
        assert self.received is not None, "exit() follows a received signal"
        if self.requeue and self.received == signal.SIGUSR1:
            requeue_slurm_job()
        raise Interrupted(self.received, trainer.global_step, self.dirpath / LAST)


def requeue_slurm_job() -> None:
    """`scontrol requeue <job>` for this SLURM job (array jobs as <array>_<task>), as Lightning's handler does."""
    job = os.environ.get("SLURM_JOB_ID")
    if os.environ.get("SLURM_ARRAY_JOB_ID") and os.environ.get("SLURM_ARRAY_TASK_ID"):
        job = f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ['SLURM_ARRAY_TASK_ID']}"
    if not job:
        log.warning("checkpoint.requeue=true, but this is not a SLURM job (no SLURM_JOB_ID): not requeued")
        return
    try:
        done = subprocess.run(["scontrol", "requeue", job], check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        log.warning("could not requeue SLURM job %s: %s", job, err)
        return
    if done.returncode == 0:
        log.info("requeued SLURM job %s", job)
    else:
        log.warning("scontrol requeue %s failed (%d): %s", job, done.returncode, done.stderr.strip())
