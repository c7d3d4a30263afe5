"""trainer=ddp / trainer=fsdp compose, and what a run over several processes needs is checked at start: the
strategy, the batch and held-out sizes, stateful estimators, multirun spawning, and a SLURM launch's shape
(Lightning's SLURM and torchrun detection, composed with conf/hydra/launcher/slurm.yaml)."""

from __future__ import annotations

import os
import shlex

import pytest
from hydra.utils import instantiate
from lightning.fabric.utilities.rank_zero import rank_zero_only as fabric_rank_zero_only
from lightning_utilities.core.rank_zero import rank_zero_only as utilities_rank_zero_only

from rlx.checks import build_node
from rlx.distributed.checks import (
    check_launcher,
    check_world,
    configured_world_size,
    strategy_target,
)
from rlx.errors import ConfigError
from tests.conftest import REPO, compose_config

DDP = "rlx.distributed.strategy.DataParallel"


@pytest.fixture(autouse=True)
def restore_environ():
    """Lightning's cluster environments write MASTER_ADDR/MASTER_PORT into os.environ themselves (monkeypatch
    cannot undo what it did not set): without this, a later two-process test inherits MASTER_ADDR=gpu01 from
    the SLURM test below and its second rank waits forever for a host that does not exist. Likewise the global
    rank Lightning keeps for @rank_zero_only."""
    saved = dict(os.environ)
    rank = fabric_rank_zero_only.rank, utilities_rank_zero_only.rank
    yield
    os.environ.clear()
    os.environ.update(saved)
    # the strategies also set the process-wide rank that @rank_zero_only reads: left at 3 by the torchrun test,
    # every later in-process run's CSV logger thinks it is rank 3 and writes no metrics.csv
    fabric_rank_zero_only.rank, utilities_rank_zero_only.rank = rank


