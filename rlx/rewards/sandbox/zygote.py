"""PID 1 of a jail: a fresh interpreter that forks one candidate process per session and relays its messages.

It holds nothing secret (programs and the inputs sent to them, never an expected value), so forking candidates
from it hands them nothing. It runs inside the jail (rlx.rewards.sandbox.jail built the filesystem and the
namespaces) and imports only stdlib and the files copied in with it.

Per session (an S frame from the checker):

    zygote: a fresh tmpfs on /tmp and /dev/shm (kept when the last candidate changed nothing in them)
    zygote ──fork──▶ candidate: cwd /tmp, rlimits, no capabilities, seccomp (no new process, no exec, no mount,
                     no memory outside RLIMIT_DATA, no SysV or POSIX IPC object); runs
                     HARNESS.serve(program, receive, send)

The candidate cannot reach the zygote: it is PID 1 (signals without a handler from inside the namespace are
dropped), not dumpable (no ptrace, /proc/1/mem, fd or environ), and the candidate has no capability. Messages
cross as length-prefixed bytes; the zygote checks only lengths (against the session's output cap) and relays
them to the checker, which parses them. When the candidate exits, is killed at the wall clock, or the checker
closes the session, the zygote reports the facts (E frame) and waits for the next session.
"""

from __future__ import annotations

import fcntl
import gc
import importlib
import json
import os
import resource
import select
import signal
import struct
import sys
import time

from rlx.rewards.sandbox import frames, syscalls

OUTPUT_TAIL = 2000
CONTROL_CAP = 1 << 30  # frames from the checker (trusted): programs and inputs, tensors included
LENGTH = struct.Struct(">Q")


class _Jail:
    """What every candidate of this jail shares, prepared once here so that a forked candidate only applies it
    (each page a candidate writes costs it a copy-on-write fault: the less Python it runs, the cheaper it is)."""

    def __init__(self, config: dict) -> None:
        self.harness = importlib.import_module(config["harness"])
        # allowed files that live under /tmp or /dev/shm on the host (a virtualenv under /tmp), opened before a
        # tmpfs covers them: bound back, read-only as before, over each fresh tmpfs
        self.keep = [(path, os.open(path, os.O_PATH | os.O_CLOEXEC)) for path in config["keep"]]
        self.seccomp = syscalls.ProcessFilter()
        self.mounted: tuple | None = None  # (disk_mb, the tmpfs's state) as mounted for the last candidate

    @staticmethod
    def _tmpfs_state() -> tuple:
        """What any change to /tmp or /dev/shm changes: the kernel sets a directory's ctime on every entry added
        or removed and on every chmod, chown, utime or xattr (no call sets ctime back), and the inode and block
        counts move with anything created anywhere below."""
        state = []
        for target in ("/tmp", "/dev/shm"):
            info, usage = os.stat(target), os.statvfs(target)
            state += [info.st_dev, info.st_ino, info.st_mode, info.st_uid, info.st_gid, info.st_ctime_ns]
            state += [info.st_mtime_ns, usage.f_files - usage.f_ffree, usage.f_bfree]
        return tuple(state)

    def fresh_tmpfs(self, disk_mb: int) -> None:
        """An empty tmpfs on /tmp and on /dev/shm for the next candidate: new ones, the last candidate's
        detached (it is dead and reaped: nothing of it is left to hold them), unless that candidate changed
        nothing in them (most programs write no file; a remount costs ~0.4 CPU ms). Done here rather than in a
        mount namespace of the candidate's own, which cost it ~0.5 CPU ms to create and tear down. With kept
        binds (their parent directories are the candidate's to change) the tmpfs is always new."""
        if self.mounted is not None and not self.keep and self.mounted == (disk_mb, self._tmpfs_state()):
            return
        for target in ("/tmp", "/dev/shm"):
            if self.mounted is not None:
                syscalls.umount(target)
            syscalls.mount(
                "tmpfs", target, "tmpfs", syscalls.MS_NOSUID | syscalls.MS_NODEV, f"size={disk_mb}m,mode=1777"
            )
            for path, fd in self.keep:
                if not path.startswith(target + "/"):
                    continue
                if os.path.isdir(f"/proc/self/fd/{fd}"):
                    os.makedirs(path, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
                syscalls.mount(f"/proc/self/fd/{fd}", path, None, syscalls.MS_BIND | syscalls.MS_REC)
        self.mounted = (disk_mb, self._tmpfs_state())


def _candidate(jail: _Jail, start: dict, channel_in: int, channel_out: int, stdio: int, ready: int) -> None:
    """The forked child: isolate and limit this process, say so on `ready`, then run the harness on the program."""
    limits = start["limits"]
    mib = 1024 * 1024
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in (stdio, channel_in, channel_out, ready)]
    os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
    for number, fd in zip((1, 3, 4, 5), high, strict=True):
        os.dup2(fd, number)
    os.dup2(1, 2)
    os.closerange(6, 1 << 16)  # the zygote's own descriptors (its pipes to the checker, the kept paths) included
    os.chdir("/tmp")  # the session's fresh tmpfs (`_Jail.fresh_tmpfs`)
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
    for name, value in (
        (resource.RLIMIT_DATA, limits["memory_mb"] * mib),
        (resource.RLIMIT_FSIZE, limits["fsize_mb"] * mib),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, 64),
    ):
        resource.setrlimit(name, (value, value))
    syscalls.clear_capabilities()  # the bounding set is already empty: the zygote emptied it
    jail.seccomp.install()
    os.write(5, b"r")  # before any candidate code: a session that never says this failed in its setup (INFRA)
    os.close(5)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # the zygote ignores it (a closed pipe must not kill it)

    def receive() -> tuple[dict, list[bytes]] | None:
        header = frames.read_exact(3, LENGTH.size)
        body = None if header is None else frames.read_exact(3, LENGTH.unpack(header)[0])
        return None if body is None else frames.unpack_message(body)

    def send(message: dict, blobs=()) -> None:
        data = frames.pack_message(message, blobs)
        frames.write_all(4, LENGTH.pack(len(data)) + data)

    jail.harness.serve(start["program"], receive, send)


