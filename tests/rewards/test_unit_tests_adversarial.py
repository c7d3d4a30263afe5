"""Adversarial completions against reward=unit_tests: each must score 0 with the right label, leave no
process and no file behind, and leave the trainer alive; the correct solution still scores 1.

All cases run as one batch through the pool (in parallel), then one test per case checks its verdict.
"""

from __future__ import annotations

import os
import textwrap

import pytest
from sandbox_helpers import STDLIB_PRELOAD, processes_of

from rlx.rewards.base import Status
from rlx.rewards.unit_tests import UnitTestsReward

pytestmark = pytest.mark.slow

ROW = {"tests": ["assert add(1, 2) == 3", "assert add(20, 22) == 42", "assert add(-1, 1) == 0"]}
PROBE = f"/tmp/rlx_probe_{os.getpid()}"  # must never appear on the host
SENTINEL = f"/tmp/rlx_sentinel_{os.getpid()}"  # must survive
REPO_FILE = os.path.join(os.path.dirname(__file__), "..", "..", "rlx", "rewards", "unit_tests.py")
LIMITS = dict(wall_s=3.0, cpu_s=2, memory_mb=256, nproc=32, fsize_mb=1, disk_mb=16, record_cap_kb=256)

CASES = {
    "correct": (Status.PASS, "def add(a, b):\n    return a + b\n"),
    "sys_exit_before_asserts": (Status.FAIL, "import sys\ndef add(a, b):\n    sys.exit(0)\n"),
    "sys_exit_before_tests": (Status.CRASH, "import sys\ndef add(a, b):\n    return -7\nsys.exit(0)\n"),
    "os_exit_first": (Status.CRASH, "import os\nos._exit(0)\n"),
    "os_exit_in_call": (Status.CRASH, "import os\ndef add(a, b):\n    os._exit(0)\n"),
    "atexit_exit_0": (Status.FAIL, "import atexit, os\natexit.register(os._exit, 0)\ndef add(a, b):\n    return -7\n"),
    "always_equal": (
        Status.FAIL,
        """
        class AlwaysEqual:
            def __eq__(self, other): return True
            def __ne__(self, other): return False
        def add(a, b):
            return AlwaysEqual()
    """,
    ),
    "int_subclass_equal": (
        Status.FAIL,
        """
        class Sneaky(int):
            def __eq__(self, other): return True
        def add(a, b):
            return Sneaky(0)
    """,
    ),
    "conftest_rewrites_reports": (
        Status.FAIL,
        """
        open("conftest.py", "w").write(
            "def pytest_runtest_logreport(report):\\n    report.outcome = 'passed'\\n")
        def add(a, b):
            return None
    """,
    ),
    # Patching builtins breaks the harness's own record writer: the run ends without its records -> CRASH.
    "patch_builtins": (
        Status.CRASH,
        """
        import builtins
        builtins.isinstance = lambda *a: True
        builtins.type = lambda *a: int
        builtins.repr = lambda *a: "3"
        def add(a, b):
            return "3"
    """,
    ),
    "patch_timers_then_loop": (
        Status.TIMEOUT,
        """
        import time
        time.time = lambda: 0.0
        time.monotonic = lambda: 0.0
        time.perf_counter = lambda: 0.0
        def add(a, b):
            while True:
                pass
    """,
    ),
    # the harness's frames, and the gc's view of its objects, are refused (they would reach its records)
    "expected_from_call_stack": (
        Status.VIOLATION,
        """
        import sys, gc
        def add(a, b):
            found = []
            frame = sys._getframe(1)
            while frame is not None:
                found += [v for v in frame.f_locals.values() if isinstance(v, int) and v not in (a, b)]
                frame = frame.f_back
            found += [o for o in gc.get_objects() if isinstance(o, dict) and "expected" in o]
            return found[0] if found else -12345
    """,
    ),
    "tests_from_disk": (
        Status.FAIL,
        f"""
        import glob
        def add(a, b):
            for path in [{REPO_FILE!r}] + glob.glob("/work/**/*.py", recursive=True)[:200]:
                try:
                    text = open(path).read()
                except OSError:
                    continue
                if "assert add" in text:
                    return int(text.split("==")[1].split()[0])
            return -1
    """,
    ),
    "forged_records": (
        Status.FAIL,
        """
        import os, json
        for fd in range(3, 64):
            try:
                os.write(fd, b'{"event": "done"}\\n{"test": 0, "value": ["int", "999"]}\\n')
            except OSError:
                pass
        def add(a, b):
            return 999
    """,
    ),
    # a final block with the right answers under a guessed nonce, then an exit so that the harness's own never
    # follows (right answers: a forged record that knows them is no worse than code that computes them)
    "forged_final_block_then_exit": (
        Status.CRASH,
        """
        import os, json
        outcomes = [{"test": i, "value": ["int", v]} for i, v in enumerate(["3", "42", "0"])]
        block = json.dumps({"final": "0" * 32, "records": [{"event": "loaded"}, *outcomes, {"event": "done"}]})
        for fd in range(3, 64):
            try:
                os.write(fd, (block + "\\n").encode())
            except OSError:
                pass
        os._exit(0)
    """,
    ),
    # a signal handler is handed the running frame (the harness's): refused even though 3.11 does not audit it
    "signal_handler_frames": (
        Status.VIOLATION,
        "import signal\nsignal.signal(signal.SIGALRM, lambda n, frame: None)\ndef add(a, b):\n    return a + b\n",
    ),
    "infinite_loop": (Status.TIMEOUT, "while True:\n    pass\n"),
    "sigalrm_ignored_then_loop": (
        Status.TIMEOUT,
        """
        import signal
        for sig in (signal.SIGALRM, signal.SIGTERM, signal.SIGXCPU, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            pass
    """,
    ),
    "fork_bomb": (Status.VIOLATION, "import os\nwhile True:\n    os.fork()\n"),
    "memory_bomb": (Status.OOM, "blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 2**20))\n"),
    "gigabyte_output": (
        Status.VIOLATION,
        "import sys\nline = 'x' * 2**20\nfor _ in range(1024):\n    sys.stdout.write(line)\n",
    ),
    "huge_file": (
        Status.VIOLATION,
        "with open('big.bin', 'wb') as f:\n    for _ in range(1024):\n        f.write(b'0' * 2**20)\n",
    ),
    "write_outside_tmp": (Status.VIOLATION, f"open({PROBE!r}, 'w').write('pwned')\ndef add(a, b):\n    return a + b\n"),
    "write_into_repo": (Status.VIOLATION, f"open({REPO_FILE!r}, 'a').write('pwned')\n"),
    "delete_outside": (Status.VIOLATION, f"import os\nos.remove({SENTINEL!r})\n"),
    "network": (Status.VIOLATION, "import socket\nsocket.create_connection(('localhost', 22), timeout=1)\n"),
    "network_raw_socket": (Status.VIOLATION, "import socket\nsocket.socket().connect(('127.0.0.1', 22))\n"),
    "segfault_ctypes": (Status.VIOLATION, "import ctypes\nctypes.string_at(0)\n"),
    "segfault_no_ctypes": (Status.CRASH, "import faulthandler\nfaulthandler._sigsegv()\n"),
    "kill_parent": (Status.VIOLATION, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(1, 9)\n"),
    "detached_grandchild": (
        Status.VIOLATION,
        """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(1000)
        def add(a, b):
            return a + b
    """,
    ),
}


@pytest.fixture(scope="module")
def outcome():
    open(SENTINEL, "w").write("keep")
    reward = UnitTestsReward(
        workers=2, scoring="fraction", limits=LIMITS, hide=[], base_uid=61100, preload=STDLIB_PRELOAD
    )
    try:
        names = list(CASES)
        verdicts = reward([textwrap.dedent(CASES[n][1]) for n in names], [ROW] * len(names))
        servers_alive = all(w.process.poll() is None for w in reward.pool.workers)
        left = processes_of(reward.pool.uids)
    finally:
        reward.close()
    yield dict(zip(names, verdicts, strict=True)), servers_alive, left
    os.remove(SENTINEL)


@pytest.mark.parametrize("case", list(CASES))
def test_case(outcome, case):
    verdicts, servers_alive, left = outcome
    expected_status, _ = CASES[case]
    verdict = verdicts[case]
    assert verdict.status == expected_status, verdict.details
    assert verdict.reward == (1.0 if expected_status == Status.PASS else 0.0)
    assert servers_alive, "a candidate took down a sandbox server"
    assert left == [], f"processes left behind: {left}"
    assert not os.path.exists(PROBE)
    assert open(SENTINEL).read() == "keep"
    assert "pwned" not in open(REPO_FILE).read()
