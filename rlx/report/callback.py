"""When a sweep ends, write report.md, report.csv and PNG curves into the sweep directory (and a W&B Report
when the runs went to W&B online).

Failure handling — a sweep with a crashed job still gets its report:
- each job's outcome is recorded in `<job_dir>/status.json` by `on_job_start` ("running") and `on_job_end`
  ("completed" / "failed" with the error): Hydra's `run_job` catches the job's exception, marks the job
  FAILED and still calls `on_job_end`, so the remaining jobs of the batch run;
- Hydra's sweepers then raise on the first failed job, which skips `on_multirun_end`; an `atexit` hook
  registered in `on_multirun_start` writes the report in that case, so it appears however the sweep ends
  (the command still exits non-zero, as a failed sweep should). A job killed outright (OOM, SIGKILL) stays
  "running" in the report; `python -m rlx.report <sweep_dir>` rebuilds it at any time.

A Hydra callback is not a discovered plugin: conf/hydra/callbacks/sweep_report.yaml names this class by
`_target_` and conf/config.yaml selects it, so it lives with the report code and works in every install mode.
It is built in every Hydra process (and in each joblib/submitit worker): it imports only the standard
library and Hydra at module level; matplotlib and wandb are imported when a sweep ends.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import logging
import shlex
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from rlx.cli import status
from rlx.cli.files import write_json
from rlx.cli.hydra_callbacks import sweep_size
from rlx.distributed.env import env_is_rank_zero

log = logging.getLogger(__name__)


def _sweep_dir(config: DictConfig) -> Path:
    return Path(str(config.hydra.sweep.dir))


def _job_dir(config: DictConfig) -> Path:
    return Path(str(config.hydra.runtime.output_dir))


def swept_keys(config: DictConfig) -> list[str]:
    """Keys the sweep varies: command-line sweep overrides (`a=1,2`, `range()`, `interval()`...) and the keys
    of `hydra.sweeper.params`."""
    keys: list[str] = []
    task = list(OmegaConf.select(config, "hydra.overrides.task", default=[]) or [])
    try:
        parsed = OverridesParser.create().parse_overrides(task)
    except Exception:  # noqa: BLE001 — an unparsable override is Hydra's error to report, not ours
        parsed = []
    keys += [o.get_key_element().lstrip("+~") for o in parsed if o.is_sweep_override()]
    params = OmegaConf.select(config, "hydra.sweeper.params", default=None)
    if params:
        keys += [str(k) for k in params]
    return list(dict.fromkeys(keys))


class SweepReport(Callback):
    """Args:
    wandb_report: also build a W&B Report of the sweep's group when its runs were logged online.
    fail_on_failed_jobs: with a sweeper that tolerates failures (optuna's `max_failure_rate`), still exit
        non-zero after the report when a job failed.
    """

    def __init__(self, wandb_report: bool, fail_on_failed_jobs: bool) -> None:
        self.wandb_report = wandb_report
        self.fail_on_failed_jobs = fail_on_failed_jobs
        self._config: DictConfig | None = None
        self._done = False
        self._job_cpu = 0.0

    # ---------------------------------------------------------------- sweep
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # deferred: rlx.report.* loads numpy and the report modules; Hydra loads this callback in every run
        from rlx.report.provenance import collect
        from rlx.report.runs import SWEEP_FILE, sweep_name

        sweep_dir = _sweep_dir(config)
        write_json(
            sweep_dir / SWEEP_FILE,
            {
                "name": sweep_name(sweep_dir),
                "swept": swept_keys(config),
                "command": shlex.join(["python", "-m", "rlx", *sys.argv[1:]]),
                "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                "provenance": collect(),  # the code and packages that ran, not those that rebuild the report
            },
        )
        self._config, self._done = config, False
        atexit.register(self._report_at_exit)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        failed = self._report(config)
        if failed and self.fail_on_failed_jobs:
            raise RuntimeError(f"{failed} job(s) of the sweep failed: see {_sweep_dir(config) / 'report.md'}")

    def _report_at_exit(self) -> None:
        if not self._done and self._config is not None:  # a failed job made the sweeper raise (or a signal came)
            self._report(self._config)

    def _report(self, config: DictConfig) -> int:
        """Writes the local report, then tries the W&B one. Returns the number of failed jobs."""
        self._done = True
        sweep_dir = _sweep_dir(config)
        try:
            # deferred: rlx.report.* loads numpy and the report modules; Hydra loads this callback in every run
            from rlx.report import write_report
            from rlx.report.runs import load_sweep

            path = write_report(sweep_dir)
            _, runs = load_sweep(sweep_dir)
            failed = sum(r.status != "completed" for r in runs)
            total = sweep_size(config)
            never = f", {total - len(runs)} of its {total} never ran" if total and total > len(runs) else ""
            print(f"sweep report: {path} ({len(runs)} runs, {failed} not completed{never})", flush=True)
        except Exception:  # noqa: BLE001 — a broken report must not hide the runs' own results
            log.error("could not write the sweep report for %s:\n%s", sweep_dir, traceback.format_exc())
            return 0
        if self.wandb_report:
            # deferred: rlx.report.wandb imports Lightning's WandbLogger; only W&B runs need it
            from rlx.report.wandb import report_sweep

            line = report_sweep(sweep_dir, runs)
            if line:
                print(line, flush=True)
        return failed

    # ---------------------------------------------------------------- each job (runs in the job's process)
    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not env_is_rank_zero():  # a run over several processes (trainer=ddp): rank 0 speaks for the job
            return
        self._job_cpu = time.process_time()  # this process's CPU seconds (every thread) before the job
        status.start_job()
        write_json(
            _job_dir(config) / "status.json", {"status": "running", "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        )

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if not env_is_rank_zero():
            return
        failed = job_return.status == JobStatus.FAILED
        # cpu_s: the job's CPU time, what its wall time would be on one idle core (a shared machine inflates
        # wall times, not CPU times, much); a sweep's budget on k idle cores is about Σ cpu_s / k.
        doc: dict = {
            "status": "failed" if failed else "completed",
            "ended": time.strftime("%Y-%m-%d %H:%M:%S"),
            "cpu_s": round(time.process_time() - self._job_cpu, 1),
            "cpu_s_by_phase": status.cpu_by_phase(),  # the warm start's share, built once per seed and cached
        }
        if failed:
            try:  # public API: for a failed job it writes Hydra's "Error executing job" line, then raises the error
                with contextlib.redirect_stderr(io.StringIO()):  # rlx reports the error itself, once
                    job_return.return_value  # noqa: B018
            except BaseException as raised:  # noqa: BLE001  the job's own error, whatever its type, is recorded
                err = raised
            else:
                err = RuntimeError("the job failed without an exception")
            doc["error"] = f"{type(err).__name__}: {err}"
            doc["traceback"] = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        if "wandb" in sys.modules:
            # deferred: rlx.report.wandb imports Lightning's WandbLogger; only W&B runs need it
            from rlx.report.wandb import finish_run, run_url

            doc["wandb_url"] = run_url()  # None offline: the report links online runs only
        write_json(_job_dir(config) / "status.json", doc)
        if "wandb" in sys.modules:  # end this job's W&B run, so the next job of the process starts its own
            finish_run(failed)
