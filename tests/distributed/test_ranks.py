"""rlx.distributed across two real gloo processes: rounds, shares, updates, evaluation, replicas.

All scenarios run in one pair of spawned processes (tests/distributed/scenarios.py), once per module."""

from __future__ import annotations

import pytest
import torch

from rlx.distributed import World
from tests.distributed.procs import run_ranks
from tests.distributed.scenarios import PRESETS, everything, rlx_update


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return run_ranks(everything, tmp_path_factory.mktemp("ranks"))


def test_round_is_generated_in_shares_and_gathered_in_order(ranks):
    r0, r1 = ranks[0]["round"], ranks[1]["round"]
    # 5 prompts over 2 ranks: rank 0 generates 10, 11, 12 and rank 1 13, 14; both get all five, in order
    assert r0["prompt_index"] == r1["prompt_index"] == [10, 10, 11, 11, 12, 12, 13, 13, 14, 14]
    assert r0["group_index"] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert r0["rewards"] == r1["rewards"]
    # rank 1's parts were one column wider in prompt and completion: rank 0's rows are padded to them
    assert r0["shape"] == r1["shape"] == [10, 4 + 3] and r0["response_width"] == 3
    # every row keeps its own tokens: rank 0's rows have 3 + (1 or 2), rank 1's 4 + (2 or 3)
    assert r0["attention_rows"] == [4, 5, 4, 5, 4, 5, 6, 7, 6, 7]


def test_each_rank_draws_its_own_stream_and_the_ranks_stay_in_step(ranks):
    assert ranks[0]["round"]["drawn"] != ranks[1]["round"]["drawn"]
    assert ranks[0]["round"]["after"] == ranks[1]["round"]["after"]


def test_ranks_out_of_step_fail_loudly(ranks):
    for r in ranks:
        assert r["round"]["out_of_step"] and "out of step" in r["round"]["out_of_step"]


def test_take_gives_disjoint_whole_groups_and_whole_reassembles_the_step(ranks):
    r0, r1 = ranks[0]["round"], ranks[1]["round"]
    assert r0["shard_prompts"] == [10, 10, 11, 11, 12, 12] and r1["shard_prompts"] == [13, 13, 14, 14]
    assert r0["shard_groups"] == [0, 0, 1, 1, 2, 2] and r1["shard_groups"] == [0, 0, 1, 1]  # renumbered
    assert r0["whole_prompts"] == r0["prompt_index"]
    assert r0["ranks"] == [0] * 6 + [1] * 4


@pytest.mark.parametrize("mode", ["token_mean", "seq_mean_token_mean"])
def test_two_ranks_train_like_one_process(ranks, mode):
    """3 AdamW steps on uneven shares (5 and 7 sequences of 1..6 tokens, micro-batches of 2) with the weights
    of the whole minibatch equal one process's steps on all 12 rows, up to float32 summation order (1e-6)."""
    single, r0, r1 = (
        torch.tensor(ranks[0]["update"][mode]["single"]),
        torch.tensor(ranks[0]["update"][mode]["global"]),
        torch.tensor(ranks[1]["update"][mode]["global"]),
    )
    assert torch.equal(r0, r1)  # replicas stay bitwise identical
    assert torch.allclose(r0, single, atol=1e-6, rtol=0), (r0 - single).abs().max()


def test_rank_local_normalisation_would_weigh_ranks_not_tokens(ranks):
    """Without global_weights each rank's token mean counts the rank's own tokens (5 sequences / 14 tokens
    vs 7 / 26): the result is another model. Sequence means differ as well (5 vs 7 sequences)."""
    for mode in ("token_mean", "seq_mean_token_mean"):
        single = torch.tensor(ranks[0]["update"][mode]["single"])
        local = torch.tensor(ranks[0]["update"][mode]["local"])
        assert (local - single).abs().max() > 1e-3


def test_loss_metric_mean_over_ranks_is_the_single_process_loss(ranks):
    loss = ranks[0]["update"]["loss"]
    assert loss["ranks"] == pytest.approx(loss["single"], rel=1e-6)
    assert ranks[1]["update"]["loss"]["ranks"] == loss["ranks"]


def test_a_rank_without_gradient_counts_as_zero(ranks):
    # rank 0's gradient of sum(w·1 + b) is [1, 1]; rank 1 had none: the mean is [0.5, 0.5] on both
    for r in ranks:
        assert r["no_rows"]["weight_grad"] == [[0.5, 0.5]]
        assert r["no_rows"]["unused_grad_is_none"]


