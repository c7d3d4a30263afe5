"""Read one sweep directory back: each job's overrides, status, summary and logged metrics.

Layout (Hydra's, plus two small files the sweep-report callback writes):

    <sweep_dir>/sweep.json               name, swept keys, command (on_multirun_start)
    <sweep_dir>/<n>/.hydra/overrides.yaml that job's task overrides (Hydra)
    <sweep_dir>/<n>/status.json          running → completed | failed (+ error) (on_job_start / on_job_end)
    <sweep_dir>/<n>/summary.json         before/after held-out metrics, wall time (rlx.train)
    <sweep_dir>/<n>/metrics.csv          every logged metric by step (Lightning's CSVLogger)
    <sweep_dir>/<n>/inert.json           keys set for this run that could not change anything (rlx.inert)
    <sweep_dir>/<n>/footprint.json       training-state bytes and the starting model (rlx.report.run)
    <sweep_dir>/<n>/heldout.jsonl        each held-out prompt's verdict at each evaluation (rlx.module)

A single run directory (`python -m rlx`, no sweep) has the same files without the `<n>/` level.

Nothing here imports torch or matplotlib.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

STATUS_FILE = "status.json"
SWEEP_FILE = "sweep.json"
INERT_FILE = "inert.json"  # written by rlx.inert.warn_inert
FOOTPRINT_FILE = "footprint.json"  # written by rlx.report.run.finish_run
HELD_OUT_FILE = "heldout.jsonl"  # written by rlx.module: each held-out row's verdict at each evaluation


def sweep_name(sweep_dir: str | Path) -> str:
    """The sweep's name (and W&B group): the sweep directory's last two path components, e.g.
    `eps_beta_g/2026-11-30_16-22-19` for `multirun/eps_beta_g/2026-11-30_16-22-19`."""
    parts = Path(sweep_dir).parts
    return "/".join(parts[-2:]) if len(parts) >= 2 else str(sweep_dir)


def split_override(override: str) -> tuple[str, str]:
    """`+algo.beta=0.04` → (`algo.beta`, `0.04`); `~key` → (`key`, `~`)."""
    text = override.lstrip("+")
    if text.startswith("~"):
        return text[1:].split("=", 1)[0], "~"
    key, _, value = text.partition("=")
    return key, value


def read_overrides(job_dir: Path) -> list[str]:
    path = job_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return []
    # deferred: rlx.report.runs is stdlib-only; omegaconf only for a sweep's overrides file
    from omegaconf import OmegaConf  # Hydra writes a YAML list of strings

    return [str(x) for x in OmegaConf.load(path)]


def read_metrics(path: Path | None) -> dict[str, list[tuple[int, float]]]:
    """metrics.csv → {metric: [(step, value), ...]} for the non-empty cells."""
    if path is None or not path.is_file():
        return {}
    series: dict[str, list[tuple[int, float]]] = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            step = row.get("step")
            if step in (None, ""):
                continue
            for key, value in row.items():
                if key in ("step", "epoch") or value in (None, ""):
                    continue
                try:
                    number = float(value)
                except ValueError:
                    continue
                if number == number:  # NaN: the step had nothing to average (rollout/length_fail with no failure)
                    series.setdefault(key, []).append((int(float(step)), number))
    return series


def tail_mean(points: list[tuple[int, float]], fraction: float = 0.1) -> float | None:
    """Mean of the last `fraction` of the points (at least one): the "final" value of a noisy RL curve."""
    if not points:
        return None
    k = max(1, math.ceil(len(points) * fraction))
    values = [v for _, v in points[-k:]]
    return sum(values) / len(values)


@dataclass
class Run:
    job_dir: Path
    num: int | None
    overrides: list[str]
    status: str  # completed | failed | running (started, never ended: killed) | unknown
    error: str | None = None
    summary: dict = field(default_factory=dict)
    metrics: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    inert: dict[str, str] = field(default_factory=dict)  # key -> why it could not change anything
    footprint: dict = field(default_factory=dict)
    cpu_s: float | None = None  # the job's CPU seconds (status.json, written by the sweep-report callback)
    cpu_s_by_phase: dict[str, float] = field(default_factory=dict)  # its split by phase (rlx.cli.status)
    wandb_url: str | None = None  # its W&B run page when it logged online (status.json)

    @property
    def override_map(self) -> dict[str, str]:
        return dict(split_override(o) for o in self.overrides)

    def final(self, metric: str) -> float | None:
        return tail_mean(self.metrics.get(metric, []))

    def mean(self, metric: str) -> float | None:
        """The metric's mean over every logged step (e.g. the share of zero-variance groups over a run)."""
        points = self.metrics.get(metric, [])
        return sum(v for _, v in points) / len(points) if points else None

    def total(self, metric: str) -> float | None:
        points = self.metrics.get(metric, [])
        return sum(v for _, v in points) if points else None

    def held_out(self, when: str, metric: str = "val/accuracy") -> float | None:
        value = (self.summary.get(when) or {}).get(metric)
        return None if value is None else float(value)

    def no_learning_signal(self) -> bool:
        """Every logged RL step's groups had all-equal rewards (reward/zero_std_frac = 1 at every step): every
        advantage was 0, so the policy gradient was 0 throughout (a KL or entropy term alone moved the weights).
        False for a run that logged no step."""
        points = self.metrics.get("reward/zero_std_frac", [])
        return bool(points) and all(v >= 1.0 for _, v in points)

    def tokens_generated(self) -> float | None:
        """Completion tokens the rollout generated over the run (every round of dynamic sampling included):
        Σ over steps of rollout/tok_per_s × rollout/seconds, the two numbers each step logs."""
        rates, seconds = dict(self.metrics.get("rollout/tok_per_s", [])), self.metrics.get("rollout/seconds", [])
        if not seconds or not rates:
            return None
        return float(sum(rates.get(step, 0.0) * s for step, s in seconds))

    def held_out_rows(self, step: int | None = None) -> list[dict]:
        """heldout.jsonl's records of the evaluation after `step` RL steps (0: before RL; None: the run's last
        evaluation, the "after" one), in file order."""
        path = self.job_dir / HELD_OUT_FILE
        if not path.is_file():
            return []
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:  # a line cut by a kill: the rows before it stand
                continue
        when = max((r.get("step", 0) for r in rows), default=0) if step is None else step
        return [r for r in rows if r.get("step", 0) == when]


