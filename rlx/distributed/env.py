"""A process's rank from its launcher's environment, for code that runs without a process group (a Hydra
callback, the start of `train`): standard library only, so importing it costs nothing."""

from __future__ import annotations

import logging
import os
import sys

# The variables that place a process in a launch: Lightning's subprocess launcher sets LOCAL_RANK and NODE_RANK in
# the ranks it starts (and 0 in its own process once it has started them), torchrun sets RANK, LOCAL_RANK and
# GROUP_RANK, SLURM sets SLURM_PROCID per task, jsrun JSM_NAMESPACE_RANK.
RANK_VARIABLES = ("RANK", "LOCAL_RANK", "NODE_RANK", "GROUP_RANK", "SLURM_PROCID", "JSM_NAMESPACE_RANK")


def env_is_rank_zero() -> bool:
    """True unless one of RANK_VARIABLES is set to something other than 0."""
    for name in RANK_VARIABLES:
        value = os.environ.get(name)
        if value is not None and value.strip() not in ("", "0"):
            return False
    return True


def quiet_other_ranks() -> None:
    """One console: rank 0's. On every other rank the handlers that write to stdout keep only warnings and
    errors, and `print` goes nowhere; each rank's full log still goes to its own file (Hydra's job log)."""
    if env_is_rank_zero():
        return
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and getattr(handler, "stream", None) is sys.stdout:
            handler.setLevel(logging.WARNING)
    sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (for the rest of the process)
