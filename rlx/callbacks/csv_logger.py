"""metrics.csv that a resumed run appends to.

Lightning's CSVLogger deletes an existing metrics.csv when its directory is not empty (it warns "will be
deleted"), so a run resumed into its own directory lost its history. Here an existing file is the run's
own history: `rlx.callbacks.resume` has already dropped the rows written after the checkpoint being
resumed, and new rows are appended. The header is the sorted union of every column seen so far (as
Lightning's), read back from the file; when a new column appears (the first `val/` metrics of a resumed
segment, say) the file is rewritten with the wider header into a temporary file and renamed over the old
one, so an interruption never leaves a half-written metrics.csv.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from lightning.fabric.loggers.logger import rank_zero_experiment
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter


def read_header(path: Path) -> list[str]:
    with path.open(newline="") as handle:
        return next(csv.reader(handle), [])


def write_rows(path: Path, fieldnames: list[str], rows: list[dict]) -> None:
    """Write a whole CSV file atomically: a temporary sibling, flushed to disk, renamed over `path`."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class AppendingWriter(ExperimentWriter):
    def _check_log_dir_exists(self) -> None:
        """Keep an existing metrics.csv: it is this run's history (Lightning's writer deletes it here)."""

    def save(self) -> None:
        if not self.metrics:
            return
        path = Path(self.metrics_file_path)
        header = read_header(path) if path.is_file() else []
        keys = sorted(set(header).union(*self.metrics))
        if header and keys == header:
            with path.open("a", newline="") as handle:
                csv.DictWriter(handle, fieldnames=keys).writerows(self.metrics)
        else:
            old = []
            if header:
                with path.open(newline="") as handle:
                    old = list(csv.DictReader(handle))
            write_rows(path, keys, old + self.metrics)
        self.metrics_keys = keys
        self.metrics = []


class RunCSVLogger(CSVLogger):
    """Lightning's CSVLogger with a writer that appends to the run's metrics.csv instead of replacing it."""

    @property
    @rank_zero_experiment
    def experiment(self) -> AppendingWriter:
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = AppendingWriter(log_dir=self.log_dir)
        return self._experiment
