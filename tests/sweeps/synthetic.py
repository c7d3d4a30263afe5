"""Hand-written run directories for the report and claims tests (no training)."""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import OmegaConf


def write_job(
    job: Path,
    overrides: list[str],
    metrics: dict[str, list[float]] | None = None,
    summary: dict | None = None,
    status: str | None = "completed",
    inert: dict | None = None,
    footprint: dict | None = None,
    config: dict | None = None,
    heldout: list[dict] | None = None,
) -> Path:
    """A run directory: .hydra/overrides.yaml, metrics.csv (one row per step), summary.json, status.json,
    and optionally inert.json, footprint.json, config.yaml and heldout.jsonl (records of the last evaluation)."""
    (job / ".hydra").mkdir(parents=True, exist_ok=True)
    (job / ".hydra" / "overrides.yaml").write_text(OmegaConf.to_yaml(overrides))
    if metrics:
        names = sorted(metrics)
        steps = max(len(v) for v in metrics.values())
        lines = [",".join(["step", *names])]
        for i in range(steps):
            lines.append(",".join([str(i), *[str(metrics[n][i]) if i < len(metrics[n]) else "" for n in names]]))
        (job / "metrics.csv").write_text("\n".join(lines) + "\n")
    for name, doc in (("summary.json", summary), ("inert.json", inert), ("footprint.json", footprint)):
        if doc is not None:
            (job / name).write_text(json.dumps(doc))
    if status is not None:
        (job / "status.json").write_text(json.dumps({"status": status}))
    if config is not None:
        (job / "config.yaml").write_text(OmegaConf.to_yaml(config))
    if heldout is not None:
        (job / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in heldout))
    return job
