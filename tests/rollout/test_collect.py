"""Bounded generation and overlapped scoring in `collect`: chunks of algo.generation_batch_size sequences in
whole groups, the same batch as one unchunked call, scoring of chunk k running while chunk k+1 generates, and
the time/generate and time/score figures."""

from __future__ import annotations

import threading
import types

import pytest
import torch

from rlx.curriculum.uniform import UniformSampler
from rlx.rewards.base import Status, Verdict
from rlx.rollout.collect import Rollout, RolloutConfig, collect
from rlx.rollout.generation import Generation, GenerationRequest

TOKENIZER = types.SimpleNamespace(pad_token_id=0)
ROWS = [{"prompt": f"p{i}", "answer": i} for i in range(12)]


class FakeEngine:
    """Prompt k's completion j is the single token 10·k + j (+ eos for even j, reported to `on_finished` in
    reverse row order, as a real engine reports rows in the order they finish); response width varies by chunk
    so that joining chunks must re-pad. Records the size of every call and whether it had a callback."""

    overlap_scoring = True

    def __init__(self, before_chunk=None, stream=True):
        self.sizes, self.before_chunk, self.streamed, self.stream = [], before_chunk, [], stream

    def __call__(self, model, tokenizer, request, on_finished=None):
        prompts, repeats = request.prompts, request.repeats
        if self.before_chunk is not None:
            self.before_chunk(len(self.sizes))
        self.sizes.append(len(prompts) * repeats)
        self.streamed.append(on_finished is not None)
        ids = [int(p[1:]) for p in prompts for _ in range(repeats)]
        width = 1 + len(self.sizes) % 2  # 1 or 2 completion columns
        n = len(ids)
        response = torch.zeros(n, width, dtype=torch.long)
        response[:, 0] = torch.tensor([10 * k + j for k in ids[::repeats] for j in range(repeats)])
        mask = torch.zeros(n, width, dtype=torch.long)
        mask[:, 0] = 1
        prompt = torch.tensor(ids)[:, None] + 100
        texts = [str(int(t)) for t in response[:, 0]]
        if on_finished is not None and self.stream:
            finished = [row for row in range(n) if row % repeats % 2 == 0][::-1]
            on_finished(finished, [texts[row] for row in finished])
        return Generation(
            torch.cat([prompt, response], 1),
            torch.cat([torch.ones_like(prompt), mask], 1),
            mask,
            torch.zeros(n, dtype=torch.bool),
            texts,
            -torch.ones(n, width) * mask,
            2 * torch.ones(n, width) * mask,
            request.temperature,
            reusable=True,
        )


class ParityReward:
    """1 for an even completion token, 0 for odd; a call holding prompt `broken` breaks (INFRA, no components)."""

    def __init__(self, on_call=None, broken=None):
        self.calls, self.on_call, self.broken = [], on_call, broken

    def __call__(self, completions, rows):
        if self.on_call is not None:
            self.on_call(len(self.calls))
        self.calls.append(len(completions))
        if any(r["answer"] == self.broken for r in rows):
            raise RuntimeError("scorer broke")
        return [Verdict(float(int(c) % 2 == 0), Status.PASS, {"even": float(int(c) % 2 == 0)}) for c in completions]


def run(config, engine, reward):
    sampler = UniformSampler(seed=0)
    sampler.bind(ROWS)
    sampler.begin_step(0)
    return collect(Rollout(None, TOKENIZER, engine, reward), sampler, ROWS, config)


def test_generation_batch_size_must_hold_whole_groups():
    with pytest.raises(ValueError, match=r"algo.generation_batch_size=12 must be a multiple of algo.group_size=8"):
        RolloutConfig(4, 8, 4, 1.0, 12)
    config = RolloutConfig(5, 4, 4, 1.0, 8)
    assert config.chunks([3, 1, 4, 1, 5]) == [[3, 1], [4, 1], [5]]  # 8 sequences = 2 groups per call
    assert RolloutConfig(5, 4, 4, 1.0, None).chunks([3, 1, 4, 1, 5]) == [[3, 1, 4, 1, 5]]


