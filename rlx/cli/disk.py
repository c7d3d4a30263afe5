"""What a full disk looks like, and the one line that says so: the file, the free space on its file system and
the fix. Standard library only, and no rlx import: rlx.errors.explain reads it for any writer's full disk.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
FULL_TEXTS = ("No space left on device", "Disk quota exceeded", "StorageFull")  # errno lost by a wrapper
RUN_FILES_FIX = "free space there, or start the run in a directory on a disk with room (hydra.run.dir=...)"


def disk_full(err: BaseException) -> BaseException | None:
    """The exception in `err`'s chain that says a disk or quota is full, or None."""
    seen: list[BaseException] = []
    link: BaseException | None = err
    while link is not None and link not in seen:
        seen.append(link)
        if isinstance(link, OSError) and link.errno in FULL_ERRNOS or any(t in str(link) for t in FULL_TEXTS):
            return link
        link = link.__cause__ or link.__context__
    return None


def size(n: float) -> str:
    """`0 B`, `512 KiB`, `3.2 GiB` (powers of 1024, as `df -h`)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" or n >= 100 else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def existing(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists (the file system a file would be written to)."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_space(path: Path) -> str:
    """`120 MiB free of 20 GiB` on the file system holding `path`."""
    try:
        usage = shutil.disk_usage(existing(path))
    except OSError:
        return "free space unknown"
    return f"{size(usage.free)} free of {size(usage.total)}"


def full_message(path: Path, what: str, fix: str, staged_in: Path | None = None) -> str:
    """`disk full writing the checkpoint <path> (0 B free of 20 GiB there): <fix>`; a writer that stages the file
    in another file system first (Lightning: the temp directory) has that one's free space named too."""
    text = f"disk full writing {f'{what} ' if what else ''}{path} ({free_space(path)} there"
    if staged_in is not None and _device(staged_in) not in (None, _device(path)):
        text += f"; it is written to {staged_in} first, {free_space(staged_in)} there"
    return f"{text}): {fix}"


def explain_disk_full(err: BaseException, where: Path | None = None) -> str | None:
    """The one line for a full disk anywhere in `err`'s chain (None if it is not one): the file the failing
    call named, else `where` (the run directory), else the working directory."""
    full = disk_full(err)
    if full is None:
        return None
    named = getattr(full, "filename", None)
    path = Path(named) if isinstance(named, (str, os.PathLike)) else where or Path.cwd()
    return full_message(path, "" if named else "into", RUN_FILES_FIX)


def _device(path: Path) -> int | None:
    try:
        return existing(path).stat().st_dev
    except OSError:
        return None
