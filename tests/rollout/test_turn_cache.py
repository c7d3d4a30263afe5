"""Multi-turn without re-prefill (rlx.rollout.turn_cache, issue 42): turn-2 log-probs with reused KV = fresh
prefill; a weight update forces a miss; the memory bound evicts the oldest entries and their episodes re-prefill;
a one-turn call keeps nothing; the prefix lookup, by hand."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch

from rlx.envs.protocol import Turn
from rlx.errors import ConfigError
from rlx.rewards.base import Status, Verdict
from rlx.rollout.collect import Rollout, RolloutConfig, Timer, generate_and_score
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generation import GenerationRequest
from rlx.rollout.turn_cache import BLOCK, TurnCache

from .conftest import PROMPTS
from .test_engine import float32_tolerance

OBSERVATION = " wrong, try again: "


def engine(keep: bool, mib: float = 1024.0) -> RolloutEngine:
    return RolloutEngine(False, False, True, keep_turn_cache=keep, turn_cache_mib=mib)


def two_turns(eng: RolloutEngine, model, tok, repeats: int = 2, between=None, steps: list[int] | None = None):
    """Turn 1 of PROMPTS (a group of `repeats` each) at seed 0, `between(model)`, then turn 2 of every
    completion's context plus OBSERVATION at seed 1. Returns (turn 1, turn 2, the turn-2 contexts)."""
    torch.manual_seed(0)
    if steps is not None:
        steps[0] = 0
    first = eng(model, tok, GenerationRequest(PROMPTS, 10, 1.0, repeats=repeats, keep_cache=True))
    observation = tok.encode(OBSERVATION, add_special_tokens=False)
    contexts = [
        row[m.bool()].tolist() + observation for row, m in zip(first.input_ids, first.attention_mask, strict=True)
    ]
    if between is not None:
        between(model)
    torch.manual_seed(1)
    if steps is not None:
        steps[0] = 0
    second = eng(model, tok, GenerationRequest([], 10, 1.0, prompt_ids=contexts, keep_cache=True))
    return first, second, contexts


def reused(contexts: list[list[int]], obs: int) -> float:
    """Each turn-2 context is prompt + sampled + observation; the kept KV covers the prompt and every sampled
    token but the last (drawn, never fed): len(context) − obs − 1 tokens."""
    return float(sum(len(c) - obs - 1 for c in contexts))


