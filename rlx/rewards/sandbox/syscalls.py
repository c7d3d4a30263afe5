"""The Linux calls the jail needs that Python 3.11's `os` lacks (unshare, mount, pivot_root, capset, seccomp),
reached through libc with ctypes. Each raises `OSError` naming the step that failed.

This file is copied into the jail (the zygote and the candidate's setup use it), so it imports only stdlib.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000
NAMESPACE_FLAGS = (
    CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
)

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1,
    2,
    4,
    8,
    32,
    4096,
    16384,
    1 << 18,
)
MNT_DETACH = 2
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4

# syscall numbers and the seccomp audit arch, per machine
SYSCALLS = {
    "x86_64": {
        "arch": 0xC000003E,
        "pivot_root": 155,
        "capset": 126,
        "mount_setattr": 442,
        "clone": 56,
        "clone3": 435,
        "mmap": 9,
        "denied": (57, 58, 59, 322, 272, 308, 165, 166, 155, 101, 310, 311, 29, 64, 68, 240, 319, 321),
        # fork vfork execve execveat unshare setns mount umount2 pivot_root ptrace process_vm_readv/writev,
        # then memory outside RLIMIT_DATA: shmget semget msgget mq_open memfd_create bpf
    },
    "aarch64": {
        "arch": 0xC00000B7,
        "pivot_root": 41,
        "capset": 91,
        "mount_setattr": 442,
        "clone": 220,
        "clone3": 435,
        "mmap": 222,
        "denied": (221, 281, 97, 268, 40, 39, 41, 117, 270, 271, 194, 190, 186, 180, 279, 280),
        # execve execveat unshare setns mount umount2 pivot_root ptrace process_vm_readv/writev (no fork/vfork),
        # then memory outside RLIMIT_DATA: shmget semget msgget mq_open memfd_create bpf
    },
}
# the same numbers on both machines: open_tree move_mount fsopen fsconfig fsmount fspick (the new mount API),
# mount_setattr, memfd_secret
DENIED_EVERYWHERE = (428, 429, 430, 431, 432, 433, 442, 447)
MAP_SHARED_TYPE, MAP_PRIVATE, MAP_ANONYMOUS, MAP_GROWSDOWN = 0x3, 0x2, 0x20, 0x100
MACHINE = SYSCALLS.get(platform.machine())

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _check(result: int, step: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{step}: {os.strerror(errno)}")


def _machine() -> dict:
    if MACHINE is None:
        raise OSError(f"the sandbox supports x86_64 and aarch64, not {platform.machine()}")
    return MACHINE


def unshare(flags: int, step: str) -> None:
    _check(_libc.unshare(flags), step)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(_libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)), f"mount {target}")


def make_read_only_tree(target: str) -> None:
    """Read-only and nosuid on `target` and every mount below it (mount_setattr, Linux >= 5.12)."""
    attr = struct.pack("QQQQ", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)  # nodev would break /dev/null
    buf = ctypes.create_string_buffer(attr, len(attr))
    AT_FDCWD = -100
    result = _libc.syscall(_machine()["mount_setattr"], AT_FDCWD, target.encode(), AT_RECURSIVE, buf, len(attr))
    _check(0 if result == 0 else -1, f"mount_setattr read-only {target} (needs Linux >= 5.12)")


def umount(target: str) -> None:
    _check(_libc.umount2(target.encode(), MNT_DETACH), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    result = _libc.syscall(_machine()["pivot_root"], new_root.encode(), put_old.encode())
    _check(0 if result == 0 else -1, "pivot_root")


def sethostname(name: str) -> None:
    _check(_libc.sethostname(name.encode(), len(name)), "sethostname")


def die_with_parent() -> None:
    """SIGKILL this process when the thread that forked it dies (prctl PR_SET_PDEATHSIG)."""
    _check(_libc.prctl(1, 9, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def set_not_dumpable() -> None:
    """No ptrace, no /proc/<pid>/mem, fd or environ for processes without CAP_SYS_PTRACE (prctl PR_SET_DUMPABLE)."""
    _check(_libc.prctl(4, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE, 0)")


def empty_bounding_set() -> None:
    """Empty the bounding set (no capability can be gained by exec); the zygote does it once, while it still
    holds the capabilities it needs for mounting, and every candidate it forks inherits the empty set."""
    for cap in range(64):
        if _libc.prctl(24, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # PR_CAPBSET_DROP; EINVAL: no such cap
            _check(-1, f"prctl(PR_CAPBSET_DROP, {cap})")


def clear_capabilities() -> None:
    """Empty ambient, effective, permitted and inheritable sets: with the bounding set already empty
    (`empty_bounding_set`), uid 0 inside the user namespace then carries no privilege at all (exec, which could
    regain some, is refused by the seccomp filter)."""
    _check(_libc.prctl(47, 4, 0, 0, 0), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # two {effective, permitted, inheritable} u32 triples, all zero
    result = _libc.syscall(_machine()["capset"], ctypes.c_char_p(header), ctypes.c_char_p(data))
    _check(0 if result == 0 else -1, "capset(empty)")


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


class ProcessFilter:
    """A seccomp filter. Threads may be created, processes may not: fork, vfork, clone without CLONE_THREAD or
    with a namespace flag fail with EPERM, clone3 with ENOSYS so libc falls back to clone. Exec, unshare, setns,
    the mount calls, pivot_root, ptrace and process_vm_* fail with EPERM. So does every way to hold memory that
    RLIMIT_DATA does not count: a shared anonymous mapping, a MAP_GROWSDOWN one (the kernel counts it as stack),
    SysV shared memory, message queues and semaphores, POSIX message queues, memfd_create, memfd_secret and bpf
    maps (files on the private tmpfs are bounded by its size). A foreign ABI (x32 on x86_64, or another
    architecture) kills the process. With no child process possible and no uncounted memory, the candidate's
    process tree is one process and RLIMIT_DATA bounds its memory. Built once (in the zygote), installed in
    each candidate."""

    def __init__(self) -> None:
        code = b"".join(self._program(_machine()))
        self._buffer = ctypes.create_string_buffer(code, len(code))  # kept alive: the kernel copies it at install
        self._fprog = struct.pack("HxxxxxxQ", len(code) // 8, ctypes.addressof(self._buffer))

    @staticmethod
    def _program(machine: dict) -> list[bytes]:
        """The BPF program; jumps name a label (None: the next instruction), resolved to offsets at the end."""
        load, jeq, jset, jge, and_, ret = 0x20, 0x15, 0x45, 0x35, 0x54, 0x06
        allow, kill, eperm, enosys = 0x7FFF0000, 0x80000000, 0x00050000 | 1, 0x00050000 | 38
        code: list[tuple[int, int, str | None, str | None]] = []
        labels: dict[str, int] = {}

        def op(opcode: int, k: int, true: str | None = None, false: str | None = None) -> None:
            code.append((opcode, k, true, false))

        op(load, 4)  # seccomp_data.arch
        op(jeq, machine["arch"], None, "kill")
        op(load, 0)  # seccomp_data.nr
        op(jge, 0x40000000, "kill")  # the x32 ABI
        for nr in (*machine["denied"], *DENIED_EVERYWHERE):
            op(jeq, nr, "eperm")
        op(jeq, machine["clone3"], "enosys")
        op(jeq, machine["clone"], "clone")
        op(jeq, machine["mmap"], "mmap")
        op(ret, allow)
        labels["clone"] = len(code)
        op(load, 16)  # args[0], low 32 bits (little-endian): the clone flags
        op(jset, NAMESPACE_FLAGS, "eperm")
        op(jset, CLONE_THREAD, "allow", "eperm")
        labels["mmap"] = len(code)
        op(load, 40)  # args[3]: the mmap flags
        op(jset, MAP_GROWSDOWN, "eperm")
        op(jset, MAP_ANONYMOUS, None, "allow")  # a file mapping: bounded by the file's filesystem
        op(and_, MAP_SHARED_TYPE)
        op(jeq, MAP_PRIVATE, "allow", "eperm")
        for name, action in (("allow", allow), ("eperm", eperm), ("enosys", enosys), ("kill", kill)):
            labels[name] = len(code)
            op(ret, action)
        return [
            _bpf(opcode, k, *(0 if to is None else labels[to] - index - 1 for to in (true, false)))
            for index, (opcode, k, true, false) in enumerate(code)
        ]

    def install(self) -> None:
        """No new privileges, then the filter, on this process (and every thread it creates later)."""
        _check(_libc.prctl(38, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(_libc.prctl(22, 2, ctypes.c_char_p(self._fprog), 0, 0), "prctl(PR_SET_SECCOMP)")
