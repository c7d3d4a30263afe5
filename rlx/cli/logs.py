"""One console handler, rlx's own: every line printed once, third-party chatter fixed or filtered.

conf/hydra/job_logging/rlx.yaml installs `ConsoleHandler` + `ConsoleFormatter` on the root logger (and a
file handler for <run_dir>/rlx.log); `quiet_third_party()` runs once the heavy libraries are imported.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings

# Warnings about how rlx deliberately uses a library, each filtered where it cannot be fixed at its cause.
# (message regex, why it does not apply to rlx)
FILTERED_WARNINGS = [
    (
        r"Experiment logs directory .* exists and is not empty",
        (
            "the CSV logger writes metrics.csv into the run directory Hydra has just created (it already holds "
            ".hydra/ and rlx.log); there are no earlier metrics in it to lose"
        ),
    ),
    (
        r"Found \d+ module\(s\) in eval mode",
        (
            "rlx samples and scores with the policy in eval mode (no dropout, so PPO ratios start at exactly 1) and "
            "keeps the frozen reference in eval mode; Lightning warns about any eval-mode module at fit start"
        ),
    ),
    (
        r"Using ModelCheckpoint with manual optimization",
        "rlx optimises manually; a checkpoint after the step's update is what resuming at the next step needs",
    ),
    (
        r"`is_gradient_checkpointing` is deprecated",
        (
            "a FutureWarning from transformers 5.24 when peft (peft=lora) reads the model's old "
            "`is_gradient_checkpointing` attribute while wrapping it (peft/peft_model.py); rlx never reads it"
        ),
    ),
    (
        r"`isinstance\(treespec, LeafSpec\)` is deprecated",
        "raised inside Lightning's own pytree helper under torch 2.13; nothing rlx calls",
    ),
]

# Lightning's INFO chatter (GPU/TPU availability, a litlogger advert, "Seed set to", "`Trainer.fit` stopped")
# comes from these loggers; rlx prints its own start line with the device and its own end summary.
QUIET_INFO = [
    "lightning.pytorch.utilities.rank_zero",
    "lightning.fabric.utilities.rank_zero",
    "lightning.fabric.utilities.seed",
    "lightning.pytorch.accelerators.cuda",
]


def stream_is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class ConsoleHandler(logging.StreamHandler):
    """stdout (so `| tee` and nohup capture the logs with the progress); on a terminal each record first
    erases the progress line it interrupts (rlx.cli.progress redraws it at the next step)."""

    def __init__(self, stream=None) -> None:
        super().__init__(stream or sys.stdout)

    def emit(self, record: logging.LogRecord) -> None:
        if stream_is_tty(self.stream):
            self.stream.write("\r\x1b[K")
        super().emit(record)


class ConsoleFormatter(logging.Formatter):
    """`12:01:02 message` for rlx's INFO; warnings and errors labelled; other libraries named."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        source = record.name.split(".")[0]
        label = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        if source == "py":  # py.warnings: "file:line: Category: text" from warnings.formatwarning
            return f"{stamp} warning: {message.strip()}"
        origin = "" if source in ("rlx", "root", "__main__") else f"[{source}] "
        return f"{stamp} {label}{origin}{message}"


def quiet_third_party() -> None:
    """After the heavy imports: route Lightning through the root handler once, filter the warnings above,
    send Python warnings to the log, turn off transformers' progress bars."""
    import lightning.pytorch  # noqa: F401 — importing lightning adds the handlers removed below

    # lightning/__init__.py adds a StreamHandler ("INFO: ...") to "lightning" and, when the root logger had no
    # handler at import, lightning.pytorch/fabric add their own and stop propagating: every line twice.
    for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.propagate = True
    for name in QUIET_INFO:
        logging.getLogger(name).setLevel(logging.WARNING)
    for pattern, _why in FILTERED_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
    logging.captureWarnings(True)
    # wandb prints ~35 lines of its own (banner, sync hints, run summary) when logger=wandb; its full log stays in
    # <run_dir>/wandb/*/logs/debug-internal.log and rlx logs where the run went. WANDB_SILENT=false shows them.
    os.environ.setdefault("WANDB_SILENT", "true")
    try:  # "Loading weights" / "Writing model shards" bars for a 4 MB model rlx saves and reloads itself
        # deferred: transformers stays out of --help's start-up; only a run's logging needs it
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_warning()
    except ImportError:
        pass
