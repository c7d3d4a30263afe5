"""Adversarial completions against reward=unit_tests (built as conf/reward/unit_tests.yaml builds it), one per
class of issue 26 (written for this suite): each scores 0 with its label, leaves no process, no file and no SysV
IPC object on the host, cannot read a data file in the launch directory, the checkout or the home directory, and
the trainer (this process) never sees an exception; the correct solution still scores 1. The same suite runs as
root and as an unprivileged user (CI).

All cases run as one batch (two workers, in parallel), then one test per case checks its verdict.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sandbox_helpers import RUN_UID_OFFSET, left_behind, sysv_ipc

from rlx.rewards.base import Status
from tests.rewards.sandbox_helpers import configured_unit_tests_reward

pytestmark = pytest.mark.slow

TESTS = ["assert add(1, 2) == 3", "assert add(20, 22) == 42", "assert add(-1, 1) == 0"]
ROW = {"tests": TESTS}
TAG = f"rlx_adv_{os.getpid()}"
REPO = Path(__file__).resolve().parents[2]
# the checkout's tests/ as root; CI's unprivileged run (.ci/run) gives that user .ci-scratch/ in the checkout
CHECKOUT_DIR = REPO / "tests" if os.access(REPO / "tests", os.W_OK) else REPO / ".ci-scratch"
TRAIN_FILES = {  # a user's data file holding the answers, where users keep them
    "launch_dir": Path.cwd() / f"{TAG}_train.jsonl",
    "checkout": CHECKOUT_DIR / f"{TAG}_train.jsonl",
    "home": Path.home() / f"{TAG}_train.jsonl",
}
HOST_PROBES = [
    f"/tmp/{TAG}",
    f"/run/lock/{TAG}",
    f"/dev/shm/{TAG}",
    str(REPO / TAG),
    str(CHECKOUT_DIR / TAG),
    f"/{TAG}",
]
UNIX_SOCKET = f"/tmp/{TAG}.sock"
LIMITS = dict(wall_s=3.0, cpu_s=2, memory_mb=256, disk_mb=16, output_kb=256, fsize_mb=1)
BASE_UID = 61100 + RUN_UID_OFFSET

# a lookup of the asserts found in `texts`: scores 1.0 wherever the answers can be read
LOOKUP = """
import json, re
TABLE = {}
def learn(text):
    for call, want in re.findall(r"(add\\([^)]*\\)) == (-?\\d+)", text):
        TABLE[call.replace(" ", "")] = int(want)
def add(a, b):
    return TABLE.get(f"add({a},{b})", -7)
"""


def read_file(path: Path) -> str:
    return LOOKUP + f"try:\n    learn(open({str(path)!r}).read())\nexcept OSError:\n    pass\n"


CASES: dict[str, tuple[Status, str]] = {
    "correct": (Status.PASS, "def add(a, b):\n    return a + b\n"),
    **{f"train_file_in_{where}": (Status.FAIL, read_file(path)) for where, path in TRAIN_FILES.items()},
    "train_file_anywhere": (
        Status.FAIL,
        LOOKUP
        + f"""
import os
for base, dirs, files in os.walk("/"):  # four levels deep: /work/<tree>/<checkout>/tests, /root, /home/<user>
    dirs[:] = [] if base.count("/") >= 4 else [d for d in dirs if base != "/" or d not in ("proc", "usr", "dev")]
    if True:
        for name in files:
            if name.startswith({TAG!r}):
                try:
                    learn(open(os.path.join(base, name)).read())
                except OSError:
                    pass
""",
    ),
    "host_command_lines": (
        Status.FAIL,
        LOOKUP
        + """
import os
for pid in os.listdir("/proc"):
    try:
        learn(open(f"/proc/{pid}/cmdline").read().replace("\\0", " ").replace("=", " == "))
    except OSError:
        pass
""",
    ),
    "dir_fd_writes": (
        Status.FAIL,
        f"""
