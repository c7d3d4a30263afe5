"""rollout.max_staleness: the version bookkeeping and admission as pure functions (hand-computed cases), and the
sampler process end to end on a tiny random Llama: a batch it samples equals the synchronous collect's batch on
the same weights and seed, bit for bit, the pushed weights are the admitted version's (not the newest), every
admitted group is trained in full however long its completions, and the start-up refusals name their fix."""

from __future__ import annotations

import copy
import time

import pytest
import torch
from hydra.utils import instantiate

from rlx.curriculum.uniform import UniformSampler
from rlx.errors import ConfigError
from rlx.rewards.base import Status, Verdict
from rlx.rollout.async_collect import AsyncCollect, throughput
from rlx.rollout.async_sampler import SamplerDied, load_weights, snapshot, trainable
from rlx.rollout.collect import Rollout, RolloutConfig, collect
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generation import Generation, decode_texts, response_layout
from rlx.rollout.staleness import admissions, check_max_staleness, sampling_version, staleness
from rlx.seeding import seed_step
from tests.conftest import compose_config

# ---------------------------------------------------------------- pure functions


def test_sampling_version_lags_by_k_and_starts_at_the_first_policy():
    # k = 2: steps 0 1 2 3 4 are sampled by versions 0 0 0 1 2
    assert [sampling_version(s, 2) for s in range(5)] == [0, 0, 0, 1, 2]
    assert [sampling_version(s, 0) for s in range(3)] == [0, 1, 2]  # k = 0: the synchronous loop


def test_admissions_admit_each_batch_once_as_soon_as_its_version_exists():
    # k = 2, fresh run: step 0 admits batches 0, 1, 2 (all version 0); each later step admits one: s + 2
    assert admissions(0, 2, -1) == [0, 1, 2]
    assert admissions(1, 2, 2) == [3]  # version 1 = the weights after step 0's update
    assert admissions(5, 2, 6) == [7]
    assert admissions(5, 2, 7) == []  # already admitted (a resumed run re-sends, never re-admits)
    assert admissions(0, 0, -1) == [0]  # k = 0: each step its own batch


def test_staleness_is_versions_behind_the_current_policy():
    versions = torch.tensor([3, 3, 5, 5])  # two rows of version 3, two of version 5, at step 5
    out = staleness(versions, 5)
    assert out["rollout/staleness_mean"] == 1.0  # (2 + 2 + 0 + 0) / 4
    assert out["rollout/staleness_max"] == 2.0
    assert staleness(None, 7)["rollout/staleness_max"] == 0.0  # the synchronous loop: none behind


def test_throughput_is_per_wall_second_and_per_hour():
    out = throughput(2.0, 500)  # a 2 s step with 500 completion tokens
    assert out == {"time/step": 2.0, "time/steps_per_hour": 1800.0, "time/tok_per_s": 250.0}


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_max_staleness_must_be_a_count(bad):
    with pytest.raises(ValueError, match="rollout.max_staleness"):
        check_max_staleness(bad)


def test_unsupported_settings_fail_at_start_naming_the_fix():
    cpu = torch.device("cpu")
    with pytest.raises(ConfigError, match="trainer=default"):
        AsyncCollect.check(1, 2, cpu, 1)
    with pytest.raises(ConfigError, match="curriculum.max_rounds=1"):
        AsyncCollect.check(1, 1, cpu, 10)
    with pytest.raises(ConfigError, match="trainer.accelerator=cpu"):
        AsyncCollect.check(1, 1, torch.device("meta"), 1)
    AsyncCollect.check(1, 1, cpu, 1)  # one process, CPU, one round: supported


def test_the_key_reaches_every_rollout_option(tmp_path):
    for option in ("engine", "hf"):
        built = instantiate(compose_config([f"rollout={option}", "rollout.max_staleness=2"], tmp_path).rollout)
        assert built.max_staleness == 2
    assert instantiate(compose_config([], tmp_path).rollout).max_staleness == 0  # the default: synchronous
    vllm = compose_config(["rollout=vllm", "rollout.max_staleness=1"], tmp_path).rollout
    with pytest.raises(Exception, match="rollout=engine with rollout.max_staleness=1"):
        instantiate(vllm)


