"""Sweep, launcher and callback configs compose with the real config tree; the search-path plugin puts rlx's
conf/ and sweeps/ next to a user's own configs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.plugins import Plugins
from hydra.errors import ConfigCompositionException
from hydra.plugins.search_path_plugin import SearchPathPlugin
from hydra.utils import get_class, instantiate
from omegaconf import OmegaConf
from tests.sweeps.sweep_helpers import REPO, offline_env

SWEEPS = sorted(p.stem for p in (REPO / "sweeps").glob("*.yaml"))


def compose_hydra(*overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=True)


def test_search_path_plugin_is_discovered_here():
    names = [p.__name__ for p in Plugins.instance().discover(SearchPathPlugin)]
    assert "RlxSearchPathPlugin" in names, f"Hydra did not discover rlx's search-path plugin: {names}"


@pytest.mark.parametrize("sweep", SWEEPS)
def test_every_sweep_composes_as_a_multirun(sweep):
    cfg = compose_hydra(f"+sweeps={sweep}")
    assert cfg.hydra.mode.name == "MULTIRUN", f"sweeps/{sweep}.yaml must set hydra.mode: MULTIRUN (one-liner)"
    assert cfg.hydra.sweeper.params, f"sweeps/{sweep}.yaml sweeps nothing"
    assert str(cfg.hydra.sweep.dir).startswith(f"multirun/{sweep}/")


def test_eps_beta_g_is_the_documented_grid():
    params = compose_hydra("+sweeps=eps_beta_g").hydra.sweeper.params
    assert dict(params) == {"algo.epsilon": "0.1,0.2", "algo.beta": "0.0,0.04", "algo.group_size": "4,8"}


def test_algos_sweeps_every_preset_and_each_composes():
    assert compose_hydra("+sweeps=algos").hydra.sweeper.params.algo == "glob(*,exclude=_*)"
    presets = sorted(p.stem for p in (REPO / "conf" / "algo").glob("*.yaml") if not p.stem.startswith("_"))
    assert "grpo" in presets
    for preset in presets:
        cfg = compose_hydra(f"algo={preset}")
        assert cfg.algo.name == preset


def test_optuna_sweep_uses_the_optuna_sweeper_over_the_same_knobs():
    cfg = compose_hydra("+sweeps=optuna")
    sweeper = cfg.hydra.sweeper
    assert get_class(sweeper._target_).__name__ == "OptunaSweeper"
    assert sweeper.direction == "maximize"
    assert {"algo.epsilon", "algo.beta", "algo.group_size"} <= set(sweeper.params)
    assert sweeper.max_failure_rate == 1.0  # failed trials end up in the report instead of stopping the study


def test_joblib_launcher_composes():
    launcher = compose_hydra("hydra/launcher=joblib", "hydra.launcher.n_jobs=2").hydra.launcher
    assert get_class(launcher._target_).__name__ == "JoblibLauncher"
    assert launcher.n_jobs == 2


def test_slurm_launcher_composes_and_validates():
    launcher = compose_hydra("hydra/launcher=slurm", "hydra.launcher.partition=gpu").hydra.launcher
    cls = get_class(launcher._target_)
    assert cls.__name__ == "SlurmLauncher"
    assert launcher.partition == "gpu" and launcher.gpus_per_node == 1 and launcher.timeout_min == 240
    assert str(launcher.submitit_folder).endswith("/.submitit/%j")
    # conf/hydra/launcher/slurm.yaml extends submitit's structured schema, which rejects unknown keys
    with pytest.raises(ConfigCompositionException):
        compose_hydra("hydra/launcher=slurm", "hydra.launcher.partitoin=gpu")


def test_sweep_report_callback_is_on_by_default_and_instantiates():
    callbacks = compose_hydra().hydra.callbacks
    cb = instantiate(callbacks.sweep_report)
    assert type(cb).__name__ == "SweepReport" and cb.wandb_report is True


def test_wandb_logger_config_instantiates_offline(tmp_path, monkeypatch):
    for k in [k for k in list(__import__("os").environ) if k.startswith("WANDB_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    cfg = compose_hydra("logger=wandb", f"run_dir={tmp_path}")
    loggers = instantiate(cfg.logger)
    assert [type(lg).__name__ for lg in loggers] == ["CSVLogger", "RlxWandbLogger"]
    assert loggers[1].rlx_mode == "offline"


def test_user_config_dir_composes_with_rlx_conf_and_sweeps(tmp_path):
    """`python -m rlx --config-dir my_conf +experiment=mine +sweeps=mine`: the user's files join rlx's groups."""
    (tmp_path / "my_conf" / "experiment").mkdir(parents=True)
    (tmp_path / "my_conf" / "sweeps").mkdir()
    (tmp_path / "my_conf" / "experiment" / "mine.yaml").write_text(
        "# @package _global_\nalgo:\n  beta: 0.123\ntrainer:\n  max_steps: 7\n")
    (tmp_path / "my_conf" / "sweeps" / "mine.yaml").write_text(
        "# @package _global_\nhydra:\n  mode: MULTIRUN\n  sweeper:\n    params:\n      algo.group_size: 2,3\n")
    out = subprocess.run([sys.executable, "-m", "rlx", "--config-dir", str(tmp_path / "my_conf"),
                          "+experiment=mine", "+sweeps=mine", "--cfg", "all"],
                         cwd=tmp_path, env=offline_env(), text=True, capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    cfg = OmegaConf.create(out.stdout)
    assert cfg.algo.beta == 0.123 and cfg.trainer.max_steps == 7
    assert cfg.algo.name == "grpo"  # the rest still comes from rlx's conf/
    assert cfg.hydra.sweeper.params["algo.group_size"] == "2,3"


def test_a_users_own_hydra_app_composes_rlx_groups(tmp_path):
    """The plugin appends rlx's conf/ to every Hydra app's search path, below the app's own configs."""
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "app.yaml").write_text("defaults:\n  - advantage: rloo\n  - _self_\nmine: 1\n")
    (tmp_path / "app.py").write_text(textwrap.dedent("""
        import hydra

        @hydra.main(version_base="1.3", config_path="conf", config_name="app")
        def main(cfg):
            print("ADV", cfg.advantage._target_, cfg.mine)

        main()
    """))
    out = subprocess.run([sys.executable, "app.py", "hydra.run.dir=."], cwd=tmp_path, env=offline_env(),
                         text=True, capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ADV rlx.algos.advantages" in out.stdout and out.stdout.strip().endswith(" 1")