import os
for directory in ("/run/lock", "/tmp", "/dev/shm", "/", {str(REPO)!r}, {str(CHECKOUT_DIR)!r}, "/opt/rlx", "/usr"):
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        os.close(os.open({TAG!r}, os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    except OSError:
        pass
def add(a, b):
    return -7
""",
    ),
    "sysv_shared_memory": (
        Status.FAIL,
        """
import ctypes
libc = ctypes.CDLL(None)
SEGMENTS = [libc.shmget(0x5EE0 + i, 8 << 20, 0o1666) for i in range(4)]  # IPC_CREAT | 0666, 8 MiB each
SEMAPHORES, QUEUE = libc.semget(0x5EE9, 1, 0o1666), libc.msgget(0x5EEA, 0o1666)
def add(a, b):
    return -7
""",
    ),
    "host_unix_sockets": (
        Status.FAIL,
        f"""
import socket
REACHED = 0
for address in ({UNIX_SOCKET!r}, "\\0{TAG}"):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(address)
        s.sendall(b"pwned")
        REACHED += 1
    except OSError:
        pass
def add(a, b):
    return -7 - REACHED
""",
    ),
    "fork_to_multiply_memory": (
        Status.FAIL,
        """
import os, time
children = 0
for _ in range(16):
    try:
        if os.fork() == 0:
            hog = bytearray(200 << 20)
            time.sleep(60)
        children += 1
    except OSError:
        break
def add(a, b):
    return -7 - children
""",
    ),
    "threads_to_multiply_memory": (  # 4 x 100 MiB in threads: the process's 256 MiB hold at most two
        Status.FAIL,
        """
import threading
held, refused = [], []
def grab():
    try:
        held.append(bytearray(100 << 20))
    except MemoryError:
        refused.append(1)
threads = [threading.Thread(target=grab) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
def add(a, b):
    return -7 - len(held) - 10 * len(refused)
""",
    ),
    "memory_bomb": (Status.OOM, "blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 2**20))\n"),
    "nested_expression_6000_chars": (Status.CRASH, "def add(a, b):\n    return " + "a+" * 3000 + "b\n"),
    "nested_parentheses": (Status.FORMAT, "def add(a, b):\n    return " + "(" * 3000 + "a+b" + ")" * 3000 + "\n"),
    "deeply_nested_reply": (
        Status.CRASH,
        """
import os, struct
body = b'{"ok": true, "x": ' + b"[" * 100000 + b"]" * 100000 + b"}"
message = struct.pack(">Q", len(body)) + body
os.write(4, struct.pack(">Q", len(message)) + message)  # the candidate's own channel: a forged reply
def add(a, b):
    return a + b
""",
    ),
    "deeply_nested_value": (
        Status.FAIL,
        "def add(a, b):\n    v = a + b\n    for _ in range(100000):\n        v = [v]\n    return v\n",
    ),
    "always_equal": (
        Status.FAIL,
        """
class AlwaysEqual:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __hash__(self): return 0
def add(a, b):
    return AlwaysEqual()
""",
    ),
    "int_subclass_equal": (
        Status.FAIL,
        "class Sneaky(int):\n    def __eq__(self, other): return True\ndef add(a, b):\n    return Sneaky(-7)\n",
    ),
    "sys_exit_0_before_tests": (Status.CRASH, "import sys\ndef add(a, b):\n    return -7\nsys.exit(0)\n"),
    "os_exit_0_first": (Status.CRASH, "import os\nos._exit(0)\n"),
    "os_exit_0_in_call": (Status.CRASH, "import os\ndef add(a, b):\n    os._exit(0)\n"),
    "kill_pid_1_and_all": (
        Status.FAIL,
        "import os\nfor pid in (1, -1, os.getppid()):\n    try:\n        os.kill(pid, 9)\n"
        "    except OSError:\n        pass\ndef add(a, b):\n    return -7\n",
    ),
    "infinite_loop": (Status.TIMEOUT, "while True:\n    pass\n"),
    "flood_the_channel": (
        Status.VIOLATION,
        "import os, struct\nwhile True:\n    os.write(4, struct.pack('>Q', 1 << 20) + bytes(65536))\n",
    ),
    "huge_file": (
        Status.VIOLATION,
        "with open('big.bin', 'wb') as f:\n    for _ in range(64):\n        f.write(b'0' * 2**20)\n",
    ),
}


@pytest.fixture(scope="module")
def outcome():
    for path in TRAIN_FILES.values():
        path.write_text(json.dumps(ROW) + "\n")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(UNIX_SOCKET)
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0{TAG}")
    for s in (listener, abstract):
        s.listen(8)
        s.setblocking(False)
    # a host process whose command line names the answers (as a launch command naming a task file would)
    answers = ["add(1,2)=3", "add(20,22)=42", "add(-1,1)=0"]
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *answers])
    ipc_before = sysv_ipc()
    try:
        reward = configured_unit_tests_reward(limits=LIMITS, base_uid=BASE_UID)
        try:
            names = list(CASES)
            verdicts = reward([textwrap.dedent(CASES[n][1]) for n in names], [ROW] * len(names))
        finally:
            reward.close()
        connections = 0
        for s in (listener, abstract):
            try:
                s.accept()
                connections += 1
            except BlockingIOError:
                pass
        left = left_behind([BASE_UID, BASE_UID + 1])
        yield dict(zip(names, verdicts, strict=True)), left, sysv_ipc() - ipc_before, connections
    finally:
        holder.kill()
        holder.wait()
        listener.close()
        abstract.close()
        os.remove(UNIX_SOCKET)
        for path in TRAIN_FILES.values():
            path.unlink()


@pytest.mark.parametrize("case", list(CASES))
def test_case(outcome, case):
    verdicts, left, new_ipc, connections = outcome
    expected_status, _ = CASES[case]
    verdict = verdicts[case]
    assert verdict.status == expected_status, verdict
    assert verdict.reward == (1.0 if expected_status == Status.PASS else 0.0)
    assert left == [], f"processes left behind: {left}"
    assert new_ipc == set(), f"SysV IPC objects left on the host: {new_ipc}"
    assert connections == 0, "a candidate reached a host unix socket"
    assert [p for p in HOST_PROBES if os.path.exists(p)] == []
    assert str(REPO) not in json.dumps(verdict.details), "a verdict carries host information"


def test_verdicts_carry_no_expected_values(outcome):
    verdicts = outcome[0]
    leaked = [name for name, v in verdicts.items() if '"expected"' in json.dumps(v.details)]
    assert leaked == []
