"""From an empty directory after `pip install .` (a wheel: conf/, sweeps/ and the plugin as package data),
`python -m rlx` runs and a `-m` sweep runs as a multirun and writes its report; nothing comes from the checkout."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import FAST_MODEL, ONE_STEP, output, run_cli
from tests.e2e.installs import REPO, clean_env, install

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return install(tmp_path_factory.mktemp("wheel"), "wheel")[0]


def run_installed(python, argv, cwd, cache):
    return run_cli(argv, cwd, cache, python=python, env=clean_env() | {"RLX_CACHE": str(cache)})


def test_the_wheel_runs_from_an_empty_directory(wheel, tmp_path, test_cache):
    where = run_installed(
        wheel, ["-c", "import rlx, rlx.cli.configs as c; print(rlx.__file__, *c.config_dirs())"], tmp_path, test_cache
    )
    assert where.returncode == 0 and str(REPO) not in where.stdout, output(where)
    proc = run_installed(wheel, ["-m", "rlx", *ONE_STEP, *FAST_MODEL], tmp_path, test_cache)
    assert proc.returncode == 0, output(proc)
    run_dir = re.search(r"run directory:\s+(\S+)", proc.stdout).group(1)
    assert json.loads((tmp_path / run_dir / "summary.json").read_text())["steps"] == 1


def test_a_sweep_from_the_wheel_runs_as_a_multirun_and_writes_its_report(wheel, tmp_path, test_cache):
    proc = run_installed(
        wheel,
        ["-m", "rlx", "-m", "algo.beta=0,0.04", *ONE_STEP, *FAST_MODEL, "hydra.sweep.dir=sweep"],
        tmp_path,
        test_cache,
    )
    assert proc.returncode == 0, output(proc)
    assert "Launching 2 jobs" in proc.stdout, output(proc)
    report = (tmp_path / "sweep" / "report.md").read_text()
    assert "2 runs: 2 completed" in report, report[:600]
    for job in ("0", "1"):
        assert json.loads((tmp_path / "sweep" / job / "status.json").read_text())["status"] == "completed"
    ready = run_installed(wheel, ["-m", "rlx", "+sweeps=eps_beta_g", "--cfg", "hydra"], tmp_path, test_cache)
    assert ready.returncode == 0 and "mode: MULTIRUN" in ready.stdout, output(ready)  # the shipped sweeps compose


# heavy (outside CI's 30-minute budget; plain `pytest` runs it): a second sweep from the wheel
@pytest.mark.heavy
def test_a_sweep_file_with_config_path_still_runs_as_a_multirun(wheel, tmp_path, test_cache):
    """`--config-path` replaces the primary config directory; rlx:// still serves the sweeps, and the sweep runs
    as a multirun (it used to fall back, silently, to one 250-step run)."""
    proc = run_installed(
        wheel,
        [
            "-m",
            "rlx",
            "--config-path",
            str(REPO / "conf"),
            "+sweeps=eps_beta_g",
            "algo.epsilon=0.2",
            "algo.beta=0.0",
            *ONE_STEP,
            *FAST_MODEL,
            "hydra.sweep.dir=sweep",
        ],
        tmp_path,
        test_cache,
    )
    assert proc.returncode == 0, output(proc)
    assert "Launching 1 jobs" in proc.stdout and "1 runs: 1 completed" in (tmp_path / "sweep" / "report.md").read_text()
