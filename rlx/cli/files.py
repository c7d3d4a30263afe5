"""Writing a run's files so that neither a full disk nor a signal loses anything or leaves half a file.

- `guarded(path, what, fix, partial=...)`: around any write (a checkpoint, the exported policy, a JSON file).
  A stop signal waits for the write to finish (rlx.cli.stop.deferred). A full disk (ENOSPC, or EDQUOT: a quota)
  removes the half-written `partial` and raises `DiskFull`: one line naming the file, the free space on its
  file system and the fix, instead of the writer's traceback.
- `write_atomic` / `write_json`: a whole file through a temporary sibling renamed over it (never a torn file;
  the temporary never outlives a failure), guarded.
- `appending(path)`: an append that lands whole or not at all (the file is cut back to its size before it).
- `cut_torn_tail(path)`: an appended file ends at its last complete line (one cut by a kill).
- `as_disk_full(err, run_dir)`: a full disk met by a writer rlx does not guard (samples.jsonl, a library's own
  file; rlx.cli.disk recognises it whatever wrapped it) becomes the same one line.
Standard library only: the status file is written with it before the heavy imports.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rlx.cli import stop
from rlx.cli.disk import RUN_FILES_FIX, disk_full, explain_disk_full, full_message
from rlx.errors import RlxError, chain


class DiskFull(RlxError):
    """A write failed because its file system (or the user's quota on it) is full."""


def as_disk_full(err: BaseException, where: Path) -> BaseException:
    """`err`, or, when it says a disk is full and no guarded write has said so yet (a writer rlx does not own:
    samples.jsonl, a log), the one-line `DiskFull` naming the file or else `where` (the run directory)."""
    if any(isinstance(e, DiskFull) for e in chain(err)):
        return err
    message = explain_disk_full(err, where)
    return err if message is None else DiskFull(message)


def remove(path: Path) -> None:
    """A half-written file or directory, gone (nothing if it never appeared)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def guarded(
    path: Path,
    what: str | None = None,
    fix: str = RUN_FILES_FIX,
    partial: Path | None = None,
    staged_in: Path | None = None,
) -> Iterator[None]:
    """Around a write of `path` (`what` it is, for the messages: `the checkpoint`): a stop signal waits for it;
    on any failure `partial` (what the write leaves half-done) is removed, and a full disk raises `DiskFull`."""
    with stop.deferred(what or Path(path).name):
        try:
            yield
        except BaseException as err:
            if partial is not None:
                remove(partial)
            if isinstance(err, DiskFull) or disk_full(err) is None:
                raise
            raise DiskFull(full_message(Path(path), what or "", fix, staged_in)) from err


def write_atomic(path: Path, data: str | bytes, what: str | None = None) -> None:
    """`path` holds `data`, or (after any failure) what it held before: a temporary sibling, flushed to disk,
    renamed over it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # one per process: two never rename each other's
    with guarded(path, what, partial=tmp):
        with open(tmp, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)


def write_json(path: Path, doc: dict, what: str | None = None) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(doc, indent=2, default=str), what)


@contextmanager
def appending(path: Path, what: str | None = None) -> Iterator[None]:
    """An append to `path` that lands whole or not at all: after a failure the file is cut back to its size
    before the append (a cut needs no free space), so no torn row is left for a retry to follow."""
    path = Path(path)
    before = path.stat().st_size if path.is_file() else None
    with guarded(path, what):
        try:
            yield
        except BaseException:
            if before is None:
                path.unlink(missing_ok=True)
            elif path.is_file():
                os.truncate(path, before)
            raise


def cut_torn_tail(path: Path) -> int:
    """Truncate `path` after its last newline (a line cut by a kill or a full disk); the bytes removed."""
    path = Path(path)
    if not path.is_file():
        return 0
    end = path.stat().st_size
    if end == 0:
        return 0
    with open(path, "rb") as handle:
        keep = end
        while keep > 0:
            start = max(0, keep - 65536)
            handle.seek(start)
            block = handle.read(keep - start)
            newline = block.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            keep = start
        if keep == end:
            return 0
    os.truncate(path, keep)
    return end - keep


def temp_dir() -> Path:
    """Where Lightning stages a checkpoint before moving it into place (fsspec's transaction: tempfile)."""
    return Path(tempfile.gettempdir())