def test_evaluation_covers_every_row_once_and_counts_rows_not_ranks(ranks):
    assert ranks[0]["eval"]["rows"] == [0, 2, 4] and ranks[1]["eval"]["rows"] == [1, 3]
    # passed 1,0,1 on rank 0 and 1,1 on rank 1: 4/5 = 0.8 (a mean of the ranks' means would say 0.833)
    for r in ranks:
        assert r["eval"]["results"] == {"val/accuracy": 0.8, "val/reward": 0.4, "val/n": 5.0}


def test_replica_fingerprints_agree_and_catch_a_one_ulp_drift(ranks):
    for r in ranks:
        assert r["replicas"]["same"]["weights_in_sync"] and r["replicas"]["same"]["world_size"] == 2
        assert not r["replicas"]["perturbed"]["weights_in_sync"]


@pytest.mark.parametrize("preset", list(PRESETS))
def test_rlx_update_on_two_ranks_equals_one_process(ranks, preset):
    """rlx.update's prepare + 3 full-batch epochs (micro-batched, clipped, AdamW) on a float64 tiny Llama: two
    ranks training on their halves of a 6-prompt batch end with the single process's weights (and critic) and
    log its losses, to 1e-9 (float64 summation order: the ranks add their parts in another order). `shared`:
    a batch too small to split (fewer rows per rank than minibatches) trained whole on both ranks."""
    single = rlx_update(preset, World())
    r0, r1 = ranks[0]["rlx"][preset], ranks[1]["rlx"][preset]
    if preset == "shared":  # 3 rows a rank for 4 optimiser steps: each rank trains on all 6
        assert r0["rows"] == r1["rows"] == single["rows"]
    else:
        assert r0["rows"] + r1["rows"] == single["rows"]  # disjoint halves of the batch
    for key in ("params", "critic") if "critic" in single else ("params",):
        assert torch.equal(r0[key], r1[key])
        assert torch.allclose(r0[key], single[key], atol=1e-9, rtol=0), (r0[key] - single[key]).abs().max()
    assert set(r0["metrics"]) == set(single["metrics"])
    for key, value in single["metrics"].items():
        assert r0["metrics"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


@pytest.mark.parametrize("curriculum", ["dynamic", "band"])
def test_curricula_with_state_stay_in_step_across_ranks(ranks, curriculum):
    steps0, steps1 = ranks[0]["curricula"][curriculum], ranks[1]["curricula"][curriculum]
    for s0, s1 in zip(steps0, steps1, strict=True):
        assert s0["state"] == s1["state"] and s0["rounds"] == s1["rounds"]
        # exactly equal, NaN included (a pass-rate column with no prompt of its difficulty this step is NaN)
        assert {k: repr(v) for k, v in s0["metrics"].items()} == {k: repr(v) for k, v in s1["metrics"].items()}
        assert s0["all"] == s1["all"]  # the same step batch on both ranks
        assert not set(s0["mine"]) & set(s1["mine"])  # disjoint shares
        assert sorted(set(s0["mine"]) | set(s1["mine"])) == sorted(set(s0["all"]))
    if curriculum == "dynamic":
        assert max(s["rounds"] for s in steps0) > 1  # dynamic sampling did need several rounds


@pytest.mark.parametrize("preset", ["grpo", "ppo"])
def test_fsdp_update_equals_one_process(ranks, preset):
    """The same with the policy (and PPO's critic) fully sharded over the two ranks (FSDP2, as trainer=fsdp):
    prepare unsharded, the update's forwards and backwards sharded, gradients reduce-scattered by FSDP."""
    single = rlx_update(preset, World())
    r0, r1 = ranks[0]["rlx"][f"fsdp_{preset}"], ranks[1]["rlx"][f"fsdp_{preset}"]
    assert r0["rows"] == r1["rows"] == single["rows"] // 2  # equal shares
    for key in ("params", "critic") if "critic" in single else ("params",):
        assert torch.equal(r0[key], r1[key])
        assert torch.allclose(r0[key], single[key], atol=1e-9, rtol=0), (r0[key] - single[key]).abs().max()
    for key, value in single["metrics"].items():
        assert r0["metrics"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