def test_only_trainable_weights_travel_one_flat_tensor_per_dtype_and_load_back_exactly():
    # a LoRA-like model: a frozen base (float32), a trainable adapter in float32 and a trainable float64 scale
    model = torch.nn.ModuleDict(
        {"base": torch.nn.Linear(3, 3), "adapter": torch.nn.Linear(3, 2, bias=False), "scale": torch.nn.Linear(1, 1)}
    )
    model["base"].requires_grad_(False)
    model["scale"].double()
    names = [n for n, _ in trainable(model)]
    assert names == ["adapter.weight", "scale.weight", "scale.bias"]  # the frozen base never travels
    flats = snapshot(model)
    assert [f.dtype for f in flats] == [torch.float32, torch.float64]
    assert [f.numel() for f in flats] == [6, 2]  # adapter 2x3; scale weight 1 + bias 1
    other = copy.deepcopy(model)
    for p in other.parameters():
        torch.nn.init.zeros_(p)
    load_weights(other, names, flats)
    for name, p in other.named_parameters():
        expected = dict(model.named_parameters())[name]
        assert torch.equal(p, expected) if p.requires_grad else not p.any(), name  # base untouched (zeros)
    with pytest.raises(SamplerDied, match="sizes"):
        load_weights(other, names, [flats[0][:-1], flats[1]])


# ---------------------------------------------------------------- the sampler process

ROWS = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a, b in [(1, 2), (12, 3), (7, 7), (40, 2), (9, 9), (5, 50)]]
CONFIG = RolloutConfig(prompts_per_step=2, group_size=3, max_new_tokens=6, temperature=1.0, generation_batch_size=3)


class Parity:
    """A reward: 1 for an even-length completion (any deterministic score will do)."""

    def __call__(self, completions, rows):
        return [Verdict(float(len(c) % 2 == 0), Status.PASS if len(c) % 2 == 0 else Status.FAIL) for c in completions]


def sync_batch(policy, tok, sampler, step):
    seed_step(0, step)  # what the checkpoint callback does before every step
    sampler.begin_step(step)
    engine = RolloutEngine(compile=False, overlap_scoring=False, reuse_logprobs=True)
    return collect(Rollout(policy, tok, engine, Parity()), sampler, ROWS, CONFIG)[0]


