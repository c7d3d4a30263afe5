"""The test harness every test shares: the real config composed with Hydra's compose API (and shrunk for
speed), the tests' own warm-start cache, and one way to run rlx's command-line tools in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"

# A warm start small enough for tests; cached under the test cache dir after the first build.
FAST_MODEL = [
    "model.warm_start.steps=40",
    "model.warm_start.corpus_size=2000",
    "data.warm_start_min_match=0",
    "model.warm_start.max_attempts=1",
]
# A task with a real learning signal: 16 training prompts (operands 10-14), 9 held out; a 60-step warm start
# with a short warm-up leaves rewards between 0.3 and 0.7, so every step has groups with non-zero advantages
# and really moves the weights and the optimiser state.
TINY_TASK = [
    "data.low=10",
    "data.high=14",
    "data.val_size=9",
    "data.warm_start_min_match=0",
    "model.warm_start.steps=60",
    "model.warm_start.warmup_steps=5",
    "model.warm_start.corpus_size=500",
    "model.warm_start.max_attempts=1",
]
# One RL step of 2 prompts x 2 completions, 16 held-out prompts.
ONE_STEP = [
    "trainer.max_steps=1",
    "trainer.val_check_interval=1",
    "algo.prompts_per_step=2",
    "algo.group_size=2",
    "data.val_size=16",
]


def options(group: str) -> list[str]:
    """The options of config group `group` (conf/<group>/*.yaml; `_base`-style files are not options)."""
    return sorted(p.stem for p in (CONF / group).glob("*.yaml") if not p.stem.startswith("_"))


def compose_config(
    overrides: list[str], run_dir: Path | str | None = None, config_dir: Path | None = None, with_hydra: bool = False
):
    """rlx's config as `python -m rlx [--config-dir config_dir] <overrides>` composes it (the `hydra` node too
    with `with_hydra`); `run_dir` is prepended as the `run_dir=` override. Hydra's global state is cleared
    before and after, so a test may compose as often as it likes."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from rlx.cli import configs

    configs.register()  # as the CLI does: rlx:// (conf/ with sweeps/) even where Hydra's plugin scan misses it
    head = [f"run_dir={run_dir}"] if run_dir is not None else []
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir or CONF), version_base="1.3"):
            return hydra_compose("config", overrides=[*head, *overrides], return_hydra_config=with_hydra)
    finally:
        GlobalHydra.instance().clear()


@pytest.fixture
def cfg_factory(tmp_path):
    """`cfg_factory(*overrides)`: the composed config, its run_dir under this test's tmp_path."""
    return lambda *overrides: compose_config(list(overrides), tmp_path / "run")


@pytest.fixture(scope="session")
def test_cache(tmp_path_factory):
    """The tests' warm-start cache, one per session; under pytest-xdist (`-n`) one shared by the workers (the
    parent of their base temp dirs), since the warm starts rlx caches are built under a lock: the first worker to
    need one builds it, the others wait for it and load it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return tmp_path_factory.mktemp("rlx-cache")
    shared = tmp_path_factory.getbasetemp().parent / "rlx-cache"
    shared.mkdir(exist_ok=True)
    return shared


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker among several: one torch thread each, not one per core
        import torch

        torch.set_num_threads(1)


def cli_env(cache: Path, **extra: str) -> dict[str, str]:
    """A fresh CI machine's environment: the test warm-start cache, no W&B key or network, the checkout
    importable, one torch thread, unbuffered output; `extra` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "RLX_"))}
    env.update(
        RLX_CACHE=str(cache),
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
        NETRC=os.devnull,
        WANDB_SILENT="true",
        HYDRA_FULL_ERROR="0",
    )
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.update(extra)
    return env


def run_cli(
    argv: list[str],
    cwd: Path,
    cache: Path,
    timeout: float = 600,
    python: str | Path = sys.executable,
    env: dict[str, str] | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess:
    """`python <argv...>` (argv starts with `-m rlx`, `-m rlx.report`, `bench/x.py`, ...; `python` may be another
    interpreter or `torchrun`) in `cli_env(cache)` (or `env`), stdout and stderr captured. With `check`, a
    non-zero exit fails the test with `output(proc)`."""
    proc = subprocess.run(
        [str(python), *argv],
        cwd=cwd,
        env=env or cli_env(cache),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check:
        assert proc.returncode == 0, output(proc)
    return proc


def start_cli(argv: list[str], cwd: Path, cache: Path) -> subprocess.Popen:
    """`run_cli` for a run the test signals or watches while it runs: the process, stderr merged into stdout."""
    return subprocess.Popen(
        [sys.executable, *argv],
        cwd=cwd,
        env=cli_env(cache),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def output(proc: subprocess.CompletedProcess) -> str:
    """The return code and the tails of stdout and stderr, for an assertion's message."""
    return f"rc={proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