def readme_slurm_command() -> list[str]:
    """The overrides of docs/distributed.md's SLURM command (a 2-node × 4-GPU job: one task per rank), as written."""
    for line in (REPO / "docs" / "distributed.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("python -m rlx") and "hydra/launcher=slurm" in line and "trainer=ddp" in line:
            return shlex.split(line)[3:]
    raise AssertionError("docs/distributed.md has no SLURM command for trainer=ddp")


SLURM = [*readme_slurm_command(), "trainer.accelerator=cpu"]  # CPU here: Lightning would want the 4 GPUs


def algo_and_advantage(cfg_factory, *overrides):
    cfg = cfg_factory(*overrides)
    return build_node(cfg, "algo"), build_node(cfg, "advantage")


def test_ddp_is_a_diff_over_the_default_trainer(cfg_factory):
    default, ddp = cfg_factory().trainer, cfg_factory("trainer=ddp").trainer
    assert ddp.max_steps == default.max_steps and ddp.callbacks == default.callbacks
    assert ddp.devices == 2 and ddp.num_nodes == 1 and strategy_target(ddp) == DDP
    assert configured_world_size(ddp) == 2


def test_ddp_trainer_builds_on_lightnings_ddp_with_the_reducer_left_to_rlx(cfg_factory):
    from lightning.pytorch.strategies import DDPStrategy

    trainer = instantiate(cfg_factory("trainer=ddp", "trainer.accelerator=cpu").trainer, _convert_="all")
    assert isinstance(trainer.strategy, DDPStrategy) and trainer.world_size == 2


def test_world_size_from_the_config():
    assert configured_world_size({"devices": 4, "num_nodes": 2}) == 8
    assert configured_world_size({"devices": [0, 1, 3], "num_nodes": 1}) == 3
    assert configured_world_size({"devices": "0,1", "num_nodes": 1}) == 2
    assert configured_world_size({"devices": "auto", "num_nodes": 1}) is None
    assert configured_world_size({"devices": -1, "num_nodes": 1}) is None


def test_lightnings_own_ddp_is_refused_with_the_fix(cfg_factory):
    algo, advantage = algo_and_advantage(cfg_factory)
    with pytest.raises(ConfigError, match=r"trainer.strategy=ddp over 2 processes.*trainer=ddp trainer.devices=2"):
        check_world(2, "ddp", algo, advantage, 500)
    with pytest.raises(ConfigError, match="trainer.strategy=auto"):
        check_world(2, "auto", algo, advantage, 500)
    check_world(1, "auto", algo, advantage, 500)  # one process: anything goes
    check_world(2, DDP, algo, advantage, 500)


def test_batch_and_held_out_sizes_per_rank(cfg_factory):
    algo, advantage = algo_and_advantage(cfg_factory, "algo.prompts_per_step=3")
    with pytest.raises(ConfigError, match=r"algo.prompts_per_step=3 is the global batch, shared by 4 ranks.*>= 4"):
        check_world(4, DDP, algo, advantage, 500)
    algo, advantage = algo_and_advantage(cfg_factory)
    with pytest.raises(ConfigError, match=r"3 rows for 4 ranks.*data.val_size to >= 4"):
        check_world(4, DDP, algo, advantage, 3)


def test_a_stateful_estimator_is_refused(cfg_factory):
    algo, advantage = algo_and_advantage(cfg_factory, "algo=reinforce")
    assert advantage.state_dict()  # the running-mean baseline
    with pytest.raises(ConfigError, match=r"advantage=RunningMean keeps state across steps.*group_norm"):
        check_world(2, DDP, algo, advantage, 500)


def test_the_checks_run_before_the_model_loads(tmp_path):
    from rlx.train import build

    cfg = compose_config(
        ["trainer=ddp", "trainer.devices=3", "algo.prompts_per_step=2", "model.cache_dir=/nonexistent"], tmp_path
    )
    with pytest.raises(ConfigError, match="algo.prompts_per_step=2 is the global batch, shared by 3 ranks"):
        build(cfg)


def test_a_two_node_slurm_launch_composes_and_lightning_makes_each_task_a_rank(tmp_path, monkeypatch):
    cfg = compose_config(SLURM, tmp_path, with_hydra=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher") and (launcher.nodes, launcher.tasks_per_node) == (2, 4)
    check_launcher(launcher, cfg.trainer)
    # the job's task 5 (node 1, local rank 1), as srun starts it: Lightning's SLURM environment makes it rank 5
    for key, value in {
        "SLURM_NTASKS": "8",
        "SLURM_NTASKS_PER_NODE": "4",
        "SLURM_PROCID": "5",
        "SLURM_LOCALID": "1",
        "SLURM_NODEID": "1",
        "SLURM_NODELIST": "gpu[01-02]",
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NAME": "rlx",
    }.items():
        monkeypatch.setenv(key, value)
    from lightning.fabric.plugins.environments import SLURMEnvironment

    from rlx.distributed.checks import launched_externally

    assert launched_externally()
    trainer = instantiate(cfg.trainer, _convert_="all")
    env = trainer.strategy.cluster_environment
    assert isinstance(env, SLURMEnvironment) and env.creates_processes_externally
    assert (trainer.global_rank, trainer.local_rank, trainer.node_rank, trainer.world_size) == (5, 1, 1, 8)
    assert env.main_address == "gpu01"


def test_torchrun_is_detected_too(cfg_factory, monkeypatch):
    from lightning.fabric.plugins.environments import TorchElasticEnvironment

    for key, value in {
        "RANK": "3",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "4",
        "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": "1",
        "TORCHELASTIC_RUN_ID": "rlx",
        "MASTER_ADDR": "node0",
        "MASTER_PORT": "29500",
    }.items():
        monkeypatch.setenv(key, value)
    trainer = instantiate(
        cfg_factory("trainer=ddp", "trainer.accelerator=cpu", "trainer.num_nodes=2").trainer, _convert_="all"
    )
    assert isinstance(trainer.strategy.cluster_environment, TorchElasticEnvironment)
    assert (trainer.global_rank, trainer.world_size) == (3, 4)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("hydra.launcher.tasks_per_node=1", r"hydra.launcher.tasks_per_node=1 but trainer.devices=4"),
        ("hydra.launcher.nodes=1", r"hydra.launcher.nodes=1 but trainer.num_nodes=2"),
    ],
)
def test_a_slurm_launch_of_the_wrong_shape_fails_with_the_fix(tmp_path, override, message):
    cfg = compose_config([*SLURM, override], tmp_path, with_hydra=True)
    with pytest.raises(ConfigError, match=message):
        check_launcher(cfg.hydra.launcher, cfg.trainer)


def test_env_rank_zero(monkeypatch):
    from rlx.distributed.env import RANK_VARIABLES, env_is_rank_zero

    for name in RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert env_is_rank_zero()
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("NODE_RANK", "0")
    assert env_is_rank_zero()  # Lightning's launcher process after it has started the others
    monkeypatch.setenv("SLURM_PROCID", "3")
    assert not env_is_rank_zero()


def test_a_multirun_that_would_spawn_ranks_is_refused(monkeypatch):
    """Lightning's subprocess launcher re-runs the command line: in a multirun every rank would run the sweep.
    Under SLURM or torchrun (processes started outside) a multirun of multi-process jobs is fine."""
    from rlx.distributed import checks

    monkeypatch.setattr(checks, "multirun", lambda: True)
    with pytest.raises(ConfigError, match="would rerun the whole sweep in every rank.*hydra/launcher=slurm"):
        checks.check_spawn(2, external=False)
    checks.check_spawn(2, external=True)
    checks.check_spawn(1, external=False)
    monkeypatch.setattr(checks, "multirun", lambda: False)
    checks.check_spawn(2, external=False)