class _Session:
    """The zygote's side of one session: relay both ways, enforce the wall clock and the output cap."""

    def __init__(self, jail: _Jail, start: dict) -> None:
        self.start, self.limits = start, start["limits"]
        self.budget = self.limits["output_kb"] * 1024
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        self.stdio, stdio_w = os.pipe()
        self.ready, ready_w = os.pipe()
        self.began = time.monotonic()
        self.pid = os.fork()
        if self.pid == 0:
            code = 0
            try:
                for fd in (self.to_child, self.from_child, self.stdio, self.ready):
                    os.close(fd)
                _candidate(jail, start, to_child_r, from_child_w, stdio_w, ready_w)
            except BaseException as err:  # noqa: BLE001 - the candidate's process ends here whatever happened
                code = 70 if isinstance(err, OSError) else 1  # 70: the session's setup failed (see the tail)
                if isinstance(err, OSError):
                    os.write(2, f"sandbox session setup failed: {err}\n".encode())
            finally:
                os._exit(code)
        for fd in (to_child_r, from_child_w, stdio_w, ready_w):
            os.close(fd)
        os.set_blocking(self.to_child, False)
        self.pidfd = os.pidfd_open(self.pid)
        self.pending = bytearray()  # checker -> candidate bytes not yet written
        self.received = bytearray()  # candidate -> checker bytes not yet a whole message
        self.tail = b""
        self.stdio_open = True
        self.started = False  # the candidate's setup finished (it wrote to `ready`; read once it has ended)
        self.timed_out = self.overflow = self.closed = False

    def relay(self) -> bool:
        """Run the session to its end; False when the checker went away (the zygote then exits)."""
        alive = True
        while True:
            remaining = self.began + self.limits["wall_s"] - time.monotonic()
            if remaining <= 0:
                self.timed_out = True
                break
            watch = [self.from_child, self.pidfd, 0] + ([self.stdio] if self.stdio_open else [])
            writable = [self.to_child] if self.pending else []
            ready, can_write, _ = select.select(watch, writable, [], remaining)
            if self.to_child in can_write:
                self._write_pending()
            if self.from_child in ready and not self._read_child():
                break
            if self.stdio in ready:
                self._read_stdio()
            if 0 in ready:
                frame = frames.read_frame(0, CONTROL_CAP)
                if frame is None:
                    alive = False
                    break
                if frame[0] == b"M":
                    self.pending += LENGTH.pack(len(frame[1])) + frame[1]
                    self._write_pending()
                elif frame[0] == b"C":
                    self.closed = True
                    break
            if self.pidfd in ready:
                break
        os.kill(self.pid, signal.SIGKILL)  # already dead, or its time (or its session) is over
        _, status, usage = os.wait4(self.pid, 0)
        if not (self.timed_out or self.overflow):  # what it wrote before it died still counts
            os.set_blocking(self.from_child, False)
            while self._read_child():
                pass
        os.set_blocking(self.stdio, False)
        self._read_stdio()
        os.set_blocking(self.ready, False)
        try:
            self.started = os.read(self.ready, 1) == b"r"
        except BlockingIOError:
            pass
        for fd in (self.to_child, self.from_child, self.stdio, self.pidfd, self.ready):
            os.close(fd)
        code = os.waitstatus_to_exitcode(status)
        facts = {
            "exit_code": code if code >= 0 else None,
            "signal": -code if code < 0 else None,
            "timed_out": self.timed_out,
            "overflow": self.overflow,
            "closed": self.closed,
            "started": self.started,
            "wall_s": round(time.monotonic() - self.began, 4),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 4),
            "cpu_limit_s": self.limits["cpu_s"],
            "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "output_tail": self.tail.decode("utf-8", "replace"),
        }
        if alive:
            frames.json_frame(1, b"E", facts)
        return alive

    def _write_pending(self) -> None:
        try:
            written = os.write(self.to_child, self.pending)
        except BlockingIOError:
            return
        except BrokenPipeError:  # the candidate closed its input: nothing more will be read
            written = len(self.pending)
        del self.pending[:written]

    def _read_child(self) -> bool:
        """Read what the candidate sent and relay whole messages; False at end of file or over the cap."""
        try:
            chunk = os.read(self.from_child, 1 << 20)
        except BlockingIOError:
            return False
        if not chunk:
            return False
        self.budget -= len(chunk)
        if self.budget < 0:
            self.overflow = True
            return False
        self.received += chunk
        while len(self.received) >= LENGTH.size:
            size = LENGTH.unpack(self.received[: LENGTH.size])[0]
            if size > self.budget + len(self.received):
                self.overflow = True  # announces more than it may ever send
                return False
            if len(self.received) < LENGTH.size + size:
                break
            frames.write_frame(1, b"M", bytes(self.received[LENGTH.size : LENGTH.size + size]))
            del self.received[: LENGTH.size + size]
        return True

    def _read_stdio(self) -> None:
        try:
            chunk = os.read(self.stdio, 1 << 16)
        except BlockingIOError:
            return
        self.stdio_open = bool(chunk)
        self.tail = (self.tail + chunk)[-OUTPUT_TAIL:]


