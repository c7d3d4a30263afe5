"""The sandbox server: a small pre-started process that forks one isolated run per request.

Forking from the trainer would copy a torch-sized address space per sample (≈16 ms) and expose the trainer's
memory; this process imports only what the harnesses need (`python -m rlx.rewards.sandbox.server MODULE...`
preloads those modules, e.g. torch and triton for kernels, once). Protocol on stdin/stdout: frames of an
8-byte big-endian length and a JSON object. Requests: {"harness": "module:function", "payload", "limits",
"uid", "env", "hide"}; replies: a RunResult's JSON (rlx.rewards.sandbox.records). A "ready" frame is sent
after preloading.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import struct
import sys
import time

from rlx.rewards.sandbox.isolation import Limits
from rlx.rewards.sandbox.records import RunResult
from rlx.rewards.sandbox.runner import supervisor

BACKSTOP_S = 15.0  # beyond the wall limit, a supervisor that has not answered is itself broken


def read_frame(fd: int) -> dict | None:
    header = _read_exact(fd, 8)
    if header is None:
        return None
    body = _read_exact(fd, struct.unpack(">Q", header)[0])
    return None if body is None else json.loads(body)


def _read_exact(fd: int, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def write_frame(fd: int, message: dict) -> None:
    body = json.dumps(message).encode()
    data = struct.pack(">Q", len(body)) + body
    while data:
        data = data[os.write(fd, data) :]


def resolve(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def reap() -> None:
    """Collect exited supervisors without waiting: one that has sent its result may still be tearing down
    its namespaces (an RCU grace period or two), which overlaps with the next run instead of delaying it."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def run_request(request: dict, protocol_fds: tuple[int, int]) -> dict:
    limits = Limits(**request["limits"])
    harness = resolve(request["harness"])
    result_r, result_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(result_r)
        for fd in protocol_fds:
            os.close(fd)
        supervisor(
            harness, request["payload"], limits, request["uid"], request["env"], tuple(request["hide"]), result_w
        )
    os.close(result_w)
    deadline = time.monotonic() + limits.wall_s + BACKSTOP_S
    raw = bytearray()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([result_r], [], [], remaining)[0]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(result_r)
            return RunResult.broken(
                f"sandbox supervisor did not report within {limits.wall_s + BACKSTOP_S:.0f} s"
            ).to_json()
        chunk = os.read(result_r, 1 << 20)
        if not chunk:
            break
        raw += chunk
    os.close(result_r)
    reap()
    try:
        return json.loads(raw)
    except (ValueError, RecursionError, MemoryError):
        return RunResult.broken(f"sandbox supervisor sent a malformed result ({len(raw)} bytes)").to_json()


def main() -> None:
    for module in sys.argv[1:]:
        importlib.import_module(module)
    request_fd, reply_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # a stray print must never corrupt the protocol
    write_frame(reply_fd, {"ready": True, "pid": os.getpid()})
    while (request := read_frame(request_fd)) is not None:
        write_frame(reply_fd, run_request(request, (request_fd, reply_fd)))


if __name__ == "__main__":
    main()
