"""The progress line: `step N/M` with reward, KL and clipfrac (Lightning's bar counts epochs: `Epoch 0/-2`).

On a terminal one line is redrawn in place every step; off a terminal (nohup, SLURM, `| tee`) a line is
printed every `every_n_steps` steps (and after 10 s without one), and at the first and last step. Held-out
evaluations inside the fit are printed as their own line; any evaluation (the ones before and after RL too)
shows its rows done as it goes (rlx.cli.ticker: every 10 s off a terminal).
"""

from __future__ import annotations

import sys
import time

from lightning.pytorch.callbacks import Callback

from rlx.cli.logs import stream_is_tty
from rlx.cli.ticker import Ticker
from rlx.errors import ConfigError

SHOWN = (("reward", "reward/mean", "{:.3f}"), ("kl", "loss/kl", "{:.4f}"), ("clipfrac", "loss/clipfrac", "{:.3f}"))


def format_step(step: int, total: int, metrics: dict, seconds_per_step: float | None) -> str:
    """`step 12/250  reward 0.625  kl 0.0123  clipfrac 0.000  0.31 s/step  eta 1.2 min`."""
    parts = [f"step {step}/{total}"]
    for label, key, fmt in SHOWN:
        if key in metrics:
            parts.append(f"{label} {fmt.format(float(metrics[key]))}")
    if seconds_per_step is not None:
        parts.append(f"{seconds_per_step:.2f} s/step")
        left = (total - step) * seconds_per_step
        if step < total:
            parts.append(f"eta {left / 60:.1f} min" if left >= 60 else f"eta {left:.0f} s")
    return "  ".join(parts)


def stamp() -> str:
    return time.strftime("%H:%M:%S")


class Progress(Callback):
    """Args:
    every_n_steps: off a terminal, print a progress line every this many RL steps.
    """

    def __init__(self, every_n_steps: int, stream=None) -> None:  # stream: tests capture the output
        if every_n_steps < 1:
            raise ConfigError(f"trainer.callbacks: Progress every_n_steps must be >= 1 (got {every_n_steps})")
        self.every_n_steps = every_n_steps
        self.stream = stream
        self._start: float | None = None
        self._start_step = 0
        self._drawn = False
        self._evaluation: Ticker | None = None
        self._printed = time.monotonic()
        self._rows = 0

    @property
    def out(self):
        return self.stream or sys.stdout

    def on_train_start(self, trainer, pl_module) -> None:
        self._start, self._start_step = time.perf_counter(), trainer.global_step

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        step, total = trainer.global_step, trainer.max_steps
        done = step - self._start_step
        rate = (time.perf_counter() - self._start) / done if self._start is not None and done > 0 else None
        line = format_step(step, total, trainer.callback_metrics, rate)
        if stream_is_tty(self.out):
            self.out.write("\r\x1b[K" + line)
            self._drawn = True
        elif step % self.every_n_steps == 0 or step == total or done == 1 or time.monotonic() - self._printed >= 10:
            self.out.write(f"{stamp()} {line}\n")  # (every 10 s at least: a slow step or a busy machine)
            self._printed = time.monotonic()
        self.out.flush()

    def on_validation_start(self, trainer, pl_module) -> None:
        loader = trainer.val_dataloaders
        sampler = getattr(loader, "sampler", None)
        total = len(sampler) if sampler is not None and hasattr(sampler, "__len__") else None
        self._newline()
        self._evaluation, self._rows = Ticker("held-out evaluation", total, unit="rows", stream=self.stream), 0

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self._rows += len(batch) if hasattr(batch, "__len__") else 1
        if self._evaluation is not None:
            self._evaluation.update(self._rows)

    def on_validation_end(self, trainer, pl_module) -> None:
        if self._evaluation is not None:
            self._evaluation.close()
            self._evaluation = None
        if trainer.state.fn != "fit" or trainer.sanity_checking:
            return  # the evaluations before and after RL are reported by rlx.train
        metrics = trainer.callback_metrics
        shown = "  ".join(f"{k} {float(v):.3f}" for k, v in metrics.items() if k.startswith("val/"))
        self._newline()
        self.out.write(f"{stamp()} step {trainer.global_step}/{trainer.max_steps}  held-out: {shown}\n")
        self.out.flush()

    def on_train_end(self, trainer, pl_module) -> None:
        self._newline()

    def _newline(self) -> None:
        if self._drawn:
            self.out.write("\n")
            self._drawn = False
