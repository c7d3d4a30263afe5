"""One way to run rlx's command-line tools in tests: a subprocess with the test warm-start cache, no W&B key or
network, the checkout importable, one torch thread. Shared by tests/e2e."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# A warm start small enough for tests (the same recipe as tests/conftest.py's FAST_MODEL, so the cache is shared).
FAST_WARM_START = ["model.warm_start.steps=40", "model.warm_start.corpus_size=2000", "data.warm_start_min_match=0",
                   "model.warm_start.max_attempts=1"]
# One RL step of 2 prompts x 2 completions, 16 held-out prompts.
ONE_STEP = ["trainer.max_steps=1", "trainer.val_check_interval=1", "algo.prompts_per_step=2", "algo.group_size=2",
            "data.val_size=16"]


def cli_env(cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "RLX_"))}
    env.update(RLX_CACHE=str(cache), PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", NETRC=os.devnull,
               WANDB_SILENT="true", HYDRA_FULL_ERROR="0")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.update(extra)
    return env


def run(argv: list[str], cwd: Path, cache: Path, timeout: int = 600, python: str | Path = sys.executable,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python <argv...>` (argv starts with `-m rlx`, `bench/x.py`, ...); stdout and stderr captured."""
    return subprocess.run([str(python), *argv], cwd=cwd, env=env or cli_env(cache), capture_output=True, text=True,
                          timeout=timeout, check=False)


def output(proc: subprocess.CompletedProcess) -> str:
    return f"rc={proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
