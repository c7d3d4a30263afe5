"""Multi-turn generation with the kept KV cache (`rollout.keep_turn_cache=true`, rlx/rollout/turn_cache.py) against
re-prefilling every turn's whole context (`false`), in the same run.

A batch of episodes (--prompts arithmetic prompts × --group completions each) takes --turns model turns of
--new-tokens each; after each turn every episode's context grows by its sampled tokens and an observation of
--obs-tokens tokens (a fixed feedback text, tokenized raw and cut to that length), as rlx.envs.episodes builds
it. Turn 1 is one request with the group sharing one prefill (`keep_cache=True`, as rlx.rollout.collect sends a
multi-turn env's first turn); later turns are requests over the token-id contexts (as EngineTurns sends them).
The model is the larger benchmark model (bench/_models.py: random-init 26.5M-parameter Qwen2, 32k vocabulary;
it never samples eos, so every turn runs to --new-tokens and the episodes' contexts grow alike) or `--size tiny`.

Tokens/s counts sampled tokens (every turn's) over the wall time of all turns. The arms alternate, each round
seeded alike, so both sample the same tokens (checked: log-probs within float32 rounding up to the first draw
that differs, and how many episodes had one: a uniform within rounding of a category boundary). The median of
--rounds is reported, with each turn's median time and the context tokens each arm prefilled.

    OMP_NUM_THREADS=1 python bench/multiturn_cache.py            # 26.5M, 16 prompts × 4, 3 turns of 32 + 32 obs
    OMP_NUM_THREADS=1 python bench/multiturn_cache.py --size tiny --new-tokens 8
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from _models import model_dir

from rlx.data.arithmetic import ArithmeticTask
from rlx.models.loading import load_local
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generation import Generation, GenerationRequest

FEEDBACK = " That is not right. Check the carry of the units digit, then give the sum again as one number: "


def observation(tokenizer, tokens: int) -> list[int]:
    """--obs-tokens ids of the feedback text, repeated as needed."""
    ids = tokenizer.encode(FEEDBACK, add_special_tokens=False)
    return (ids * (tokens // len(ids) + 1))[:tokens]


def episode(engine: RolloutEngine, model, tokenizer, prompts: list[str], args, seed: int):
    """One batch of episodes, --turns turns each. Returns (per-turn seconds, sampled tokens, generations, the
    context tokens a re-prefill computes: each request's rows × its padded width)."""
    obs = observation(tokenizer, args.obs_tokens)
    seconds, generations = [], []
    width = len(prompts) * max(len(tokenizer.encode(p, add_special_tokens=False)) for p in prompts)
    request = GenerationRequest(prompts, args.new_tokens, 1.0, repeats=args.group, keep_cache=True)
    for turn in range(args.turns):
        torch.manual_seed(seed * 100 + turn)
        start = time.perf_counter()
        gen = engine(model, tokenizer, request)
        seconds.append(time.perf_counter() - start)
        generations.append(gen)
        contexts = [row[m.bool()].tolist() + obs for row, m in zip(gen.input_ids, gen.attention_mask, strict=True)]
        request = GenerationRequest([], args.new_tokens, 1.0, prompt_ids=contexts, keep_cache=True)
        if turn < args.turns - 1:
            width += len(contexts) * max(len(c) for c in contexts)
    engine.release_turns()  # the episodes ended (rlx.rollout.collect does this after the round's last turn)
    tokens = sum(int(g.response_mask.sum()) for g in generations)
    return seconds, tokens, generations, width


def compare(kept: list[Generation], fresh: list[Generation]) -> tuple[float, int]:
    """max |Δ log-prob| between the arms over every turn's tokens up to the first one they sampled differently,
    and how many episodes sampled differently at all (a uniform within float32 rounding of a category boundary:
    on a near-uniform 32k distribution ~1e−6 per draw; that episode's later turns then differ too)."""
    worst, diverged = 0.0, set()
    for a, b in zip(kept, fresh, strict=True):
        assert a.logprobs is not None and b.logprobs is not None
        width = min(a.response_width, b.response_width)
        prompts = a.input_ids.shape[1] - a.response_width, b.input_ids.shape[1] - b.response_width
        for row in range(a.input_ids.shape[0]):
            context_a = a.input_ids[row, : prompts[0]][a.attention_mask[row, : prompts[0]].bool()]
            context_b = b.input_ids[row, : prompts[1]][b.attention_mask[row, : prompts[1]].bool()]
            if row in diverged or not torch.equal(context_a, context_b):
                diverged.add(row)
                continue
            differ = a.input_ids[row, -a.response_width :][:width] != b.input_ids[row, -b.response_width :][:width]
            col = int(differ.nonzero()[0]) if differ.any() else width
            if col < width or a.response_width != b.response_width:
                diverged.add(row)
            mask = a.response_mask[row, :col].bool()
            if mask.any():
                worst = max(worst, float((a.logprobs[row, :col] - b.logprobs[row, :col])[mask].abs().max()))
    return worst, len(diverged)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["tiny", "large"], default="large")
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--obs-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    loaded = load_local(model_dir(args.size))
    model, tokenizer = loaded.policy.eval(), loaded.tokenizer
    task = ArithmeticTask(
        10, 99, 500, 1234, 0.7, args.new_tokens, warm_start_min_match=0.7, warm_start_plateau_loss=0.6
    )
    prompts = [row["prompt"] for row in task.train[: args.prompts]]
    arms = {
        "kept": RolloutEngine(False, False, True, keep_turn_cache=True),
        "re-prefill": RolloutEngine(False, False, True, keep_turn_cache=False),
    }
    results: dict[str, list[tuple[list[float], int]]] = {name: [] for name in arms}
    prefilled: dict[str, float] = {}
    worst, diverged = 0.0, 0
    with torch.inference_mode():
        episode(arms["kept"], model, tokenizer, prompts, args, seed=999)  # warm-up (allocator, first calls)
        for r in range(args.rounds):
            order = list(arms) if r % 2 == 0 else list(reversed(arms))
            gens = {}
            for name in order:
                seconds, tokens, gens[name], width = episode(arms[name], model, tokenizer, prompts, args, seed=r)
                results[name].append((seconds, tokens))
            delta, differ = compare(gens["kept"], gens["re-prefill"])
            worst, diverged = max(worst, delta), diverged + differ
            kept_metrics = [g.metrics for g in gens["kept"]]
            prefilled["kept"] = sum(m["rollout/kv_prefill_tokens"] for m in kept_metrics)
            prefilled["reused"] = sum(m["rollout/kv_reused_tokens"] for m in kept_metrics)
            prefilled["re-prefill"] = width
    load = os.getloadavg()
    print(f"# {datetime.date.today()}  {' '.join(sys.argv)}  OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print(
        f"# {args.size}: {args.prompts}×{args.group} episodes, {args.turns} turns of {args.new_tokens} tokens + "
        f"{args.obs_tokens} obs; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (shared machine)"
    )
    turns = " | ".join(f"turn {t + 1} s" for t in range(args.turns))
    print(f"| arm | tokens/s | {turns} | context tokens prefilled (reused) |")
    print("|---|---:|" + "---:|" * args.turns + "---:|")
    for name, runs in results.items():
        rate = statistics.median(tokens / sum(seconds) for seconds, tokens in runs)
        per_turn = " | ".join(f"{statistics.median(s[t] for s, _ in runs):.2f}" for t in range(args.turns))
        extra = f" ({prefilled['reused']:.0f})" if name == "kept" else ""
        print(f"| {name} | {rate:.0f} | {per_turn} | {prefilled[name]:.0f}{extra} |")
    speedup = statistics.median(
        sum(b[0]) / sum(a[0]) for a, b in zip(results["kept"], results["re-prefill"], strict=True)
    )
    print(
        f"\nkept / re-prefill speed: {speedup:.2f}× (median over rounds); max |Δ log-prob| between arms {worst:.2e} "
        f"(up to any first differing draw); episodes that sampled differently: {diverged} of "
        f"{args.rounds * args.prompts * args.group}"
    )


if __name__ == "__main__":
    main()
