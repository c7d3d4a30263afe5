"""Sweep, launcher and callback configs compose with the real config tree; the search-path plugin puts rlx's
conf/ and sweeps/ next to a user's own configs."""

from __future__ import annotations

import textwrap

import pytest
from hydra.core.plugins import Plugins
from hydra.errors import ConfigCompositionException
from hydra.plugins.search_path_plugin import SearchPathPlugin
from hydra.utils import get_class, instantiate
from omegaconf import OmegaConf

from tests.conftest import REPO, compose_config, run_cli

SWEEPS = sorted(p.stem for p in (REPO / "sweeps").glob("*.yaml"))


def test_search_path_plugin_is_discovered_here():
    names = [p.__name__ for p in Plugins.instance().discover(SearchPathPlugin)]
    assert "RlxSearchPathPlugin" in names, f"Hydra did not discover rlx's search-path plugin: {names}"


@pytest.mark.parametrize("sweep", SWEEPS)
def test_every_sweep_composes_as_a_multirun(sweep):
    cfg = compose_config([f"+sweeps={sweep}"], with_hydra=True)
    assert cfg.hydra.mode.name == "MULTIRUN", f"sweeps/{sweep}.yaml must set hydra.mode: MULTIRUN (one-liner)"
    assert cfg.hydra.sweeper.params, f"sweeps/{sweep}.yaml sweeps nothing"
    assert str(cfg.hydra.sweep.dir).startswith(f"multirun/{sweep}/")


def test_eps_beta_g_is_the_documented_grid():
    params = compose_config(["+sweeps=eps_beta_g"], with_hydra=True).hydra.sweeper.params
    assert dict(params) == {"algo.epsilon": "0.1,0.2", "algo.beta": "0.0,0.04", "algo.group_size": "4,8"}


def test_algos_sweeps_every_preset_and_each_composes():
    assert compose_config(["+sweeps=algos"], with_hydra=True).hydra.sweeper.params.algo == "glob(*,exclude=_*)"
    presets = sorted(p.stem for p in (REPO / "conf" / "algo").glob("*.yaml") if not p.stem.startswith("_"))
    assert "grpo" in presets
    for preset in presets:
        cfg = compose_config([f"algo={preset}"], with_hydra=True)
        assert cfg.algo.name == preset


def test_optuna_sweep_uses_the_optuna_sweeper_over_the_same_knobs():
    cfg = compose_config(["+sweeps=optuna"], with_hydra=True)
    sweeper = cfg.hydra.sweeper
    assert get_class(sweeper._target_).__name__ == "OptunaSweeper"
    assert sweeper.direction == "maximize"
    assert {"algo.epsilon", "algo.beta", "algo.group_size"} <= set(sweeper.params)
    assert sweeper.max_failure_rate == 1.0  # failed trials end up in the report instead of stopping the study


