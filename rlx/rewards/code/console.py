"""One stdin/stdout case of a program, run in the candidate's process (copied into the sandbox; stdlib only).

The program gets what a judge gives it: file descriptor 0 reads the case's input (a pipe, fed by a thread of the
harness when the input is larger than the pipe holds) and descriptor 1 writes to a file of its own, with
`sys.stdin` and `sys.stdout` opened on them. So the ways competitive programmers read and write all work:
`input()` until EOFError, `sys.stdin.read().split()`, `sys.stdin.buffer.read()`, `open(0).read()`,
`os.read(0, n)` (PyRival's FastIO), `sys.stdout.buffer.write(...)`, `os.write(1, ...)`.

The case ends as the interpreter would end the program: non-daemon threads it started are waited for (the
recursion-in-a-big-stack-thread idiom often never joins its thread), then `sys.stdout` (the program's own
replacement too) is flushed. `exit()`, `quit()`, `sys.exit(code)` and `os._exit(code)` end the case with that
exit status and the output written so far (os._exit would end the candidate's whole session otherwise).
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import os
import select
import signal
import sys
import threading

OUTPUT_CAP = 1_000_000  # characters of output kept (the session's output_kb caps what is sent back anyway)
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032  # fcntl: a pipe's capacity (unprivileged: up to pipe-max-size, 1 MiB)
_SESSION: tuple | None = None  # the session's (output file, its text stream, descriptor 0 between cases)


def _feed(fd: int, data: bytes, stop: threading.Event) -> None:
    """Write `data` to the non-blocking pipe `fd`, then close it (EOF); stop early when the case has ended."""
    view = memoryview(data)
    try:
        while view and not stop.is_set():
            select.select([], [fd], [], 0.05)
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
    except OSError:  # the program closed its end (BrokenPipeError): nothing more is read
        pass
    finally:
        os.close(fd)


def _exit_case(code=0):
    """os._exit during a case: the case ends with that status (SystemExit), the session goes on."""
    raise SystemExit(code)


def _wait_for_threads(before: set) -> None:
    for thread in threading.enumerate():
        if thread not in before and not thread.daemon and thread is not threading.current_thread():
            thread.join()


def _flush(*streams) -> None:
    for stream in streams:
        with contextlib.suppress(Exception):
            stream.flush()


def _input(data: bytes) -> tuple[int, threading.Event | None, threading.Thread | None]:
    """The read end of a pipe holding `data`: written at once when it fits the pipe (most inputs: no thread),
    else fed by a thread while the program reads."""
    read_end, write_end = os.pipe()
    if len(data) > 1 << 16:
        with contextlib.suppress(OSError):
            fcntl.fcntl(write_end, F_SETPIPE_SZ, min(len(data), 1 << 20))
    if len(data) <= fcntl.fcntl(write_end, F_GETPIPE_SZ):
        os.write(write_end, data)  # fits: returns at once
        os.close(write_end)
        return read_end, None, None
    os.set_blocking(write_end, False)
    stop = threading.Event()
    return read_end, stop, threading.Thread(target=_feed, args=(write_end, data, stop), daemon=True)


def _session() -> tuple:
    """(output file, its text stream, the descriptor 0 had): made on the first case of the session, when
    descriptor 1 becomes one unnamed file of the session's tmpfs for good; the file is emptied for each case."""
    global _SESSION
    if _SESSION is None:
        made = os.open("/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)  # unnamed: the tmpfs's directory stays unchanged
        idle = os.dup(0)
        os.dup2(made, 1)
        stream = open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
        _SESSION = (made, stream, idle)
    os.ftruncate(_SESSION[0], 0)
    os.lseek(1, 0, os.SEEK_SET)  # descriptor 1 shares the file's offset with the file made here
    return _SESSION


def run(code, stdin: str) -> dict:
    """Run `code` (compiled) as __main__ in fresh globals on `stdin`: {"stdout", "error", "exit_code"}."""
    read_end, stop, feeder = _input(stdin.encode("utf-8", "surrogatepass"))
    out, stdout_file, idle = _session()
    os.dup2(read_end, 0)
    os.close(read_end)
    saved = sys.stdin, sys.stdout, os._exit, signal.getsignal(signal.SIGPIPE)
    error, exit_code = None, None
    if feeder is not None:  # as Python runs programs: the feeder meets a closed pipe as BrokenPipeError
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        feeder.start()
    try:
        stdin_file = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
        sys.stdin, sys.stdout, os._exit = stdin_file, stdout_file, _exit_case
        before = set(threading.enumerate())
        try:
            try:
                exec(code, {"__name__": "__main__"})
            finally:
                _wait_for_threads(before)
        except SystemExit as err:
            exit_code = err.code if isinstance(err.code, int) else (0 if err.code is None else 1)
        except BaseException as err:  # noqa: BLE001 - the harness names it (describe)
            error = err
        _flush(sys.stdout, stdout_file)
    finally:
        sys.stdin, sys.stdout, os._exit = saved[0], saved[1], saved[2]
        os.dup2(idle, 0)  # the case's pipe is closed: a feeder still writing meets BrokenPipeError
        if feeder is not None and stop is not None:
            stop.set()
            feeder.join()
            signal.signal(signal.SIGPIPE, saved[3])
    text = os.pread(out, OUTPUT_CAP * 4, 0).decode("utf-8", "replace")[:OUTPUT_CAP]
    return {"stdout": text, "error": error, "exit_code": exit_code}


def warm() -> None:
    """A few dozen cases in the zygote before it forks candidates (rlx.rewards.unit_tests_harness.warm): their code
    paths are then prepared in every candidate. The zygote's own descriptors 0 and 1 (its channel to the checker)
    are put back, and the output file made here is closed: each candidate makes its own on its tmpfs (an inherited
    one would carry one candidate's output to the next)."""
    global _SESSION
    program = compile("n = int(input())\nprint(n * n, sum(range(n)))\n", "<warm-up>", "exec")
    kept = os.dup(0), os.dup(1)
    try:
        for _ in range(40):
            run(program, "3\n")
    except OSError:  # no /tmp to make the file in here: the candidates still run, unwarmed
        pass
    finally:
        os.dup2(kept[0], 0)
        os.dup2(kept[1], 1)
        for fd in (*kept, *([_SESSION[0], _SESSION[2]] if _SESSION is not None else [])):
            os.close(fd)
        _SESSION = None


def install_exits() -> None:
    """`exit` and `quit` as a program sees them (site defines them; the sandbox's interpreter runs without site)."""

    def leave(code=None):
        raise SystemExit(code)

    for name in ("exit", "quit"):
        if not hasattr(builtins, name):
            setattr(builtins, name, leave)
    sys.argv = ["main.py"]  # a program's own argv (fileinput reads it), not the jail's configuration
