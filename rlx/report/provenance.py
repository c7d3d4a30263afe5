"""Where a report's numbers come from: the code (git commit and whether the tree had uncommitted changes), the
package versions, the machine and the exact command. The sweep-report callback records it in sweep.json when a
sweep starts (the code that ran, not the code that later rebuilt the report); a report rebuilt from a sweep
without it records the rebuild's own and says so.

Nothing here imports torch (versions are read from the installed packages' metadata).
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

PACKAGES = ["rlx", "torch", "transformers", "lightning", "hydra-core", "numpy", "scipy", "vllm", "wandb"]
REPO = Path(__file__).resolve().parents[2]


def git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on (absent ones left out)."""
    found = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def collect() -> dict:
    """{"commit", "dirty", "versions", "machine"}; commit None outside a git checkout (an installed wheel)."""
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "commit": commit,
        "dirty": bool(status) if status is not None else None,
        "versions": versions(),
        "machine": {
            "host": platform.node(),
            "system": f"{platform.system()} {platform.release()}",
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
        },
    }


def markdown(info: dict, wandb_urls: list[str]) -> list[str]:
    """The report's provenance lines: from sweep.json's `provenance` (recorded at the sweep's start) or, for a
    sweep that has none, collected now and labelled so."""
    prov, when = info.get("provenance"), "recorded when the sweep started"
    if not prov:
        prov, when = collect(), "collected when this report was rebuilt: the sweep did not record its own"
    commit = prov.get("commit") or "not a git checkout"
    dirty = {True: " (uncommitted changes)", False: " (clean)", None: ""}[prov.get("dirty")]
    m = prov.get("machine", {})
    lines = [
        "## Provenance",
        "",
        f"- code: `{commit}`{dirty}; {when}",
        f"- command: `{info.get('command', '?')}` (started {info.get('started', '?')})",
        "- packages: " + ", ".join(f"{k} {v}" for k, v in prov.get("versions", {}).items()),
        f"- machine: {m.get('host', '?')}, {m.get('system', '?')}, {m.get('cpu', '?')}, {m.get('cores', '?')} "
        f"cores, Python {m.get('python', '?')}",
    ]
    if wandb_urls:
        lines.append("- W&B runs: " + " ".join(f"[{i}]({u})" for i, u in enumerate(wandb_urls)))
    return lines
