"""Shared by the sandbox suites: reward=unit_tests' preload list (conf/'s, not a copy), a check that no
process is left behind under the sandbox uids, and a clean run's result for the rewards' pure `decide`."""

from __future__ import annotations

import os

from omegaconf import OmegaConf

from rlx.rewards.sandbox.records import RunResult
from tests.conftest import CONF

# the stdlib modules each sandbox server of reward=unit_tests imports once
STDLIB_PRELOAD = list(OmegaConf.load(CONF / "reward" / "unit_tests.yaml").preload)


def processes_of(uids: list[int]) -> list[int]:
    """PIDs (host namespace) whose real uid is one of `uids`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) in uids:
                            found.append(int(entry))
                        break
        except OSError:
            continue
    return found


def clean_run(records: list[dict], bad_records: int = 0) -> RunResult:
    """A run that exited 0 within its limits (0.2 s wall, 0.1 s of a 5 s CPU limit) and wrote `records`."""
    return RunResult(
        infra=None,
        records=tuple(records),
        bad_records=bad_records,
        exit_code=0,
        signal=None,
        timed_out=False,
        overflow=False,
        wall_s=0.2,
        cpu_s=0.1,
        max_rss_mb=50.0,
        cpu_limit_s=5,
        output_tail="",
    )
