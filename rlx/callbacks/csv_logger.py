"""metrics.csv that a resumed run appends to.

Lightning's CSVLogger deletes an existing metrics.csv when its directory is not empty (it warns "will be
deleted"), so a run resumed into its own directory lost its history. Here an existing file is the run's
own history: `rlx.callbacks.resume` has already dropped the rows written after the checkpoint being
resumed, and new rows are appended. The header is the sorted union of every column seen so far (as
Lightning's), read back from the file; when a new column appears (the first `val/` metrics of a resumed
segment, say) the file is rewritten with the wider header into a temporary file and renamed over the old
one, so an interruption never leaves a half-written metrics.csv. An append lands whole or not at all
(rlx.cli.files.appending): a full disk mid-row leaves the file as it was, so the rows still buffered are
written once, when Lightning finalizes the logger after the error, if the disk has room again by then.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from lightning.fabric.loggers.logger import rank_zero_experiment
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter

from rlx.cli.files import appending, write_atomic


def read_header(path: Path) -> list[str]:
    with path.open(newline="") as handle:
        return next(csv.reader(handle), [])


def write_rows(path: Path, fieldnames: list[str], rows: list[dict]) -> None:
    """Write a whole CSV file atomically: a temporary sibling, flushed to disk, renamed over `path`."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=fieldnames)
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(path, text.getvalue())


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
            with appending(path), path.open("a", newline="") as handle:
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
        assert isinstance(self._experiment, AppendingWriter)  # only ever set just above
        return self._experiment
