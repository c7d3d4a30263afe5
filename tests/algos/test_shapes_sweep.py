"""sweeps/shapes.yaml runs every loss-shape preset beside grpo, paired by seed, on the non-saturating multi_sum."""

from rlx.checks import build_node
from tests.conftest import compose_config, options


def test_shapes_sweep_names_the_new_presets_and_each_composes():
    cfg = compose_config(["+sweeps=shapes"], with_hydra=True)
    presets = str(cfg.hydra.sweeper.params.algo).split(",")
    assert (
        set(presets)
        == {"grpo", "sapo", "gmpo", "dppo", "topr", "clip_cov", "kl_cov", "skywork_or1"}
        <= set(options("algo"))
    )
    assert len(str(cfg.hydra.sweeper.params.seed).split(",")) >= 2  # pairs for the paired statistics
    assert cfg.data._target_ == "rlx.data.multi_sum.MultiSumTask"  # a task the tiny model does not saturate
    for preset in presets:
        algo = build_node(compose_config(["+sweeps=shapes", f"algo={preset}"], "/tmp/unused"), "algo")
        assert algo.name == preset