def _warm(harness) -> None:
    """Do once here what every candidate would otherwise do first, then freeze the heap. A forked candidate
    pays a page fault for each page it writes (~6 us on a VM): CPython 3.11 builds its ~100 AST types on the
    first compile() of a process (~3 ms a candidate), and a garbage collection walks, and so writes to, every
    object the zygote holds (torch's included); gc.freeze moves them out of the collector's reach."""
    compile("0", "<warm-up>", "exec")
    frames.unpack_message(frames.pack_message({"warm": [1, "up"]}))
    warm = getattr(harness, "warm", None)  # a harness's own paths, run here: CPython 3.11 rewrites a function's
    if callable(warm):  # bytecode in place over its first calls (quickening), a fault per page in every candidate
        warm()
    gc.collect()
    gc.freeze()


def main() -> None:
    """argv[1]: JSON {"preload", "harness", "env", "keep"}; then sessions until the checker closes stdin."""
    config = json.loads(sys.argv[1])
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as PID 1, a signal without a handler cannot reach it
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # inherited by candidates: an oversized write must kill them
    syscalls.set_not_dumpable()
    syscalls.empty_bounding_set()  # this process never execs; its candidates inherit the empty set
    os.environ.clear()  # what candidates inherit
    os.environ.update({"HOME": "/tmp", "TMPDIR": "/tmp", "PATH": "/usr/bin:/bin", **config["env"]})
    for module in config["preload"]:
        importlib.import_module(module)
    jail = _Jail(config)
    _warm(jail.harness)
    frames.json_frame(1, b"H", {"ok": True, "pid": os.getpid()})
    while (frame := frames.read_frame(0, CONTROL_CAP)) is not None:
        if frame[0] != b"S":
            continue
        start = json.loads(frame[1])
        jail.fresh_tmpfs(start["limits"]["disk_mb"])
        if not _Session(jail, start).relay():
            break
    os._exit(0)  # the checker closed the jail: nothing to flush, and finalizing torch would only slow the close
