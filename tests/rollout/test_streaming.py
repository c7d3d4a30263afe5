"""Streamed scoring (`rollout.overlap_scoring`): the engine reports each completion to `on_finished` at the
step it samples its eos, collect scores it on its worker thread while the rest decode, and the batch is the
one the unstreamed path builds: the same texts, the same verdicts in the same rows, the same tensors."""

from __future__ import annotations

import threading

import pytest
import torch

from rlx.curriculum.uniform import UniformSampler
from rlx.rewards.base import Status, Verdict
from rlx.rollout.collect import Rollout, RolloutConfig, collect
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generate import HFGenerate
from rlx.rollout.generation import GenerationRequest

from .conftest import PROMPTS

ROWS = [{"prompt": p, "answer": i} for i, p in enumerate(PROMPTS)]


def test_the_engine_reports_each_finished_row_once_with_its_final_text(llama, scripted_finishes):
    """Scripted finishes (as in test_engine): slots 0, 5, 6 sample eos at step 1; then slot 3, which after the
    drop holds another row, at step 2. The callback changes nothing in the Generation."""
    model, tok = llama
    step = scripted_finishes(tok, {1: [0, 5, 6], 2: [3]})
    engine = RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True)
    reports: list[tuple[list[int], list[str]]] = []
    torch.manual_seed(2)
    gen = engine(
        model,
        tok,
        GenerationRequest(PROMPTS, 6, 1.0, greedy=False, repeats=3),
        on_finished=lambda r, t: reports.append((r, t)),
    )
    step[0] = 0
    torch.manual_seed(2)
    plain = engine(model, tok, GenerationRequest(PROMPTS, 6, 1.0, greedy=False, repeats=3))
    # Slot 0 ← row 11 and slot 5 ← row 10 move into the holes (the tail's live slots), so slot 3 is still row 3.
    assert [rows for rows, _ in reports] == [[0, 5, 6], [3]]
    assert sorted(r for rows, _ in reports for r in rows) == torch.nonzero(~gen.truncated).squeeze(-1).tolist()
    for rows, texts in reports:
        assert texts == [gen.texts[r] for r in rows]
    assert [len(t) for _, texts in reports for t in texts] == [1, 1, 1, 2]  # the tokens before the eos
    assert gen.texts == plain.texts and torch.equal(gen.input_ids, plain.input_ids)
    assert torch.equal(gen.logprobs, plain.logprobs) and torch.equal(gen.truncated, plain.truncated)


class RecordingReward:
    """A verdict from the text alone (reward = its length mod 3, halved; status FAIL for an empty text), and
    the calls in order: (row answer, text) pairs, and whether the generation had returned when it was made."""

    def __init__(self, returned: threading.Event, started: threading.Event) -> None:
        self.calls: list[list[tuple[int, str]]] = []
        self.during: list[bool] = []
        self.returned, self.started = returned, started

    def __call__(self, completions, rows):
        self.calls.append([(r["answer"], c) for c, r in zip(completions, rows, strict=True)])
        self.during.append(not self.returned.is_set())
        self.started.set()
        return [
            Verdict(len(c) % 3 / 2, Status.PASS if c else Status.FAIL, {"len": float(len(c)), "mod": len(c) % 3})
            for c in completions
        ]


class Watched:
    """The generator, with a flag set when a call returns, and a first `on_finished` that waits until the
    reward has started: the scoring provably runs while the decode is still under way."""

    def __init__(self, generator, returned: threading.Event, started: threading.Event) -> None:
        self.generator, self.returned, self.started = generator, returned, started
        self.overlap_scoring = generator.overlap_scoring
        self.reported = 0

    def __call__(self, *args, on_finished=None, **kwargs):
        self.returned.clear()

        def report(rows, texts):
            on_finished(rows, texts)
            self.reported += len(rows)
            assert self.started.wait(timeout=30), "the reward did not start while the engine decoded"

        out = self.generator(*args, on_finished=report if on_finished is not None else None, **kwargs)
        self.returned.set()
        return out


def run(model, tok, generator, overlap: bool, generation_batch_size):
    returned, started = threading.Event(), threading.Event()
    reward = RecordingReward(returned, started)
    engine = Watched(generator(overlap), returned, started)
    sampler = UniformSampler(seed=0)
    sampler.bind(ROWS)
    sampler.begin_step(0)
    torch.manual_seed(5)
    config = RolloutConfig(4, 4, 24, 1.0, generation_batch_size)
    batch, _ = collect(Rollout(model, tok, engine, reward), sampler, ROWS, config)
    return batch, reward, engine


ENGINE = "engine", lambda overlap: RolloutEngine(compile=False, overlap_scoring=overlap, reuse_logprobs=True)
HF = "hf", lambda overlap: HFGenerate(overlap_scoring=overlap)


@pytest.mark.parametrize("rollout", [ENGINE, HF], ids=["engine", "hf"])
@pytest.mark.parametrize("generation_batch_size", [None, 8])
def test_streamed_collect_builds_the_unstreamed_batch(llama, rollout, generation_batch_size):
    model, tok = llama
    name, generator = rollout
    streamed, reward, engine = run(model, tok, generator, True, generation_batch_size)
    plain, plain_reward, _ = run(model, tok, generator, False, generation_batch_size)
    assert streamed.completions == plain.completions and streamed.statuses == plain.statuses
    assert torch.equal(streamed.rewards, plain.rewards) and torch.equal(streamed.valid, plain.valid)
    assert streamed.components.keys() == plain.components.keys() == {"len", "mod"}
    for component in plain.components:
        assert torch.equal(streamed.components[component], plain.components[component])
    for field in ("input_ids", "attention_mask", "response_mask", "truncated", "prompt_index", "group_index"):
        assert torch.equal(getattr(streamed, field), getattr(plain, field)), field
    if plain.sampling_logp is not None:
        assert torch.equal(streamed.sampling_logp, plain.sampling_logp)
    # Unstreamed: one call per chunk, in row order. Streamed: every completion in exactly one call, each call
    # in row order within its chunk.
    chunks = 1 if generation_batch_size is None else 2
    assert len(plain_reward.calls) == chunks and not any(plain_reward.during)
    pairs = list(zip(plain.prompt_index.tolist(), plain.completions, strict=True))  # (prompt, text) by row
    assert [pair for call in plain_reward.calls for pair in call] == pairs
    assert sorted(pair for call in reward.calls for pair in call) == sorted(pairs)
    truncated, finished = int(plain.truncated.sum()), int((~plain.truncated).sum())
    assert truncated > 0 and finished > 0  # the seed gives both kinds (else the test shows nothing)
    if name == "engine":  # every row that sampled its eos before the last step was reported as it did
        at_last_step = int((~plain.truncated & (plain.response_mask.sum(-1) == 24)).sum())
        assert engine.reported == finished - at_last_step
        assert len(reward.calls) > chunks and reward.during[0]  # scored while the engine was decoding
    else:  # HF generate reports nothing: one call per chunk once it returns, as unstreamed
        assert engine.reported == 0 and len(reward.calls) == chunks
