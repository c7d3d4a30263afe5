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

import contextlib
import fcntl
import os
import select
import signal
import sys
import threading

OUTPUT_CAP = 1_000_000  # characters of output kept (the session's output_kb caps what is sent back anyway)
F_SETPIPE_SZ = 1031  # fcntl: the pipe's capacity (an unprivileged process may ask up to pipe-max-size, 1 MiB)


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


@contextlib.contextmanager
def _descriptor(number: int, fd: int):
    """`fd` as descriptor `number` for the block, the previous one restored after."""
    saved = os.dup(number)
    os.dup2(fd, number)
    try:
        yield
    finally:
        os.dup2(saved, number)
        os.close(saved)


def _wait_for_threads(before: set) -> None:
    for thread in threading.enumerate():
        if thread not in before and not thread.daemon and thread is not threading.current_thread():
            thread.join()


def _flush(*streams) -> None:
    for stream in streams:
        with contextlib.suppress(Exception):
            stream.flush()


def run(code, stdin: str) -> dict:
    """Run `code` (compiled) as __main__ in fresh globals on `stdin`: {"stdout", "error", "exit_code"}."""
    data = stdin.encode("utf-8", "surrogatepass")
    read_end, write_end = os.pipe()
    with contextlib.suppress(OSError):
        fcntl.fcntl(write_end, F_SETPIPE_SZ, min(max(len(data), 1 << 16), 1 << 20))
    os.set_blocking(write_end, False)
    stop = threading.Event()
    feeder = threading.Thread(target=_feed, args=(write_end, data, stop), daemon=True)
    out = os.open("/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)  # unnamed: the tmpfs's directory stays unchanged
    saved = sys.stdin, sys.stdout, os._exit, signal.getsignal(signal.SIGPIPE)
    error, exit_code = None, None
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python runs programs: a closed pipe is BrokenPipeError
    try:
        with _descriptor(0, read_end), _descriptor(1, out):
            os.close(read_end)
            feeder.start()
            stdin_file = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
            stdout_file = open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
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
            stop.set()
            feeder.join()
    finally:
        sys.stdin, sys.stdout, os._exit = saved[0], saved[1], saved[2]
        signal.signal(signal.SIGPIPE, saved[3])
    try:
        text = os.pread(out, OUTPUT_CAP * 4, 0).decode("utf-8", "replace")[:OUTPUT_CAP]
    finally:
        os.close(out)
    return {"stdout": text, "error": error, "exit_code": exit_code}


def install_exits() -> None:
    """`exit` and `quit` as a program sees them (site defines them; the sandbox's interpreter runs without site)."""
    import builtins

    def leave(code=None):
        raise SystemExit(code)

    for name in ("exit", "quit"):
        if not hasattr(builtins, name):
            setattr(builtins, name, leave)
    sys.argv = ["main.py"]  # a program's own argv (fileinput reads it), not the jail's configuration
