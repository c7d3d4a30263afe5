"""Hydra discovers rlx's plugin (plugins/rlx_searchpath, the `rlx://` config source and the search-path plugin)
from an *installed* rlx: a wheel (`pip install .`), setuptools' default editable install (the README's
`pip install -e .`) and its strict mode. In compat mode (the project root on sys.path, nothing else) the
namespace package is invisible to Hydra's scan (hydra issues 2359, 3252), so there `python -m rlx` registers
the same classes itself: the CLI composes its sweeps in every mode. Each case asks from a directory outside the
repository, with no PYTHONPATH."""

from __future__ import annotations

import subprocess

import pytest

from tests.e2e.installs import REPO, clean_env, install

pytestmark = pytest.mark.slow

DISCOVER = """
import inspect
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
for kind in (SearchPathPlugin, ConfigSource):
    for p in Plugins.instance().discover(kind):
        print("PLUGIN", p.__name__, inspect.getfile(p))
"""

# A user's own Hydra app composing rlx's groups and a ready sweep through the discovered plugin.
USER_APP = """
from hydra import compose, initialize
with initialize(config_path=None, version_base="1.3"):
    cfg = compose("config", overrides=["algo=dapo", "+sweeps=eps_beta_g"], return_hydra_config=True)
print("COMPOSED", cfg.algo.name, cfg.hydra.mode, dict(cfg.hydra.sweeper.params))
"""


@pytest.fixture(scope="module")
def installs(tmp_path_factory):
    root = tmp_path_factory.mktemp("installs")
    return lambda mode: install(root, mode)


@pytest.mark.parametrize("mode", ["wheel", "lenient", "strict"])
def test_hydra_discovers_the_plugin_from_the_installed_package(installs, tmp_path, mode):
    python, _ = installs(mode)
    out = subprocess.run([python, "-c", DISCOVER], cwd=tmp_path, env=clean_env(), text=True, capture_output=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    found = dict(line.split()[1:] for line in out.stdout.splitlines() if line.startswith("PLUGIN "))
    assert {"RlxSearchPathPlugin", "RlxConfigSource"} <= set(found), f"not discovered ({mode} install): {found}"
    assert not found["RlxSearchPathPlugin"].startswith(str(REPO)), f"the checkout's copy, not the installed one: {found}"
    app = subprocess.run([python, "-c", USER_APP], cwd=tmp_path, env=clean_env(), text=True, capture_output=True,
                         timeout=120)
    assert app.returncode == 0, app.stderr[-3000:]
    assert "COMPOSED dapo RunMode.MULTIRUN" in app.stdout and "'algo.group_size': '4,8'" in app.stdout, app.stdout


@pytest.mark.parametrize("mode", ["lenient", "compat"])
def test_the_cli_composes_its_sweeps_in_every_editable_mode(installs, tmp_path, mode):
    python, _ = installs(mode)
    cfg = subprocess.run([python, "-m", "rlx", "+sweeps=eps_beta_g", "--cfg", "hydra"], cwd=tmp_path, env=clean_env(),
                         text=True, capture_output=True, timeout=120)
    assert cfg.returncode == 0, cfg.stderr[-3000:]
    assert "algo.group_size: 4,8" in cfg.stdout and "mode: MULTIRUN" in cfg.stdout
    info = subprocess.run([python, "-m", "rlx", "--info", "searchpath"], cwd=tmp_path, env=clean_env(), text=True,
                          capture_output=True, timeout=120)
    paths = [line.split("|")[2].strip() for line in info.stdout.splitlines() if line.count("|") >= 3][1:]
    assert "rlx://" in paths and not any(p.startswith("file://") and "/conf" not in p for p in paths), paths
