"""The checker's side of the sandbox: a session that ends early raises Ended with its label; a jail that breaks
gives INFRA (excluded upstream, never a 0-scored FAIL) and is restarted for the next program; a checker bug
propagates."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest
from sandbox_helpers import RUN_UID_OFFSET, jailed_processes, left_behind

from rlx.rewards.base import Status
from rlx.rewards.code.reward import MODULES
from rlx.rewards.sandbox.jail_process import JailBroken
from rlx.rewards.sandbox.session import (
    Ended,
    Failure,
    Limits,
    RunFacts,
    Sandbox,
    SandboxUnavailable,
    Session,
    ended_status,
)
from tests.rewards.sandbox_helpers import configured_unit_tests_reward

LIMITS = Limits(wall_s=3.0, cpu_s=2, memory_mb=256, disk_mb=16, output_kb=256)
JAIL_UID, DEADLOCK_UID = 61550 + RUN_UID_OFFSET, 61800 + RUN_UID_OFFSET  # as root: uids no other test uses


def test_ended_labels():
    assert ended_status(RunFacts(timed_out=True))[0] == Status.TIMEOUT
    assert ended_status(RunFacts(signal=signal.SIGKILL, cpu_s=2.0, cpu_limit_s=2))[0] == Status.TIMEOUT
    assert ended_status(RunFacts(signal=signal.SIGKILL, cpu_s=0.1, cpu_limit_s=2))[0] == Status.OOM
    assert ended_status(RunFacts(overflow=True))[0] == Status.VIOLATION
    assert ended_status(RunFacts(signal=signal.SIGXFSZ))[0] == Status.VIOLATION
    assert ended_status(RunFacts(exit_code=0))[0] == Status.CRASH


def test_a_candidate_whose_setup_failed_breaks_the_jail_not_the_sample():
    """E facts with started=False (the candidate died before its setup wrote `ready`): the jail is broken (INFRA,
    restarted), not a CRASH the program would be scored 0 for; started=True with the same exit is the program's."""
    session = Session(None, LIMITS)  # type: ignore[arg-type]  # _finish reads only the facts
    failed = json.dumps({"exit_code": 70, "started": False, "output_tail": "sandbox session setup failed: x"})
    with pytest.raises(JailBroken, match="setup failed"):
        session._finish(failed.encode())
    with pytest.raises(Ended) as ended:
        session._finish(json.dumps({"exit_code": 70, "started": True}).encode())
    assert ended.value.status == Status.CRASH


@pytest.mark.slow
def test_ended_session_then_killed_jail_then_recovery():
    with Sandbox("rlx.rewards.unit_tests_harness", 1, LIMITS, modules=MODULES, base_uid=JAIL_UID) as sandbox:

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
        jail = jailed_processes() if os.getuid() else [p for p in jailed_processes() if p in left_behind([JAIL_UID])]
        zygote = [p for p in jail if b"zygote" in open(f"/proc/{p}/cmdline", "rb").read()]
        threading.Timer(0.5, lambda: [os.kill(p, signal.SIGKILL) for p in zygote]).start()
        started = time.monotonic()
        broken = sandbox.map(["def f():\n    while True:\n        pass\n"], check)[0]
        assert isinstance(broken, Failure) and broken.status == Status.INFRA, broken
        assert time.monotonic() - started < 10
        assert sandbox.map(["def f():\n    return 1\n"], check) == [None]  # restarted
        assert sandbox.restarts == 1
    assert left_behind([JAIL_UID]) == []


@pytest.mark.slow
def test_a_jail_killed_between_programs_is_restarted_and_the_log_says_so(caplog):
    """A jail killed while no program runs on it (a training step spends most of its time generating) is found
    dead by the next program, restarted and logged: the restart never depends on when the kill landed."""
    with Sandbox("rlx.rewards.unit_tests_harness", 1, LIMITS, modules=MODULES) as sandbox:
        load = lambda session, index: session.request({"op": "load"})[0]["ok"]  # noqa: E731
        assert sandbox.map(["x = 1"], load) == [True]
        jail = sandbox.workers[0].process
        os.kill(jail.pid, signal.SIGKILL)
        jail.wait()  # dead and reaped before the next program: the case the log used to miss
        with caplog.at_level("WARNING", logger="rlx.rewards.sandbox.session"):
            assert sandbox.map(["x = 2"], load) == [True]
        assert sandbox.restarts == 1
    assert "jail 0 exited between programs" in caplog.text and "restarting it" in caplog.text


@pytest.mark.slow
def test_a_checker_bug_propagates():
    with Sandbox("rlx.rewards.unit_tests_harness", 1, LIMITS, modules=MODULES) as sandbox:

        def check(session, index):
            raise KeyError("checker bug")

        with pytest.raises(KeyError):
            sandbox.map(["x = 1"], check)


@pytest.mark.slow
def test_a_request_deadline_ends_the_session_as_timeout():
    with Sandbox("rlx.rewards.unit_tests_harness", 1, LIMITS, modules=MODULES) as sandbox:

        def check(session, index):
            session.request({"op": "load"})
            fast = session.request({"op": "eval", "expr": "f(0)"}, timeout_s=1.0)[0]
            try:
                session.request({"op": "eval", "expr": "f(1)"}, timeout_s=0.3)
            except Ended as ended:
                return fast, ended.status
            return fast, None

        program = "def f(slow):\n    while slow:\n        pass\n    return 7\n"
        assert sandbox.map([program, program], check) == [({"value": {"root": ["int", "7"]}}, Status.TIMEOUT)] * 2


@pytest.mark.slow
def test_no_jail_means_no_reward(monkeypatch):
    """Where the jail cannot be built, the reward refuses to start with one line, instead of running unsandboxed."""
    import rlx.rewards.sandbox.session as session

    real = session.jail_config
    monkeypatch.setattr(session, "jail_config", lambda *a: {**real(*a), "python": "/nonexistent/python3"})
    with pytest.raises(SandboxUnavailable) as refused:
        configured_unit_tests_reward(limits=LIMITS.__dict__, base_uid=DEADLOCK_UID)
    message = str(refused.value)
    assert message.startswith("sandbox unavailable: ") and "\n" not in message and "/nonexistent/python3" in message
    assert left_behind([DEADLOCK_UID, DEADLOCK_UID + 1]) == []


@pytest.mark.slow
def test_big_requests_and_replies_both_ways_do_not_deadlock():
    """A 4 MiB request while the candidate floods 200 KiB of unsolicited replies: both pipes are full at once."""
    limits = Limits(wall_s=10.0, cpu_s=5, memory_mb=256, disk_mb=16, output_kb=1024)
    flood = (
        "import os, struct, json\nbody = json.dumps({'x': 'y' * 4000}).encode()\n"
        "msg = struct.pack('>Q', len(body)) + body\n"
        "for _ in range(50):\n    os.write(4, struct.pack('>Q', len(msg)) + msg)\n"
    )
    with Sandbox("rlx.rewards.unit_tests_harness", 1, limits, modules=MODULES) as sandbox:

        def check(session, index):
            big = {"op": "eval", "expr": "1", "pad": "p" * (4 << 20)}
            return len(session.pipeline([{"op": "load"}, big, big]))  # what comes back: the flood, then the rest

        assert sandbox.map([flood], check) == [3]
