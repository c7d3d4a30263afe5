"""Hydra discovers rlx's search-path plugin from an *installed* rlx, in each way it gets installed: a wheel,
the compat editable install that CI and the README use, and setuptools' default (strict) editable install
(which hides namespace plugins from Hydra in some layouts: hydra issues 2359, 3252).

Each case installs a copy of the package into a throwaway venv (--no-deps; no build isolation where this
environment can build rlx itself, so no network) that sees this interpreter's site-packages for hydra & co.
through a path file, and asks Hydra from a directory outside the repo, with no PYTHONPATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from tests.sweeps.sweep_helpers import REPO

pytestmark = pytest.mark.slow

DISCOVER = """
import inspect
from hydra.core.plugins import Plugins
from hydra.plugins.search_path_plugin import SearchPathPlugin
for p in Plugins.instance().discover(SearchPathPlugin):
    print("PLUGIN", p.__module__ + "." + p.__name__, inspect.getfile(p))
"""


def builds_without_index() -> bool:
    """This environment can build rlx itself (setuptools >= 64 for PEP 660, and bdist_wheel: built into
    setuptools >= 70.1 or from `wheel`). If not (a fresh 3.11 venv ships setuptools 65), pip builds in
    isolation, fetching them from the package index as the CI install just did."""
    from importlib.metadata import PackageNotFoundError, version
    from importlib.util import find_spec

    try:
        major, minor = (int(x) for x in version("setuptools").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (64, 0) and ((major, minor) >= (70, 1) or find_spec("wheel") is not None)


def install(tmp_path: Path, mode: str) -> tuple[Path, Path]:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("rlx", "hydra_plugins", "conf", "sweeps", "pyproject.toml", "README.md"):
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif (REPO / name).is_file():
            shutil.copy(REPO / name, src / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.check_output([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        text=True).strip())
    (site / "_host_site.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    args = ["."] if mode == "wheel" else ["-e", ".", "--config-settings", f"editable_mode={mode}"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    isolation = ["--no-build-isolation"] if builds_without_index() else []
    done = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", *isolation,
                           "--disable-pip-version-check", *args], cwd=src, env=env, text=True,
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return python, src


@pytest.mark.parametrize("mode", ["compat", "wheel", "strict"])
def test_hydra_discovers_the_search_path_plugin_from_the_installed_package(tmp_path, mode):
    python, src = install(tmp_path, mode)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run([python, "-c", DISCOVER], cwd=elsewhere, env=env, text=True, capture_output=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    found = [line.split()[1:] for line in out.stdout.splitlines() if line.startswith("PLUGIN ")]
    ours = [path for name, path in found if name == "hydra_plugins.rlx_searchpath.rlx_searchpath.RlxSearchPathPlugin"]
    assert ours, f"Hydra did not discover RlxSearchPathPlugin ({mode} install): {found}"
    assert not ours[0].startswith(str(REPO)), f"found the checkout's copy, not the installed one: {ours[0]}"
    if mode == "compat":  # the CI / README install: the ready sweeps compose from anywhere
        cfg = subprocess.run([python, "-m", "rlx", "+sweeps=eps_beta_g", "--cfg", "hydra"], cwd=elsewhere, env=env,
                             text=True, capture_output=True, timeout=120)
        assert cfg.returncode == 0, cfg.stderr[-3000:]
        assert "algo.group_size: 4,8" in cfg.stdout and "mode: MULTIRUN" in cfg.stdout
