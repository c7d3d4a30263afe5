"""What a candidate's process sees from inside the jail (rlx.rewards.sandbox): only the allow-listed read-only
files, its own /proc with two processes, no network, no capability, no way to start a process, no memory that
RLIMIT_DATA does not count, a private tmpfs that is the only writable place and is fresh for every session."""

from __future__ import annotations

import os
import sys

import pytest

from rlx.rewards.code.reward import MODULES
from rlx.rewards.sandbox.session import Limits, Sandbox
from rlx.rewards.sandbox.values import decode

pytestmark = pytest.mark.slow
LIMITS = Limits(wall_s=5.0, cpu_s=3, memory_mb=256, disk_mb=16, output_kb=256)

PROBE = """
import os, socket, ctypes, mmap
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_int] * 3 + [
    ctypes.c_long]
def mapped(flags):  # mmap(NULL, 1 MiB, PROT_READ | PROT_WRITE, flags, -1, 0) succeeded
    return libc.mmap(None, 1 << 20, 3, flags, -1, 0) not in (None, ctypes.c_void_p(-1).value)
def file_mapping():  # a shared mapping of a file on the private tmpfs (bounded by its size): allowed
    with open("/tmp/mapped", "wb+") as handle:
        handle.truncate(1 << 16)
        return mmap.mmap(handle.fileno(), 1 << 16)[0] == 0
def status_field(name):
    for line in open("/proc/self/status"):
        if line.startswith(name):
            return line.split()[1]
def can(action):
    try:
        action()
        return True
    except OSError:
        return False
def left_over():
    return sorted(os.listdir("/tmp")) + sorted(os.listdir("/dev/shm"))
def view():
    open("/tmp/mine", "w").write("x")
    return {
        "root": sorted(os.listdir("/")),
        "pids": sorted(p for p in os.listdir("/proc") if p.isdigit()),
        "hostname": socket.gethostname(),
        "uid": os.getuid(),
        "cap_eff": status_field("CapEff:"),
        "seccomp": status_field("Seccomp:"),
        "cwd": os.getcwd(),
        "fork": can(os.fork),
        "thread": can(lambda: __import__("threading").Thread(target=int).start()),
        "write_usr": can(lambda: open("/usr/rlx_probe", "w")),
        "write_opt": can(lambda: open("/opt/rlx/x.py", "w")),
        "network": can(lambda: socket.create_connection(("127.0.0.1", 22), timeout=1)),
        "unshare": libc.unshare(0x10000000) == 0,
        # memory RLIMIT_DATA would not count: shared anonymous, MAP_GROWSDOWN, SysV, memfd; private is counted
        "shared_anonymous": can(lambda: mmap.mmap(-1, 1 << 20)),
        "growsdown": mapped(0x22 | 0x100),
        "private_anonymous": mapped(0x22),
        "sysv_shm": libc.shmget(0, 1 << 20, 0o1600) != -1,
        "memfd": can(lambda: os.memfd_create("x")),
        "file_mapping": file_mapping(),
        "checkout": os.path.exists(CHECKOUT),
        "home": os.path.exists(os.path.expanduser("~root") + "/.bashrc"),
        "etc": sorted(os.listdir("/etc")),
    }
"""


def test_the_jail_from_inside():
    checkout = os.path.dirname(os.path.abspath(__file__))
    with Sandbox("rlx.rewards.unit_tests_harness", 1, LIMITS, modules=MODULES) as sandbox:

        def check(session, index):
            assert session.request({"op": "load"})[0]["ok"] is True
            return [decode(session.request({"op": "eval", "expr": e})[0]["value"]) for e in ("left_over()", "view()")]

        program = f"CHECKOUT = {checkout!r}\n" + PROBE
        (first_left, view), (second_left, _) = sandbox.map([program, program], check)
    prefix_top = "/" + os.path.realpath(sys.base_prefix).split("/")[1]
    allowed = {".oldroot", "bin", "dev", "etc", "lib", "lib64", "opt", "proc", "sbin", "tmp", "usr", prefix_top[1:]}
    assert set(view["root"]) <= allowed, view["root"]
    assert view["pids"] == ["1", "2"]  # the zygote and this process
    assert view["hostname"] == "sandbox"
    assert view["uid"] == 0 and view["cap_eff"] == "0000000000000000" and view["seccomp"] == "2"
    assert view["cwd"] == "/tmp"
    assert not view["fork"] and view["thread"]
    assert not (view["write_usr"] or view["write_opt"] or view["network"] or view["unshare"])
    assert view["private_anonymous"] and view["file_mapping"]
    assert not (view["shared_anonymous"] or view["growsdown"] or view["sysv_shm"] or view["memfd"])
    assert not (view["checkout"] or view["home"])
    assert view["etc"] == ["ld.so.cache"]
    assert first_left == second_left == []  # each session's tmpfs is fresh: the first one's file is gone


def test_sessions_of_one_jail_are_independent():
    """A session cannot leave a process, a file or a module-level change for the next one."""
    first = (
        "import sys, ctypes\nsys.modules['json'] = None\nopen('/tmp/left', 'w').write('x')\n"
        "ctypes.CDLL(None).shmget(0x5EE5, 1 << 20, 0o1666)\n"
    )
    # no file, only the directory's mode: the zygote reuses a tmpfs only when nothing in it changed
    chmod = "import os\nos.chmod('/dev/shm', 0o700)\n"
    second = (
        "import os, json\ndef look():\n"
        "    return [os.listdir('/tmp'), json.dumps(1), open('/proc/sysvipc/shm').readlines()[1:],\n"
        "            oct(os.stat('/dev/shm').st_mode)]\n"
    )
    with Sandbox("rlx.rewards.unit_tests_harness", 1, LIMITS, modules=MODULES) as sandbox:

        def check(session, index):
            session.request({"op": "load"})
            return decode(session.request({"op": "eval", "expr": "look()"})[0]["value"]) if index == 2 else None

        assert sandbox.map([first, chmod, second], check)[2] == [[], "1", [], "0o41777"]


def test_allowed_files_under_tmp_stay_importable_and_read_only(monkeypatch, tmp_path):
    """A virtualenv under /tmp (a CI checkout there, say) is bound back over each session's private /tmp."""
    import rlx.rewards.sandbox.session as session

    package = tmp_path / "site" / "tmp_pkg_probe"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("X = 41\n")
    real = session.jail_config

    def with_package(*args):
        config = real(*args)
        config["binds"].append([str(package), str(package)])
        config["sys_path"].append(str(package.parent))
        return config

    monkeypatch.setattr(session, "jail_config", with_package)
    program = (
        "import tmp_pkg_probe\ndef f():\n    try:\n        open(tmp_pkg_probe.__file__, 'a')\n"
        "        return 'written'\n    except OSError:\n        return tmp_pkg_probe.X + 1\n"
    )
    with Sandbox("rlx.rewards.unit_tests_harness", 1, LIMITS, modules=MODULES) as sandbox:
        replies = sandbox.map([program], lambda s, i: s.pipeline([{"op": "load"}, {"op": "eval", "expr": "f()"}]))
    assert [reply["ok"] for reply, _ in replies] == [True] and [r for _, r in replies] == [
        {"value": {"root": ["int", "42"]}}
    ]
    assert (package / "__init__.py").read_text() == "X = 41\n"