def test_joblib_launcher_composes():
    launcher = compose_config(["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], with_hydra=True).hydra.launcher
    assert get_class(launcher._target_).__name__ == "JoblibLauncher"
    assert launcher.n_jobs == 2


def test_slurm_launcher_composes_and_validates():
    launcher = compose_config(["hydra/launcher=slurm", "hydra.launcher.partition=gpu"], with_hydra=True).hydra.launcher
    cls = get_class(launcher._target_)
    assert cls.__name__ == "SlurmLauncher"
    assert launcher.partition == "gpu" and launcher.gpus_per_node == 1 and launcher.timeout_min == 240
    assert str(launcher.submitit_folder).endswith("/.submitit/%j")
    # conf/hydra/launcher/slurm.yaml extends submitit's structured schema, which rejects unknown keys
    with pytest.raises(ConfigCompositionException):
        compose_config(["hydra/launcher=slurm", "hydra.launcher.partitoin=gpu"], with_hydra=True)


def test_sweep_report_callback_is_on_by_default_and_instantiates():
    callbacks = compose_config([], with_hydra=True).hydra.callbacks
    cb = instantiate(callbacks.sweep_report)
    assert type(cb).__name__ == "SweepReport" and cb.wandb_report is True


def test_wandb_logger_config_instantiates_offline(tmp_path, monkeypatch):
    for k in [k for k in list(__import__("os").environ) if k.startswith("WANDB_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    cfg = compose_config(["logger=wandb", f"run_dir={tmp_path}"], with_hydra=True)
    loggers = instantiate(cfg.logger)
    assert [type(lg).__name__ for lg in loggers] == ["CSVLogger", "RlxWandbLogger"]
    assert loggers[1].rlx_mode == "offline"


def test_user_config_dir_composes_with_rlx_conf_and_sweeps(tmp_path):
    """`python -m rlx --config-dir my_conf experiment=mine +sweeps=mine`: the user's files join rlx's groups
    (config.yaml's defaults name the `experiment` group, null by default, so it is chosen without `+`)."""
    (tmp_path / "my_conf" / "experiment").mkdir(parents=True)
    (tmp_path / "my_conf" / "sweeps").mkdir()
    (tmp_path / "my_conf" / "experiment" / "mine.yaml").write_text(
        "# @package _global_\nalgo:\n  beta: 0.123\ntrainer:\n  max_steps: 7\n"
    )
    (tmp_path / "my_conf" / "sweeps" / "mine.yaml").write_text(
        "# @package _global_\nhydra:\n  mode: MULTIRUN\n  sweeper:\n    params:\n      algo.group_size: 2,3\n"
    )
    argv = ["-m", "rlx", "--config-dir", str(tmp_path / "my_conf"), "experiment=mine", "+sweeps=mine", "--cfg", "all"]
    out = run_cli(argv, tmp_path, tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    cfg = OmegaConf.create(out.stdout)
    assert cfg.algo.beta == 0.123 and cfg.trainer.max_steps == 7
    assert cfg.algo.name == "grpo"  # the rest still comes from rlx's conf/
    assert cfg.hydra.sweeper.params["algo.group_size"] == "2,3"


def test_a_users_own_hydra_app_composes_rlx_groups(tmp_path):
    """The plugin appends rlx's conf/ to every Hydra app's search path, below the app's own configs."""
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "app.yaml").write_text("defaults:\n  - advantage: rloo\n  - _self_\nmine: 1\n")
    (tmp_path / "app.py").write_text(
        textwrap.dedent("""
        import hydra

        @hydra.main(version_base="1.3", config_path="conf", config_name="app")
        def main(cfg):
            print("ADV", cfg.advantage._target_, cfg.mine)

        main()
    """)
    )
    out = run_cli(["app.py", "hydra.run.dir=."], tmp_path, tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ADV rlx.algos.advantages" in out.stdout and out.stdout.strip().endswith(" 1")


def flat(node, prefix=""):
    """{dotted path: leaf value} of a resolved config."""
    if isinstance(node, dict):
        return {k: v for key, child in node.items() for k, v in flat(child, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): node}


# Each claims arm against grpo: the config paths it may change, the first one the change itself (the others follow
# by interpolation: the algo node holds its groups as ${advantage} etc.). One change per comparison, except Dr.
# GRPO's two normalisations and the RFT baseline.
CLAIM_ARMS = {
    "grpo_nostd": ["advantage", "algo.advantage"],
    "grpo_nolen": ["aggregate", "algo.aggregate"],
    "dr_grpo_beta": ["aggregate", "algo.aggregate", "advantage", "algo.advantage", "algo.name"],
    # epsilon_high is ${.epsilon} (the symmetric range); the policy loss gets both from the Algorithm, not its node
    "grpo_eps_small": ["algo.epsilon", "algo.epsilon_high"],
    "grpo_mb1": ["algo.minibatches"],
    "grpo_beta0": ["algo.beta"],
    "grpo_beta001": ["algo.beta"],
    "grpo_beta016": ["algo.beta"],
    # the RFT baseline swaps the algorithm whole (its advantage, loss, aggregation, no KL, one minibatch); the
    # sampling, learning rate and schedule stay grpo's, which this list pins by not allowing them
    "rft": [
        "algo.name",
        "algo.minibatches",
        "algo.beta",
        "advantage",
        "algo.advantage",
        "policy_loss",
        "algo.policy_loss",
        "aggregate",
        "algo.aggregate",
        "kl",
        "algo.kl",
    ],
}


def test_seed_claims_runs_every_arm_over_five_seeds():
    params = compose_config(["+sweeps=seed_claims"], with_hydra=True).hydra.sweeper.params
    assert sorted(params["+sweeps/claims"].split(",")) == sorted(["grpo", *CLAIM_ARMS])
    assert params.seed == "0,1,2,3,4"
    assert sorted(p.stem for p in (REPO / "sweeps" / "claims").glob("*.yaml")) == sorted(["grpo", *CLAIM_ARMS])


@pytest.mark.parametrize("arm", sorted(CLAIM_ARMS))
def test_each_claims_arm_changes_one_thing_against_grpo(arm):
    def resolved(name):
        cfg = compose_config(["+sweeps=seed_claims", f"+sweeps/claims={name}", "run_dir=/tmp/x"])
        return flat(OmegaConf.to_container(cfg, resolve=True))

    ref, mine = resolved("grpo"), resolved(arm)
    changed = {k for k in ref.keys() | mine.keys() if ref.get(k, "<absent>") != mine.get(k, "<absent>")}
    allowed = CLAIM_ARMS[arm]
    assert changed, f"{arm} changes nothing against grpo"
    stray = sorted(k for k in changed if not any(k == a or k.startswith(a + ".") for a in allowed))
    assert not stray, f"{arm} also changes {stray}"
    assert any(k == allowed[0] or k.startswith(allowed[0] + ".") for k in changed), (arm, sorted(changed))