def test_a_training_request_samples_a_group_per_prompt_at_the_step_temperature():
    request = RolloutConfig(5, 4, 6, 0.7, None).request(["p3", "p1"])
    assert request == GenerationRequest(["p3", "p1"], max_new_tokens=6, temperature=0.7, greedy=False, repeats=4)


def test_chunked_collect_builds_the_unchunked_batch():
    whole, whole_stats = run(RolloutConfig(6, 4, 2, 1.0, None), FakeEngine(), ParityReward())
    engine = FakeEngine()
    chunked, stats = run(RolloutConfig(6, 4, 2, 1.0, 8), engine, ParityReward())
    assert engine.sizes == [8, 8, 8] and stats.chunks == 3 and whole_stats.chunks == 1 and all(engine.streamed)
    assert torch.equal(chunked.prompt_index, whole.prompt_index)
    assert torch.equal(chunked.group_index, torch.arange(6).repeat_interleave(4))
    first = chunked.input_ids[:, -chunked.response_width]  # every completion's token, in the same order
    assert torch.equal(first, whole.input_ids[:, -whole.response_width])
    assert chunked.completions == whole.completions and chunked.statuses == whole.statuses
    assert torch.equal(chunked.rewards, whole.rewards) and torch.equal(chunked.components["even"], whole.rewards)
    assert chunked.sampling_logp.shape == chunked.response_mask.shape  # padded to the widest chunk
    assert torch.equal(chunked.sampling_logp, -chunked.response_mask.float())
    assert torch.equal(chunked.sampling_entropy, 2 * chunked.response_mask.float())
    assert chunked.sampling_temperature == 1.0


def test_a_broken_chunk_is_infra_and_the_others_keep_their_components():
    batch, _ = run(RolloutConfig(6, 4, 2, 1.0, 8), FakeEngine(), ParityReward(broken=5))
    broken = batch.prompt_index == 5
    assert broken.any() and 0 < int((~batch.valid).sum()) <= 8  # only the chunk holding prompt 5
    assert not batch.valid[broken].any() and set(batch.components) == {"even"}
    assert torch.equal(batch.components["even"][batch.valid], batch.rewards[batch.valid])


def test_scoring_of_a_chunk_overlaps_the_next_chunks_generation():
    started, log = [threading.Event() for _ in range(3)], []

    def before_chunk(k):  # chunk k ≥ 1 generates only once the scoring of chunk k − 1 is under way
        if k:
            assert started[k - 1].wait(timeout=10), "chunk scored only after every chunk was generated"
        log.append(f"generate {k}")

    def on_call(k):
        started[k].set()
        log.append(f"score {k}")

    # an engine that reports no finished rows (as HF generate): one reward call per chunk
    _, stats = run(RolloutConfig(6, 4, 2, 1.0, 8), FakeEngine(before_chunk, stream=False), ParityReward(on_call))
    assert log.index("score 0") < log.index("generate 1") and log.index("score 1") < log.index("generate 2")
    assert stats.generate_seconds > 0 and stats.score_seconds > 0 and stats.seconds >= stats.generate_seconds


def test_without_overlap_each_chunk_is_scored_on_the_calling_thread_before_the_next_generates():
    log = []
    engine = FakeEngine(lambda k: log.append(f"generate {k}"))
    engine.overlap_scoring = False
    reward = ParityReward(lambda k: log.append(f"score {k} {threading.current_thread() is threading.main_thread()}"))
    run(RolloutConfig(6, 4, 2, 1.0, 8), engine, reward)
    assert engine.streamed == [False] * 3  # nothing streamed: one call per chunk
    assert log == ["generate 0", "score 0 True", "generate 1", "score 1 True", "generate 2", "score 2 True"]