@pytest.mark.parametrize("scripted", [False, True])
def test_turn2_logprobs_with_reused_kv_equal_fresh_prefill(model_and_tokenizer, scripted_finishes, scripted):
    model, tok = model_and_tokenizer
    # scripted: slots finish at different steps, so finished slots are kept before the tail's move into them
    steps = scripted_finishes(tok, {2: [1, 5], 4: [0], 6: [2, 3]}) if scripted else None
    kept_first, kept, contexts = two_turns(engine(True), model, tok, steps=steps)
    fresh_first, fresh, _ = two_turns(engine(False), model, tok, steps=steps)
    assert torch.equal(kept_first.input_ids, fresh_first.input_ids)  # turn 1 reads nothing: the same call
    assert torch.equal(kept_first.logprobs, fresh_first.logprobs)
    # sampled tokens under the same random state: equal; log-probs: within float32 rounding (module docstring)
    assert torch.equal(kept.input_ids, fresh.input_ids) and kept.texts == fresh.texts
    mask = kept.response_mask.bool()
    tolerance, _ = float32_tolerance(model, fresh, 1.0)
    diff = (kept.logprobs - fresh.logprobs)[mask].abs().max()
    assert diff <= tolerance, (float(diff), tolerance)
    obs = len(tok.encode(OBSERVATION, add_special_tokens=False))
    assert kept.metrics["rollout/kv_reused_tokens"] == reused(contexts, obs)
    assert kept.metrics["rollout/kv_prefill_tokens"] == len(contexts) * (obs + 1)  # one window of the suffix
    assert kept.metrics["rollout/kv_evicted"] == 0 and fresh.metrics == {}
    if scripted:  # slot 1 and 5 drew eos at step 2: two tokens fed, the eos not
        lengths = [len(c) - obs for c in contexts]
        assert [lengths[r] - len(PROMPTS[r // 2]) for r in (1, 5, 0, 2, 3)] == [3, 3, 5, 7, 7]


def test_turn3_reuses_turn2s_keys_and_values(llama):
    model, tok = llama
    eng, fresh_eng = engine(True), engine(False)
    _, second, contexts = two_turns(eng, model, tok)
    _, fresh_second, _ = two_turns(fresh_eng, model, tok)
    obs = tok.encode(OBSERVATION, add_special_tokens=False)
    third = [row[m.bool()].tolist() + obs for row, m in zip(second.input_ids, second.attention_mask, strict=True)]
    torch.manual_seed(2)
    kept = eng(model, tok, GenerationRequest([], 10, 1.0, prompt_ids=third, keep_cache=True))
    torch.manual_seed(2)
    fresh = fresh_eng(model, tok, GenerationRequest([], 10, 1.0, prompt_ids=third, keep_cache=True))
    assert torch.equal(second.input_ids, fresh_second.input_ids)
    assert kept.metrics["rollout/kv_reused_tokens"] == reused(third, len(obs))
    assert torch.equal(kept.input_ids, fresh.input_ids)
    tolerance, _ = float32_tolerance(model, fresh, 1.0)
    assert (kept.logprobs - fresh.logprobs)[kept.response_mask.bool()].abs().max() <= tolerance


def optimizer_step(model) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    optimizer.step()


@torch.no_grad()
def copied_weights(model) -> None:  # as the async sampler's load_weights: no optimiser
    for p in model.parameters():
        p.copy_(p * 1.01)


@pytest.mark.parametrize("update", [optimizer_step, copied_weights])
def test_a_weight_update_forces_a_miss(llama, update):
    model, tok = llama
    eng = engine(True)
    _, kept, _ = two_turns(eng, copy.deepcopy(model), tok, between=update)
    _, fresh, _ = two_turns(engine(False), copy.deepcopy(model), tok, between=update)
    assert kept.metrics["rollout/kv_reused_tokens"] == 0  # nothing computed by the old weights is read
    assert torch.equal(kept.input_ids, fresh.input_ids)
    assert torch.equal(kept.logprobs, fresh.logprobs)  # a miss prefills as without the cache: the same numbers


def test_an_optimiser_step_frees_the_entries_at_once(llama):
    model, tok = llama
    eng = engine(True)
    torch.manual_seed(0)
    eng(model, tok, GenerationRequest(PROMPTS, 10, 1.0, repeats=2, keep_cache=True))
    assert eng.turns is not None and len(eng.turns.entries) == 8 and eng.turns.bytes > 0
    optimizer_step(torch.nn.Linear(2, 2))  # any optimiser step (the policy's is one): the memory goes back
    assert not eng.turns.entries and eng.turns.bytes == 0
    eng(model, tok, GenerationRequest(PROMPTS, 10, 1.0, repeats=2, keep_cache=True))
    eng.release_turns()  # the round's episodes ended (rlx.rollout.collect)
    assert not eng.turns.entries and not eng.turns.index and eng.turns.bytes == 0


def test_over_the_memory_bound_the_oldest_go_and_re_prefill(llama, scripted_finishes):
    model, tok = llama
    # 2 layers × (keys, values) × 4 heads × 16 dims × 4 bytes = 1 KiB of keys and values per token
    config = model.config
    assert (config.num_hidden_layers, config.num_key_value_heads, config.hidden_size // config.num_attention_heads) == (
        2,
        4,
        16,
    )
    steps = scripted_finishes(tok, {})  # nobody finishes: each slot keeps its prompt + 9 sampled tokens
    eng = engine(True, mib=30 / 1024)  # 30 KiB
    _, kept, contexts = two_turns(eng, model, tok, repeats=1, steps=steps)
    _, fresh, _ = two_turns(engine(False), model, tok, repeats=1, steps=steps)
    # entries of 6+9, 4+9, 5+9, 5+9 = 15, 13, 14, 14 KiB, kept in slot order: 15 | 15+13 = 28 | 28+14 > 30: 15 goes,
    # 27 | 27+14 > 30: 13 goes, 28. Prompts 2 and 3 are kept (14 + 14 tokens reused), 0 and 1 re-prefill.
    assert [len(c) - len(OBSERVATION) - 1 for c in contexts] == [15, 13, 14, 14]
    # turn 2's own entries, context + 9 sampled = 42 to 44 KiB, are each over the whole bound: not kept
    assert kept.metrics["rollout/kv_evicted"] == 4
    assert kept.metrics["rollout/kv_reused_tokens"] == 28
    assert torch.equal(kept.input_ids, fresh.input_ids)
    tolerance, _ = float32_tolerance(model, fresh, 1.0)
    assert (kept.logprobs - fresh.logprobs)[kept.response_mask.bool()].abs().max() <= tolerance


def test_turn_1_counts_its_evictions(llama, scripted_finishes):
    model, tok = llama
    scripted_finishes(tok, {})
    torch.manual_seed(0)
    eng = engine(True, mib=30 / 1024)
    first = eng(model, tok, GenerationRequest(PROMPTS, 10, 1.0, keep_cache=True))
    assert first.metrics == {"rollout/kv_reused_tokens": 0, "rollout/kv_prefill_tokens": 4 * 6, "rollout/kv_evicted": 2}
    assert eng.turns is not None and eng.turns.bytes == 28 * 1024


def test_a_one_turn_call_keeps_nothing(llama):
    model, tok = llama
    eng = engine(True)
    torch.manual_seed(0)
    gen = eng(model, tok, GenerationRequest(PROMPTS, 10, 1.0, repeats=2))  # keep_cache=False: env=single
    assert gen.metrics == {} and eng.turns is not None and not eng.turns.entries


@pytest.mark.parametrize("bad", [0, -1.5, "lots", True])
def test_the_memory_bound_must_be_a_positive_number(bad):
    with pytest.raises(ConfigError, match=rf"rollout.turn_cache_mib .* \(got {bad}\): set it > 0"):
        engine(True, mib=bad)


def test_lookup_finds_the_longest_shared_prefix():
    cache = TurnCache(1.0)
    kv = torch.zeros(1, 2, 1, 20, 1)  # [layers, 2, H, n, D]
    first = list(range(100, 120))  # 20 ids: blocks 0, 1 hashed (BLOCK = 8), 4 ids past them
    cache.add(first, kv)
    cache.add(list(range(200, 212)), kv[:, :, :, :12])
    assert BLOCK == 8 and len(cache.entries) == 2
    hits = cache.lookup(
        [
            first + [7, 8, 9],  # the whole entry, then new ids: h = 20
            list(range(200, 211)) + [5, 6],  # diverges at index 11 (a turn cut at a stop string): h = 11
            list(range(300, 308)),  # 8 ids: no full block before the last id, a miss
        ]
    )
    assert [h for _, h in hits] == [20, 11, 0]
    assert not cache.entries and not cache.index and cache.bytes == 0  # both found: consumed
    cache.add(first, kv)
    assert [h for _, h in cache.lookup([first])] == [19]  # the same ids: the last one is prefilled for its logits


class Retry:
    """Three turns; an episode whose text has an even length ends after its second (its entry is left behind
    until the round's release); the observation is a fixed hint."""

    max_turns, required_fields, stop = 3, ("prompt",), ()

    def reset(self, rows: list[dict]) -> list[int]:
        return [0] * len(rows)

    def step(self, states: list[int], completions: list[str]) -> list[Turn]:
        done = []
        for i, text in enumerate(completions):
            states[i] += 1
            done.append(states[i] == 2 and len(text) % 2 == 0)
        return [Turn(Verdict(float(d), Status.PASS if d else Status.FAIL), d, " try again: ") for d in done]

    def close(self) -> None:
        pass


def test_a_round_of_episodes_is_the_same_with_the_kept_cache(llama):
    model, tok = llama
    rows = [{"prompt": p} for p in PROMPTS]
    config = RolloutConfig(4, 2, 10, 1.0, 4)  # generation batches of 4 contexts: the kept entries span calls
    batches, timers = [], []
    for keep in (True, False):
        torch.manual_seed(0)
        eng, timer = engine(keep), Timer()
        rollout = Rollout(model, tok, eng, reward=None, env=Retry())  # type: ignore[arg-type]
        batches.append(generate_and_score(rollout, rows, [0, 1, 2, 3], config, timer))
        timers.append(timer)
        assert eng.turns is None or not eng.turns.entries  # released when the round's episodes ended
    kept, fresh = batches
    assert torch.equal(kept.input_ids, fresh.input_ids) and kept.completions == fresh.completions
    assert torch.equal(kept.rewards, fresh.rewards)
    assert kept.sampler_logp is not None and fresh.sampler_logp is not None
    assert (kept.sampler_logp - fresh.sampler_logp).abs().max() < 1e-4  # μ of later turns: float32 rounding apart
    assert timers[0].engine["rollout/kv_reused_tokens"] > 0 and "rollout/kv_reused_tokens" not in timers[1].engine


def eager_backend(graph, example_inputs):
    """dynamo's graphs, run eagerly (module-level: anything that keeps it still pickles)."""
    return graph.forward


def test_a_compiled_decode_keeps_its_static_slots_too(llama):
    """compile=true: the decode cache is the static layout (all L columns, zeros past the written ones); the kept
    columns are the same, so turn 2 is the eager re-prefill's (dynamo's graphs run eagerly here)."""
    model, tok = copy.deepcopy(llama[0]), llama[1]  # compiling leaves state on the model: not the session's
    compiled = engine(True)
    compiled.compile, compiled.backend = True, eager_backend
    _, kept, contexts = two_turns(compiled, model, tok)
    _, fresh, _ = two_turns(engine(False), model, tok)
    assert torch.equal(kept.input_ids, fresh.input_ids)
    obs = len(tok.encode(OBSERVATION, add_special_tokens=False))
    assert kept.metrics["rollout/kv_reused_tokens"] == reused(contexts, obs)
    tolerance, _ = float32_tolerance(model, fresh, 1.0)
    assert (kept.logprobs - fresh.logprobs)[kept.response_mask.bool()].abs().max() <= tolerance


def test_completions_that_sampled_alike_share_one_entry(llama):
    model, tok = llama
    eng = engine(True)
    first = eng(model, tok, GenerationRequest(PROMPTS, 10, 1.0, greedy=True, repeats=2, keep_cache=True))
    assert torch.equal(first.input_ids[0::2], first.input_ids[1::2])  # greedy: a group's two are the same
    assert eng.turns is not None and len(eng.turns.entries) == 4  # one per prompt
    obs = tok.encode(OBSERVATION, add_special_tokens=False)
    contexts = [row[m.bool()].tolist() + obs for row, m in zip(first.input_ids, first.attention_mask, strict=True)]
    second = eng(model, tok, GenerationRequest([], 4, 1.0, greedy=True, prompt_ids=contexts, keep_cache=True))
    assert second.metrics["rollout/kv_reused_tokens"] == reused(contexts, len(obs))  # both read the shared one


def test_an_engine_sent_to_the_sampler_process_gets_an_empty_cache(llama):
    model, tok = llama
    eng = engine(True, mib=3.0)
    eng(model, tok, GenerationRequest(PROMPTS, 4, 1.0, keep_cache=True))
    sent = pickle.loads(pickle.dumps(eng))  # rollout.max_staleness > 0 pickles the engine into its worker
    assert sent.turns is not None and not sent.turns.entries and sent.turns.max_bytes == 3 * 2**20
    sent(model, tok, GenerationRequest(PROMPTS, 4, 1.0, keep_cache=True))
    assert len(sent.turns.entries) == 4
    optimizer_step(torch.nn.Linear(2, 2))  # its own optimiser hook
    assert not sent.turns.entries
