"""This process's peak memory: what summary.json and each checkpoint's run record report (rlx.train,
rlx.callbacks.checkpoint)."""

from __future__ import annotations

import logging
import resource
from pathlib import Path

import torch

log = logging.getLogger(__name__)


def reset_peak_memory() -> None:
    """Start this run's peak-memory count afresh (Linux: writing 5 to /proc/self/clear_refs resets the
    high-water RSS that getrusage reports; CUDA: the allocator's peak statistics)."""
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError as err:
        log.warning("could not reset the peak-RSS counter (%s): peak_rss_mb covers the whole process", err)


def peak_rss_mb() -> float:
    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
