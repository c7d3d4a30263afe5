"""Resuming a run: what is checked before anything is built, and the run's history across its segments.

`Resume.prepare(cfg)` runs first in `rlx.train.train`, before the data, the reward or the model are built:
  - `ckpt_path=last` picks the newest checkpoint of the run directory (`checkpoint.dirpath`); with none yet
    the run starts fresh, so a job script can always pass it (SLURM requeue);
  - a missing, unreadable (truncated, corrupt) or foreign file, or one written with another configuration
    (`checkpoint.match`: algorithm, model, adapter, data, seed...), fails in one line naming the problem;
  - a fresh run (`ckpt_path=null`) into a directory that already holds checkpoints fails instead of
    overwriting that run's history;
  - the rows the interrupted segment wrote after its checkpoint are dropped from metrics.csv,
    samples.jsonl and heldout.jsonl, so the resumed segment's rows follow on and every step appears exactly once.
A checkpoint carries a run record (`RECORD`): its config identity, seed, max_steps, and the wall time, peak
memory and step range of each segment so far, so summary.json describes the whole run.
"""

from __future__ import annotations

import csv
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from rlx.callbacks.csv_logger import read_header, write_rows
from rlx.cli.files import write_atomic
from rlx.distributed.env import env_is_rank_zero
from rlx.errors import ConfigError

log = logging.getLogger(__name__)
RECORD = "rlx_run"  # the run record's key in every checkpoint rlx writes
LAST = "last.ckpt"
NUMBERED = re.compile(r"step=(\d+)\.ckpt")


class ResumeError(ConfigError):
    pass


def newest_checkpoint(dirpath: Path) -> Path | None:
    """last.ckpt (always the newest one written), else the highest step=<N>.ckpt, else None."""
    if (dirpath / LAST).is_file():
        return dirpath / LAST
    numbered = [(int(m.group(1)), p) for p in dirpath.glob("step=*.ckpt") if (m := NUMBERED.fullmatch(p.name))]
    return max(numbered)[1] if numbered else None


def read_checkpoint(path: Path) -> dict:
    """The checkpoint's contents, tensors memory-mapped (cheap even for a large model); one line if it cannot
    be read. weights_only: a checkpoint is data, never code, as when Lightning loads it."""
    try:
        checkpoint = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    except Exception as err:  # noqa: BLE001 torch raises RuntimeError, pickle errors, EOFError... for a damaged file
        text = str(err).strip()
        reason = text.splitlines()[0].split(". ")[0][:200] if text else type(err).__name__  # its first sentence
        raise ResumeError(
            f"ckpt_path={path} is not a readable checkpoint ({reason}): the file is truncated "
            f"or corrupt. Resume from another one (ckpt_path=<run>/checkpoints/step=<N>.ckpt, kept "
            "with checkpoint.keep) or start a new run (ckpt_path=null)"
        ) from None
    if not isinstance(checkpoint, dict) or RECORD not in checkpoint or "global_step" not in checkpoint:
        raise ResumeError(
            f"ckpt_path={path} was not written by rlx's checkpointing (no run record): resume from a "
            "checkpoint in a run's checkpoints/ directory, or start a new run (ckpt_path=null)"
        )
    return checkpoint


def flatten(value, prefix: str) -> dict[str, object]:
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for key, sub in value.items():
            out.update(flatten(sub, f"{prefix}.{key}"))
        return out or {prefix: {}}
    return {prefix: value}


def identity(cfg: DictConfig, keys: list[str], ignore: list[str]) -> dict[str, object]:
    """The resolved values under `keys` (dotted, flattened); nodes this config lacks are absent."""
    out: dict[str, object] = {}
    for key in keys:
        node = OmegaConf.select(cfg, key, default=None)
        if node is None:
            continue
        value = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
        out.update(flatten(value, key))
    return {k: v for k, v in out.items() if not any(k == i or k.startswith(f"{i}.") for i in ignore)}


def mismatch(saved: dict[str, object], current: dict[str, object], order: list[str]) -> str | None:
    """ "algo.name is 'ppo' in the checkpoint and 'grpo' here (3 more keys differ: ...)", or None. Keys come in
    the order of `order` (checkpoint.match), a node's own name or _target_ first: they say what it is."""

    def rank(key: str) -> tuple:
        node = next((i for i, prefix in enumerate(order) if key == prefix or key.startswith(f"{prefix}.")), len(order))
        return node, key.rsplit(".", 1)[-1] not in ("name", "_target_"), key.count("."), key

    differing = sorted(
        (k for k in set(saved) | set(current) if saved.get(k, "<unset>") != current.get(k, "<unset>")), key=rank
    )
    if not differing:
        return None
    first = differing[0]
    text = f"{first} is {saved.get(first, '<unset>')!r} in the checkpoint and {current.get(first, '<unset>')!r} here"
    if len(differing) > 1:
        more = ", ".join(differing[1:6]) + (", ..." if len(differing) > 6 else "")
        text += f" ({len(differing) - 1} more keys differ: {more})"
    return text


def step_of(value) -> int | None:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None


