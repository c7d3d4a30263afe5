"""Trainer-side client: a pool of sandbox servers that score a batch in parallel.

Each worker is one `rlx.rewards.sandbox.server` process with its own unprivileged uid (so per-uid process
limits of one worker never starve another) and one thread here feeding it requests. A server that dies or
stops answering is killed and restarted, and the sample it held gets an INFRA result (the sandbox broke, not
the candidate); the batch, and the training run, go on. Each restart is logged and counted (`restarts`); a
reward that keeps failing is stopped by the trainer's `infra_stop` guard, not here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import queue
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

from rlx.rewards.sandbox.isolation import Limits
from rlx.rewards.sandbox.records import RunResult
from rlx.rewards.sandbox.server import BACKSTOP_S, read_frame, write_frame

REPO_ROOT = str(Path(__file__).resolve().parents[3])
START_TIMEOUT_S = 120.0
log = logging.getLogger(__name__)


class SandboxWorker:
    def __init__(self, uid: int, preload: tuple[str, ...], env: dict[str, str]) -> None:
        self.uid, self.preload, self.env = uid, preload, env
        self.process: subprocess.Popen | None = None
        self.restarts = 0  # servers started after the first (one died, hung or would not start)
        self.started = False

    def start(self) -> subprocess.Popen:
        self.restarts += self.started
        self.started = True
        env = {
            **os.environ,
            **self.env,
            "PYTHONPATH": os.pathsep.join([REPO_ROOT, *filter(None, [os.environ.get("PYTHONPATH")])]),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rlx.rewards.sandbox.server", *self.preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        ready = self._receive(START_TIMEOUT_S)
        if not ready or not ready.get("ready"):
            self.stop()
            raise RuntimeError(
                f"sandbox server (preload {list(self.preload)}) did not start; run "
                f"`python -m rlx.rewards.sandbox.server {' '.join(self.preload)}` to see why"
            )
        return self.process

    def _receive(self, timeout: float) -> dict | None:
        assert self.process is not None and self.process.stdout is not None, "start() first"
        fd = self.process.stdout.fileno()
        if not select.select([fd], [], [], timeout)[0]:
            return None
        return read_frame(fd)

    def run(self, request: dict, wall_s: float) -> RunResult:
        if self.process is not None and self.process.poll() is not None:
            log.warning(
                "sandbox server %d (uid %d) exited with status %s between requests; restarting it",
                self.process.pid,
                self.uid,
                self.process.returncode,
            )
            self.process = None
        process = self.process if self.process is not None else self.start()
        assert process.stdin is not None  # Popen(stdin=PIPE)
        try:
            write_frame(process.stdin.fileno(), {**request, "uid": self.uid, "env": self.env})
            reply = self._receive(wall_s + 2 * BACKSTOP_S)
        except (OSError, ValueError) as err:
            reply, error = None, f"{type(err).__name__}: {err}"
        else:
            error = "sandbox server stopped answering"
        if reply is None:
            log.warning(
                "sandbox server %d (uid %d): %s; its sample is INFRA and the server is restarted for the next one",
                process.pid,
                self.uid,
                error,
            )
            self.stop()
            return RunResult.broken(error)
        try:
            return RunResult.from_json(reply)
        except (TypeError, KeyError) as err:  # the server's reply is not a result: the sandbox broke
            return RunResult.broken(f"sandbox server sent a malformed reply ({type(err).__name__}: {err})")

    def stop(self) -> None:
        """Kill the server's whole process group (a supervisor or candidate it left behind too), even when the
        server itself already died: until it is reaped here, its pid still names the group."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None


class SandboxPool:
    """`workers` sandbox servers; `run(requests)` returns one result per request, in order.

    preload: modules each server imports once (e.g. ("torch", "triton")); env: extra environment of the
    servers and candidates (e.g. TRITON_INTERPRET=1); hide: directories mounted empty in every sandbox;
    base_uid: worker i runs candidates as uid base_uid + i.
    """

    def __init__(
        self, workers: int, preload: tuple[str, ...], env: dict[str, str], hide: tuple[str, ...], base_uid: int
    ) -> None:
        if workers < 1:
            raise ValueError(f"reward.workers must be >= 1 (got {workers})")
        self.hide = tuple(str(Path(REPO_ROOT, p).resolve()) for p in hide)  # relative: to the repo root
        self.workers = [SandboxWorker(base_uid + i, tuple(preload), dict(env)) for i in range(workers)]
        self.uids = [w.uid for w in self.workers]

    def run(self, requests: list[tuple[str, dict, Limits]]) -> list[RunResult]:
        """requests: (harness "module:function", payload, limits) triples."""
        todo: queue.Queue = queue.Queue()
        for index, request in enumerate(requests):
            todo.put((index, request))
        results: list[RunResult | None] = [None] * len(requests)

        def drain(worker: SandboxWorker) -> None:
            while True:
                try:
                    index, (harness, payload, limits) = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[index] = worker.run(
                        {
                            "harness": harness,
                            "payload": payload,
                            "hide": list(self.hide),
                            "limits": dataclasses.asdict(limits),
                        },
                        limits.wall_s,
                    )
                except RuntimeError as err:  # the server did not start (killed or crashed while importing)
                    log.warning("%s; its sample is INFRA and the server is restarted for the next one", err)
                    results[index] = RunResult.broken(str(err))

        threads = [threading.Thread(target=drain, args=(w,), daemon=True) for w in self.workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        done = [r for r in results if r is not None]
        assert len(done) == len(results), "a worker thread died before its requests were answered"
        return done

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