def _metrics_path(job_dir: Path, summary: dict) -> Path | None:
    candidates = [summary.get("metrics_csv"), job_dir / "metrics.csv"]
    for c in candidates:
        if c and Path(c).is_file():
            return Path(c)
    found = sorted(job_dir.glob("**/metrics.csv"))
    return found[0] if found else None


def load_run(job_dir: Path) -> Run:
    summary = _read_json(job_dir / "summary.json")
    status_doc = _read_json(job_dir / STATUS_FILE)
    if "error" not in status_doc and summary.get("error"):
        status_doc["error"] = summary["error"]
    # status.json is the job's own record; a run's summary.json says how it ended too (a failed or stopped run
    # writes one), for a directory whose status.json could not be written (a full disk)
    status = status_doc.get("status") or summary.get("status") or ("completed" if summary else "unknown")
    if status == "completed" and not summary:  # the job function returned without finishing its run
        status = "failed"
        status_doc.setdefault("error", "no summary.json")
    try:
        num = int(job_dir.name)
    except ValueError:
        num = None
    return Run(
        job_dir=job_dir,
        num=num,
        overrides=read_overrides(job_dir),
        status=status,
        error=status_doc.get("error"),
        summary=summary,
        metrics=read_metrics(_metrics_path(job_dir, summary)),
        inert=_read_json(job_dir / INERT_FILE),
        footprint=_read_json(job_dir / FOOTPRINT_FILE),
        cpu_s=status_doc.get("cpu_s"),
        cpu_s_by_phase=status_doc.get("cpu_s_by_phase") or {},
        wandb_url=status_doc.get("wandb_url"),
    )


def is_sweep_dir(path: str | Path) -> bool:
    """A Hydra sweep directory: job subdirectories with their .hydra/overrides.yaml."""
    return any(Path(path).glob("*/.hydra/overrides.yaml"))


def is_run_dir(path: str | Path) -> bool:
    path = Path(path)
    return any((path / name).is_file() for name in ("summary.json", "metrics.csv", ".hydra/overrides.yaml"))


def load_sweep(sweep_dir: str | Path) -> tuple[dict, list[Run]]:
    """The sweep's own record (sweep.json, may be empty) and its runs, in job order."""
    sweep_dir = Path(sweep_dir)
    info = _read_json(sweep_dir / SWEEP_FILE)
    jobs = [p.parent.parent for p in sweep_dir.glob("*/.hydra/overrides.yaml")]
    runs = [load_run(j) for j in jobs]
    runs.sort(key=lambda r: (r.num is None, r.num if r.num is not None else 0, r.job_dir.name))
    return info, runs


def differing_keys(runs: list[Run], swept: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Override keys whose values are not the same in every run, plus the keys the sweep declared as swept,
    in first-seen order."""
    maps = [r.override_map for r in runs]
    keys: list[str] = []
    for m in maps:
        keys += [k for k in m if k not in keys]
    differ = [k for k in keys if len({m.get(k) for m in maps}) > 1 or k in swept]
    return differ + [k for k in swept if k not in differ and any(k in m for m in maps)]


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