def trim_history(run_dir: Path, step: int | None) -> tuple[int, int]:
    """Drop the rows a segment wrote after the checkpoint of step `step` being resumed (and any torn last line):
    metrics.csv's and samples.jsonl's of step >= `step`, heldout.jsonl's evaluated after more than `step` steps.
    `step` None: there is no checkpoint (a segment killed before its first one), so the run starts over and
    every row goes, the evaluation before RL included. Returns the rows dropped of metrics.csv and of the two
    jsonl files together."""
    evaluated_through = -1 if step is None else step
    step = 0 if step is None else step
    dropped_metrics = 0
    metrics = run_dir / "metrics.csv"
    if metrics.is_file():
        header = read_header(metrics)
        with metrics.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        kept = [r for r in rows if (s := step_of(r.get("step"))) is not None and s < step]
        dropped_metrics = len(rows) - len(kept)
        if dropped_metrics:
            write_rows(metrics, header, kept)
    # a samples.jsonl row's step is the step that trained it (0 .. step - 1 are done); a heldout.jsonl row's is
    # the number of steps done when it was evaluated, and the evaluation after step `step` ran before that
    # step's checkpoint was committed (rlx.callbacks.checkpoint), so it stays
    dropped_samples = _trim_jsonl(run_dir / "samples.jsonl", step - 1) + _trim_jsonl(
        run_dir / "heldout.jsonl", evaluated_through
    )
    return dropped_metrics, dropped_samples


def _trim_jsonl(path: Path, last: int) -> int:
    """Keep the rows of `path` whose step is at most `last`; drop the rest and a torn last line."""
    if not path.is_file():
        return 0
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if (s := _sample_step(line)) is not None and s <= last]
    if len(kept) < len(lines):
        write_atomic(path, "".join(kept))
    return len(lines) - len(kept)


def _sample_step(line: str) -> int | None:
    try:
        return step_of(json.loads(line).get("step")) if line.endswith("\n") else None
    except (ValueError, AttributeError):
        return None


@dataclass
class Resume:
    """Where this run starts: a checked checkpoint (or none), the run record it carries, and this config's
    identity (written into every new checkpoint)."""

    path: str | None
    step: int
    identity: dict[str, object]
    record: dict = field(default_factory=dict)

    @classmethod
    def prepare(cls, cfg: DictConfig) -> Resume:
        spec = cfg.checkpoint
        ident = identity(cfg, list(spec.match), list(spec.match_ignore))
        dirpath = Path(spec.dirpath)
        if cfg.ckpt_path is None:
            if (dirpath / LAST).is_file():
                raise ResumeError(
                    f"run_dir={cfg.run_dir} already holds a run ({dirpath / LAST}): resume it with "
                    "ckpt_path=last, or start a new run in another directory (hydra.run.dir=...)"
                )
            return cls(None, 0, ident)
        path = newest_checkpoint(dirpath) if cfg.ckpt_path == "last" else Path(str(cfg.ckpt_path)).expanduser()
        if path is None:
            # a segment killed before its first checkpoint may have written rows: the new run writes them again
            dropped = trim_history(Path(cfg.run_dir), None) if env_is_rank_zero() else (0, 0)
            log.warning(
                "ckpt_path=last: no checkpoint in %s yet, starting a new run%s (to resume an earlier run, "
                "set hydra.run.dir to its directory)",
                dirpath,
                f" (dropped {dropped[0]} metrics rows and {dropped[1]} sample rows an earlier start wrote)"
                if any(dropped)
                else "",
            )
            return cls(None, 0, ident)
        if not path.is_file():
            raise ResumeError(
                f"ckpt_path={path} does not exist. Use ckpt_path=last for the newest checkpoint of "
                f"this run directory ({dirpath}), a file under <run>/checkpoints/, or ckpt_path=null "
                "for a new run"
            )
        checkpoint = read_checkpoint(path)
        record, step = checkpoint[RECORD], int(checkpoint["global_step"])
        problem = mismatch(record["identity"], ident, list(spec.match))
        if problem:
            raise ResumeError(
                f"ckpt_path={path} comes from another configuration: {problem}. Resume with the "
                "checkpoint's config (config.yaml in its run directory) or start a new run "
                "(ckpt_path=null)"
            )
        if step > cfg.trainer.max_steps:
            raise ResumeError(
                f"ckpt_path={path} is at step {step}, beyond trainer.max_steps={cfg.trainer.max_steps}: "
                f"set trainer.max_steps >= {step} to continue it"
            )
        # rank 0 alone rewrites the run's files (the other ranks of trainer=ddp run this too)
        dropped = trim_history(Path(cfg.run_dir), step) if env_is_rank_zero() else (0, 0)
        log.info(
            "resuming %s at step %d%s",
            path,
            step,
            f" (dropped {dropped[0]} metrics rows and {dropped[1]} sample rows written after it)"
            if any(dropped)
            else "",
        )
        return cls(str(path), step, ident, record)

    def attach(self, trainer, started: float) -> None:
        """Hand the run's checkpoint callback this config's identity and the record it continues."""
        for callback in trainer.callbacks:  # rlx.callbacks.checkpoint.Checkpointing (which imports this module)
            begin_segment = getattr(callback, "begin_segment", None)
            if begin_segment is not None:
                begin_segment(self.identity, self.record, self.step, started)

    def totals(self, trainer, wall_s: float, peak_rss_mb: float) -> dict:
        """summary.json's wall time, peak memory and segments for the whole run, this segment included."""
        segments = [
            *self.record.get("segments", []),
            {"from_step": self.step, "to_step": trainer.global_step, "wall_s": round(wall_s, 1)},
        ]
        return {
            "wall_s": round(sum(s["wall_s"] for s in segments), 1),
            "peak_rss_mb": round(max(peak_rss_mb, self.record.get("peak_rss_mb", 0.0)), 1),
            "segments": segments,
        }

    @staticmethod
    def raise_if_stopped(trainer) -> None:
        """A run stopped early by a guard (rlx.callbacks.infra) ends in the guard's error, after the checkpoint
        that its stop triggered."""
        for callback in trainer.callbacks:
            error = getattr(callback, "stop_error", None)
            if error is not None:
                raise error