def same_batch(a, b) -> None:
    for name in ("input_ids", "attention_mask", "response_mask", "prompt_index", "group_index", "rewards"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert a.completions == b.completions
    assert torch.equal(a.sampler_logp, b.sampler_logp)  # μ: the same weights drew the same tokens
    assert b.sampling_logp is None  # μ only: the trainer's forward gives π_old (the mismatch is measured)


@pytest.fixture
def one_thread():
    """The sampler process runs one torch thread; bit-equal batches need the same here."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_worker_batches_equal_the_synchronous_loop_on_the_admitted_versions_weights(llama, one_thread):
    policy, tok = copy.deepcopy(llama[0]).eval(), llama[1]  # the session's model is not perturbed
    first = [p.detach().clone() for p in policy.parameters()]
    sync_sampler, async_sampler = UniformSampler(seed=3), UniformSampler(seed=3)
    for s in (sync_sampler, async_sampler):
        s.bind(ROWS)
    engine = RolloutEngine(compile=False, overlap_scoring=False, reuse_logprobs=True)
    rollout, ahead = Rollout(policy, tok, engine, Parity()), AsyncCollect(1)
    try:
        expected0, expected1 = sync_batch(policy, tok, sync_sampler, 0), sync_batch(policy, tok, sync_sampler, 1)
        got0, stats0 = ahead.collect(0, rollout, async_sampler, ROWS, CONFIG, seed=0)  # admits 0, 1
        with torch.no_grad():  # "step 0's update": version 1 differs from version 0
            for p in policy.parameters():
                p.add_(0.05 * torch.randn_like(p))
        got1, _ = ahead.collect(1, rollout, async_sampler, ROWS, CONFIG, seed=0)  # admits 2 (v1)
        expected2 = sync_batch(policy, tok, sync_sampler, 2)
        got2, stats2 = ahead.collect(2, rollout, async_sampler, ROWS, CONFIG, seed=0)
    finally:
        ahead.close()
    same_batch(expected0, got0)  # step 0: version 0 is the current policy, staleness 0
    same_batch(expected1, got1)  # step 1: sampled by version 0 although the policy moved on
    same_batch(expected2, got2)  # step 2: version 1's weights, pushed at step 1
    assert got0.policy_version.tolist() == [0] * 6 and got1.policy_version.tolist() == [0] * 6
    assert got2.policy_version.tolist() == [1] * 6
    assert staleness(got1.policy_version, 1)["rollout/staleness_max"] == 1.0
    for p, q in zip(policy.parameters(), first, strict=True):  # the trainer's policy was only touched by the test
        assert not torch.equal(p, q)
    assert stats0.generate_seconds > 0 and stats0.engine["time/wait_trainer"] >= 0
    assert stats2.engine["time/wait_sampler"] >= 0
    assert sorted(ahead.admitted) == [3] and set(ahead.weights) == {2}  # in flight: batch 3, by version 2 only


class LongAndShort:
    """A Generator for the sampler process: a prompt that starts with "9" gets completions that run to
    max_new_tokens (truncated) and take the sampler 20 ms a token; the others end at once with eos."""

    overlap_scoring = False
    max_staleness = 1

    def __call__(self, model, tok, request, on_finished=None):
        max_new_tokens = request.max_new_tokens
        rows = [p for p in request.prompts for _ in range(request.repeats)]
        long = [p.startswith("9") for p in rows]
        time.sleep(0.02 * max_new_tokens * sum(long))
        one, eos = tok.convert_tokens_to_ids("1"), tok.eos_token_id
        sampled = torch.tensor(
            [[one] * max_new_tokens if lg else [one, eos] + [eos] * (max_new_tokens - 2) for lg in long]
        )
        enc = tok(rows, return_tensors="pt", padding=True, add_special_tokens=False)
        out = response_layout(enc["input_ids"], enc["attention_mask"], sampled, eos, tok.pad_token_id)
        ids, attention, response_mask, truncated = out.input_ids, out.attention_mask, out.response_mask, out.truncated
        logprobs = -response_mask.float()  # [N, T] any fixed log-prob
        texts = decode_texts(tok, out.response, response_mask)
        return Generation(
            ids, attention, response_mask, truncated, texts, logprobs, logprobs * 0, request.temperature, True
        )


def test_a_long_completion_group_is_trained_in_full_at_every_step(llama):
    policy, tok = llama
    rows = [{"prompt": p, "answer": "1"} for p in ["9+9=", "1+1=", "2+2=", "3+3="]]
    sampler = UniformSampler(seed=0)
    sampler.bind(rows)
    config = RolloutConfig(prompts_per_step=4, group_size=2, max_new_tokens=5, temperature=1.0, generation_batch_size=4)
    rollout = Rollout(policy, tok, LongAndShort(), Parity())
    ahead = AsyncCollect(1, coupled=True)  # rollout_correction=none: μ stands for π_old
    trained = []
    try:
        for step in range(3):
            batch, _ = ahead.collect(step, rollout, sampler, rows, config, seed=0)
            trained.append(batch)
    finally:
        ahead.close()
    for batch in trained:  # every step: all 4 groups, the slow truncated one included, with both completions
        assert sorted(batch.prompt_index.tolist()) == [0, 0, 1, 1, 2, 2, 3, 3]
        long = batch.prompt_index == 0
        assert batch.truncated[long].all() and not batch.truncated[~long].any()
        assert batch.response_mask[long].sum(-1).tolist() == [5, 5]  # its whole length is trained
        assert torch.equal(batch.sampling_logp, batch.sampler_logp)  # coupled: the behaviour log-probs are π_old


def test_the_staleness_sweep_is_the_issues_grid_and_every_cell_composes(tmp_path):
    cfg = compose_config(["+sweeps=staleness"], tmp_path, with_hydra=True)
    params = dict(cfg.hydra.sweeper.params)
    assert params == {"rollout.max_staleness": "0,1,2,4", "rollout_correction": "none,token_tis", "seed": "0,1,2,3,4"}
    assert cfg.hydra.launcher._target_.endswith("BasicLauncher")  # one job at a time: k > 0 is two processes
    for k in params["rollout.max_staleness"].split(","):
        for correction in params["rollout_correction"].split(","):
            cell = compose_config(
                ["+sweeps=staleness", f"rollout.max_staleness={k}", f"rollout_correction={correction}"], tmp_path
            )
            assert instantiate(cell.rollout).max_staleness == int(k)
            assert type(instantiate(cell.rollout_correction)).__name__ == {"none": "NoCorrection"}.get(
                correction, "TokenTIS"
            )
