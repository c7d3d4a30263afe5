"""When the sandbox itself breaks, the sample is INFRA (excluded upstream), never a 0-scored FAIL, and the
pool recovers for the next batch."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from sandbox_helpers import STDLIB_PRELOAD, processes_of

from rlx.rewards.base import Status
from rlx.rewards.sandbox.records import RunResult
from rlx.rewards.unit_tests import UnitTestsReward, decide, encode

ROW = {"tests": ["assert add(1, 2) == 3"]}
LIMITS = dict(wall_s=3.0, cpu_s=2, memory_mb=256, nproc=16, fsize_mb=1, disk_mb=16, record_cap_kb=256)


def test_infra_result_is_labelled_infra():
    assert decide(RunResult.broken("mount failed"), [encode(3)], "fraction").status == Status.INFRA


@pytest.mark.slow
def test_killed_server_gives_infra_then_recovers():
    reward = UnitTestsReward(
        workers=1, scoring="fraction", limits=LIMITS, hide=[], base_uid=61500, preload=STDLIB_PRELOAD
    )
    try:
        reward(["def add(a, b):\n    return a + b\n"], [ROW])  # server up
        server = reward.pool.workers[0].process.pid
        threading.Timer(0.5, lambda: os.kill(server, signal.SIGKILL)).start()
        started = time.monotonic()
        broken = reward(["while True:\n    pass\n"], [ROW])[0]
        assert broken.status == Status.INFRA, broken
        assert time.monotonic() - started < 10
        time.sleep(0.3)
        assert processes_of([61500]) == [], "a killed server left its candidate running"
        again = reward(["def add(a, b):\n    return a + b\n"], [ROW])[0]
        assert again.status == Status.PASS
    finally:
        reward.close()
