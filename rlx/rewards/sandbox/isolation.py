"""Linux isolation primitives for one sandboxed run, called in forked children of the sandbox server.

Python 3.11 has no `os.unshare`/`mount`, so they are reached through libc with ctypes. Everything here
needs root (the sandbox server runs as root, as everything on the build machines does) and raises
`OSError` naming the failing step, which the runner reports as an INFRA verdict, never as a score.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
from dataclasses import dataclass

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run (all enforced by the kernel, none by the candidate).

    wall_s: killed (with its whole PID namespace) after this many seconds of wall time.
    cpu_s: RLIMIT_CPU, SIGXCPU then SIGKILL.
    memory_mb: RLIMIT_DATA (heap and private mappings); RLIMIT_AS would break `import torch`.
    nproc: RLIMIT_NPROC; only enforced because the candidate runs as an unprivileged uid of its own.
    fsize_mb: RLIMIT_FSIZE, caps every file the candidate writes, its stdout/stderr file included.
    disk_mb: size of the private tmpfs that is the only writable place.
    record_cap_kb: the harness's result channel is cut (and the run killed) beyond this.
    """

    wall_s: float
    cpu_s: int
    memory_mb: int
    nproc: int
    fsize_mb: int
    disk_mb: int
    record_cap_kb: int


def _check(result: int, step: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"sandbox setup failed at {step}: {os.strerror(errno)}")


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when its parent dies (prctl PR_SET_PDEATHSIG), so a killed sandbox server takes
    its supervisors, and a killed supervisor its namespace, down at once instead of at the wall limit."""
    _check(_libc.prctl(1, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent_pid:  # the parent died before the prctl took effect
        os._exit(1)


def unshare_namespaces() -> None:
    """New mount, network and PID namespaces: no network (only a downed loopback), private mounts, and
    the next forked child becomes PID 1 of a namespace whose death kills every process left inside it."""
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID), "unshare(NEWNS|NEWNET|NEWPID)")
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")


def mount_tmpfs(target: str, size_mb: int, read_only: bool) -> None:
    flags = MS_NOSUID | MS_NODEV | (MS_RDONLY if read_only else 0)
    options = f"size={size_mb}m,mode={'0755' if read_only else '1777'}".encode()
    _check(_libc.mount(b"tmpfs", target.encode(), b"tmpfs", flags, options), f"mount tmpfs on {target}")


def private_filesystem(disk_mb: int, hide_paths: tuple[str, ...]) -> None:
    """Fresh empty tmpfs on every world-writable place and an empty read-only tmpfs over each hidden path
    (task data, reference solutions), so the candidate can neither leave files behind nor read answers."""
    for target in ("/tmp", "/var/tmp", "/dev/shm"):
        if os.path.isdir(target):
            kept = interpreter_paths_under(target)
            handles = [(path, os.open(path, os.O_PATH)) for path in kept]  # reachable after the tmpfs hides them
            mount_tmpfs(target, disk_mb, read_only=False)
            for path, fd in handles:
                bind_read_only(f"/proc/self/fd/{fd}", path)
                os.close(fd)
    for path in hide_paths:
        if os.path.isdir(path):
            mount_tmpfs(path, 1, read_only=True)


def interpreter_paths_under(target: str) -> list[str]:
    """The interpreter's own import paths (a checkout or virtualenv cloned under /tmp, say) that a fresh
    tmpfs on `target` would hide: they are bound back read-only so the candidate can still import."""
    root = os.path.realpath(target) + os.sep
    paths = {os.path.realpath(p) for p in (sys.prefix, *sys.path) if p and os.path.isdir(p)}
    inside = sorted(p for p in paths if p.startswith(root))
    return [p for p in inside if not any(p.startswith(q + os.sep) for q in inside if q != p)]


def bind_read_only(source: str, target: str) -> None:
    os.makedirs(target, exist_ok=True)
    _check(_libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None), f"bind {target}")
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
    _check(_libc.mount(None, target.encode(), None, flags, None), f"remount {target} read-only")


def apply_limits(limits: Limits) -> None:
    mib = 1024 * 1024
    # CPU: SIGXCPU at the soft limit, SIGKILL one second later if it is caught or ignored.
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
    for name, value in (
        (resource.RLIMIT_DATA, limits.memory_mb * mib),
        (resource.RLIMIT_NPROC, limits.nproc),
        (resource.RLIMIT_FSIZE, limits.fsize_mb * mib),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, 256),
    ):
        resource.setrlimit(name, (value, value))


def drop_privileges(uid: int) -> None:
    """Become `uid` (no supplementary groups): RLIMIT_NPROC is then enforced and root-owned files are
    read-only. Each pool worker has its own uid so one worker's process count never limits another's."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
