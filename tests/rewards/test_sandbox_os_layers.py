"""Defence in depth: with the audit tripwire switched off, the OS layers alone (PID/net/mount namespaces,
own uid, rlimits, private tmpfs) still contain hostile code: nothing survives, nothing on the host changes,
no connection leaves, and nothing scores."""

from __future__ import annotations

import os
import textwrap

import pytest
from sandbox_helpers import STDLIB_PRELOAD, processes_of

from rlx.rewards.sandbox.isolation import Limits, interpreter_paths_under
from rlx.rewards.sandbox.pool import SandboxPool
from rlx.rewards.unit_tests import HARNESS, decide, encode

pytestmark = pytest.mark.slow

PROBE = f"/tmp/rlx_os_probe_{os.getpid()}"
REPO_FILE = os.path.join(os.path.dirname(__file__), "..", "..", "rlx", "rewards", "unit_tests.py")
CASES = {
    "fork_bomb": "import os\nwhile True:\n    os.fork()\n",
    "detached_grandchild": """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(1000)
            os._exit(0)
        def add(a, b):
            return -7
    """,
    "write_host_tmp": f"open({PROBE!r}, 'w').write('x')\ndef add(a, b):\n    return -7\n",
    "write_repo": f"open({REPO_FILE!r}, 'a').write('pwned')\n",
    "kill_init_and_parent": (
        "import os\nfor pid in (1, os.getppid()):\n"
        "    try:\n        os.kill(pid, 9)\n    except OSError:\n        pass\n"
    ),
    "network": "import socket\nsocket.socket().connect(('127.0.0.1', 22))\n",
}


def test_os_layers_contain_unguarded_code():
    limits = Limits(wall_s=3.0, cpu_s=2, memory_mb=256, nproc=16, fsize_mb=1, disk_mb=16, record_cap_kb=256)
    pool = SandboxPool(2, ("rlx.rewards.unit_tests_harness", *STDLIB_PRELOAD), {}, (), base_uid=61200)
    try:
        jobs = [
            (HARNESS, {"code": textwrap.dedent(code), "calls": ["add(1, 2)"], "guard": False}, limits)
            for code in CASES.values()
        ]
        results = pool.run(jobs)
        assert all(w.process.poll() is None for w in pool.workers)
        assert processes_of(pool.uids) == []
    finally:
        pool.close()
    for name, result in zip(CASES, results, strict=True):
        verdict = decide(result, [encode(3)], "fraction")
        assert verdict.reward == 0.0, (name, verdict)
        assert verdict.status.value != "INFRA", (name, verdict)
    assert not os.path.exists(PROBE)
    assert "pwned" not in open(REPO_FILE).read()


def test_hidden_paths_and_tmp_are_empty_inside():
    """Reference solutions and task generators (rlx/data) are mounted empty; /tmp is a fresh tmpfs."""
    limits = Limits(wall_s=3.0, cpu_s=2, memory_mb=256, nproc=16, fsize_mb=1, disk_mb=16, record_cap_kb=256)
    pool = SandboxPool(1, ("rlx.rewards.unit_tests_harness", *STDLIB_PRELOAD), {}, ("rlx/data",), base_uid=61250)
    data_dir = os.path.join(os.path.dirname(__file__), "..", "..", "rlx", "data")
    assert os.listdir(data_dir), "the host copy must not be empty"
    code = f"import os\ndef seen():\n    return [os.listdir({data_dir!r}), sorted(os.listdir('/tmp'))]\n"
    try:
        result = pool.run([(HARNESS, {"code": code, "calls": ["seen()"], "guard": True}, limits)])[0]
    finally:
        pool.close()
    # Where the checkout or virtualenv itself lives under /tmp, its import paths are bound back read-only.
    bound = {os.path.relpath(p, os.path.realpath("/tmp")).split(os.sep)[0] for p in interpreter_paths_under("/tmp")}
    expected_tmp = sorted({".stdio", "work", *bound})
    assert decide(result, [encode([[], expected_tmp])], "all").status.value == "PASS", result
