"""`python -m tests.resume.faulty <fault> <rlx arguments...>`: rlx's command line with one fault injected at a
chosen point of the run, deterministically (no sleep-and-hope: the fault fires on the Nth call of the code
that the phase runs).

Signals are sent by the process to itself, some from inside a `__del__`, where a handler that raises has its
exception dropped by Python ("Exception ignored in ..."): the way the reported Ctrl-C was lost inside fsspec's
file clean-up. A full disk is a write that stops halfway with ENOSPC, leaving the half-written file where the
real failure leaves it.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path


class SignalWhenCollected:
    """Sends `signum` to this process from its `__del__` (the handler then runs inside it)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        os.kill(os.getpid(), self.signum)
        for _ in range(100):  # a few bytecodes, for the handler to run in here
            pass


def phase() -> str:
    from rlx.cli import status

    return status.phase()


def nth_call(function: Callable, n: int, fault: Callable[[tuple], None], when: Callable[[tuple], bool]):
    """`function` wrapped: `fault(args)` runs before its `n`th call for which `when(args)` holds, once."""
    calls = [0]

    def wrapped(*args, **kwargs):
        if when(args):
            calls[0] += 1
            if calls[0] == n:
                fault(args)
        return function(*args, **kwargs)

    return wrapped


def signal_in_checkpoint_write(signum: int) -> None:
    """`signum` while the first checkpoint's bytes are being written (Lightning writes through fsspec)."""
    from fsspec.implementations.local import LocalFileOpener

    LocalFileOpener.write = nth_call(
        LocalFileOpener.write,
        1,
        lambda args: SignalWhenCollected(signum),
        lambda args: str(args[0].path).endswith(".last.ckpt.partial"),
    )


def signal_in_warm_start(signum: int) -> None:
    """`signum` at the 5th step of the warm start's SFT (each step clips its gradient once)."""
    import torch

    torch.nn.utils.clip_grad_norm_ = nth_call(
        torch.nn.utils.clip_grad_norm_, 5, lambda args: SignalWhenCollected(signum), lambda args: True
    )


def signal_in_generation(signum: int) -> None:
    """`signum` at the first decode step of the first RL step's rollout."""
    from rlx.rollout.engine import RolloutEngine

    RolloutEngine.step = nth_call(
        RolloutEngine.step, 1, lambda args: os.kill(os.getpid(), signum), lambda args: phase() == "RL"
    )


def signal_in_scoring(signum: int) -> None:
    """`signum` while the reward scores the first RL step's completions (the reward built by the run, wrapped)."""
    from rlx.cli import preflight

    build_inputs = preflight.build_inputs

    def build(cfg):
        inputs = build_inputs(cfg)
        reward = inputs.reward
        kind = type(reward)
        call = nth_call(kind.__call__, 1, lambda args: os.kill(os.getpid(), signum), lambda args: phase() == "RL")
        reward.__class__ = type(kind.__name__, (kind,), {"__call__": call, "__module__": kind.__module__})
        return inputs

    preflight.build_inputs = build


def half_then_enospc(source: Path, target: Path) -> None:
    """A copy onto a full disk: half the bytes land, then the write fails."""
    data = source.read_bytes()
    target.write_bytes(data[: len(data) // 2])
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def enospc_in_checkpoint_move() -> None:
    """The first checkpoint's move from the temp directory into checkpoints/ (a copy across file systems) runs out
    of disk halfway: the 5 MB `.last.ckpt.partial` of the report."""
    move = shutil.move

    def full_move(src, dst, *args, **kwargs):
        if str(dst).endswith(".last.ckpt.partial"):
            half_then_enospc(Path(src), Path(dst))
        return move(src, dst, *args, **kwargs)

    shutil.move = full_move


class FullAfterHalf:
    """A file object whose next write lands halfway, then fails with ENOSPC (once)."""

    def __init__(self, handle) -> None:
        self.handle = handle

    def write(self, text):
        self.handle.write(text[: len(text) // 2])
        self.handle.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self.handle.__exit__(*exc)


def enospc_appending(name: str) -> None:
    """The first append to `<run_dir>/<name>` in the RL loop (samples.jsonl, metrics.csv) fills the disk halfway."""
    opened = Path.open
    fired = []

    def open_full(self, mode="r", *args, **kwargs):
        handle = opened(self, mode, *args, **kwargs)
        if self.name == name and "a" in mode and phase() == "RL" and not fired:
            fired.append(self)
            return FullAfterHalf(handle)
        return handle

    Path.open = open_full  # type: ignore[method-assign]


FAULTS: dict[str, Callable[[], None]] = {
    "sigint-in-checkpoint-write": lambda: signal_in_checkpoint_write(signal.SIGINT),
    "sigterm-in-warm-start": lambda: signal_in_warm_start(signal.SIGTERM),
    "sigint-in-generation": lambda: signal_in_generation(signal.SIGINT),
    "sigterm-in-scoring": lambda: signal_in_scoring(signal.SIGTERM),
    "enospc-in-checkpoint": enospc_in_checkpoint_move,
    "enospc-in-samples": lambda: enospc_appending("samples.jsonl"),
    "enospc-in-metrics": lambda: enospc_appending("metrics.csv"),
}


if __name__ == "__main__":
    FAULTS[sys.argv[1]]()
    sys.argv = ["rlx", *sys.argv[2:]]
    from rlx.__main__ import main

    main()
