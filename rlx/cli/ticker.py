"""Progress of a long phase outside the RL loop (the warm start, a wait for another process, an evaluation):
`warm start: step 300/1500  loss 0.412  8.1 steps/s  eta 2.5 min`.

On a terminal one line is redrawn in place (at most twice a second); off a terminal (nohup, SLURM, `| tee`) a
log line every `every_s` seconds, so a log shows the phase is alive. The RL loop has its own line
(rlx.cli.progress). Standard library only.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rlx.cli import stop
from rlx.cli.logs import stream_is_tty

log = logging.getLogger("rlx")


def eta(seconds: float) -> str:
    return f"eta {seconds / 60:.1f} min" if seconds >= 60 else f"eta {seconds:.0f} s"


class Ticker:
    """Args:
    label: what is progressing (`warm start attempt 1`).
    total: the count at the end (steps, rows), or None when unknown.
    unit: what is counted (`step`, `rows`).
    every_s: off a terminal, a line at most this often.
    on_line: also called with each line's fields (the warm start shares them with processes waiting for it).
    """

    def __init__(
        self,
        label: str,
        total: int | None,
        unit: str = "step",
        every_s: float = 10.0,
        stream=None,
        on_line: Callable[[dict], None] | None = None,
    ) -> None:
        self.label, self.total, self.unit, self.every_s = label, total, unit, every_s
        self.stream, self.on_line = stream, on_line
        self.start = time.perf_counter()
        self.last = self.previous = self.start
        self.drawn = False

    @property
    def out(self):
        return self.stream or sys.stdout

    def line(self, done: int, fields: dict) -> str:
        count = f"{done}/{self.total}" if self.total else str(done)
        parts = [f"{self.label}: {self.unit} {count}" if self.unit == "step" else f"{self.label}: {count} {self.unit}"]
        parts += [
            f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}" for key, value in fields.items()
        ]
        elapsed = time.perf_counter() - self.start
        if done and self.total:
            parts.append(eta(elapsed / done * (self.total - done)))
        return "  ".join(parts)

    def update(self, done: int, **fields) -> None:
        stop.check()  # each step of a long phase is a point where a recorded signal stops it (rlx.cli.stop)
        now = time.perf_counter()
        step, self.previous = now - self.previous, now  # this update's interval: the next one will take as long
        tty = stream_is_tty(self.out)
        if now - self.last + (0 if tty else step) < (0.5 if tty else self.every_s):
            return  # (off a terminal: print now if waiting one more interval would pass every_s)
        self.last = now
        text = self.line(done, fields)
        if self.on_line is not None:
            self.on_line({"done": done, "total": self.total, "line": text})
        if tty:
            self.out.write("\r\x1b[K" + time.strftime("%H:%M:%S ") + text)
            self.out.flush()
            self.drawn = True
        elif self.stream is not None:
            self.out.write(time.strftime("%H:%M:%S ") + text + "\n")
            self.out.flush()
        else:
            log.info(text)  # the console handler and rlx.log

    def update_loss(self, done: int, loss: float) -> None:
        self.update(done, loss=loss)

    def close(self) -> None:
        if self.drawn:
            self.out.write("\r\x1b[K")
            self.out.flush()
            self.drawn = False


@contextmanager
def heartbeat(label: str, every_s: float = 10.0) -> Iterator[None]:
    """`label: 20 s` every `every_s` seconds while a phase with no steps of its own runs (the heavy imports: 8 s
    on an idle 2-core machine, 30 s on a busy one), so a log never goes quiet for long."""
    done = threading.Event()
    start = time.perf_counter()

    def beat() -> None:
        while not done.wait(every_s):
            log.info("%s: %.0f s", label, time.perf_counter() - start)

    thread = threading.Thread(target=beat, name="rlx-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
