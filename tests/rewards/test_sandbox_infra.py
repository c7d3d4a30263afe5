"""The checker's side of the sandbox: a session that ends early raises Ended with its label; a jail that breaks
gives INFRA (excluded upstream, never a 0-scored FAIL) and is restarted for the next program; a checker bug
propagates."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from sandbox_helpers import jailed_processes

from rlx.rewards.base import Status
from rlx.rewards.sandbox.session import Ended, Failure, Limits, RunFacts, Sandbox, ended_status
from rlx.rewards.unit_tests import decide

LIMITS = Limits(wall_s=3.0, cpu_s=2, memory_mb=256, disk_mb=16, output_kb=256)


def test_ended_labels():
    assert ended_status(RunFacts(timed_out=True))[0] == Status.TIMEOUT
    assert ended_status(RunFacts(signal=signal.SIGKILL, cpu_s=2.0, cpu_limit_s=2))[0] == Status.TIMEOUT
    assert ended_status(RunFacts(signal=signal.SIGKILL, cpu_s=0.1, cpu_limit_s=2))[0] == Status.OOM
    assert ended_status(RunFacts(overflow=True))[0] == Status.VIOLATION
    assert ended_status(RunFacts(signal=signal.SIGXFSZ))[0] == Status.VIOLATION
    assert ended_status(RunFacts(exit_code=0))[0] == Status.CRASH
    assert decide(Failure(Status.INFRA, "jail died", RunFacts()), [3], "fraction").status == Status.INFRA


@pytest.mark.slow
def test_ended_session_then_killed_jail_then_recovery():
    with Sandbox("rlx.rewards.unit_tests_harness", 1, LIMITS, modules=("rlx.rewards.sandbox.values",)) as sandbox:

        def check(session, index):
            session.request({"op": "load"})
            try:
                session.request({"op": "eval", "expr": "f()"})
            except Ended as ended:
                with pytest.raises(Ended):  # the same verdict for every later request
                    session.request({"op": "eval", "expr": "1"})
                return ended.status
            return None

        assert sandbox.map(["import os\ndef f():\n    os._exit(0)\n"], check) == [Status.CRASH]
        zygote = [p for p in jailed_processes() if b"zygote" in open(f"/proc/{p}/cmdline", "rb").read()]
        threading.Timer(0.5, lambda: [os.kill(p, signal.SIGKILL) for p in zygote]).start()
        started = time.monotonic()
        broken = sandbox.map(["def f():\n    while True:\n        pass\n"], check)[0]
        assert isinstance(broken, Failure) and broken.status == Status.INFRA, broken
        assert time.monotonic() - started < 10
        assert sandbox.map(["def f():\n    return 1\n"], check) == [None]  # restarted
        assert sandbox.restarts == 1
    assert jailed_processes() == []


@pytest.mark.slow
def test_a_checker_bug_propagates():
    with Sandbox("rlx.rewards.unit_tests_harness", 1, LIMITS, modules=("rlx.rewards.sandbox.values",)) as sandbox:

        def check(session, index):
            raise KeyError("checker bug")

        with pytest.raises(KeyError):
            sandbox.map(["x = 1"], check)


@pytest.mark.slow
def test_a_request_deadline_ends_the_session_as_timeout():
    with Sandbox("rlx.rewards.unit_tests_harness", 1, LIMITS, modules=("rlx.rewards.sandbox.values",)) as sandbox:

        def check(session, index):
            session.request({"op": "load"})
            fast = session.request({"op": "eval", "expr": "f(0)"}, timeout_s=1.0)[0]
            try:
                session.request({"op": "eval", "expr": "f(1)"}, timeout_s=0.3)
            except Ended as ended:
                return fast, ended.status
            return fast, None

        program = "def f(slow):\n    while slow:\n        pass\n    return 7\n"
        assert sandbox.map([program, program], check) == [({"value": ["int", "7"]}, Status.TIMEOUT)] * 2
