"""Claim (d) of claims.md: what PPO's critic costs, as one training step's peak memory, PPO against GRPO with
everything else matched, each step in a fresh process.

    python bench/critic_memory.py                          # 50M-parameter Qwen2, 8 prompts x 8, 2 repeats
    python bench/critic_memory.py --hidden 384 --layers 6 --prompts 4 --group-size 4 --new-tokens 16

Both arms: the same synthetic model (`rlx.models.synthetic`, random weights, so every completion runs to
`--new-tokens`), prompts × completions, 1 update epoch × `--minibatches` minibatch steps, micro-batching and
generation batch, β = 0 (no reference model in either: the only extra model is PPO's critic). What differs is
the algorithm: PPO (a critic — the policy's transformer with a scalar head and its own AdamW —, GAE, the token
mean) against GRPO (group-normalised advantages, each sequence's token mean); the advantage and aggregation
cost no memory worth counting. Each (arm, repeat) runs in its own interpreter (bench/memory.py's `measure`:
build as `python -m rlx` does, reset the high-water RSS, one RL step, report VmHWM), arms alternating, so a
load spike hits both. Peak RSS on a CPU counts torch's own ~0.5 GB in both arms: the ratio is of whole
processes, and the critic's own bytes (weights + gradients + AdamW moments) are printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import measure, model_dir, overrides, prompts_file  # noqa: E402  (bench/ is not a package)


def arms(minibatches: int, micro_batch: int, generation_batch: int) -> dict[str, list[str]]:
    matched = [
        "algo.beta=0.0",
        "algo.update_epochs=1",
        f"algo.minibatches={minibatches}",
        f"algo.micro_batch_size={micro_batch}",
        f"algo.generation_batch_size={generation_batch}",
    ]
    return {"grpo": ["algo=grpo", *matched], "ppo": ["algo=ppo", *matched]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--group-size", type=int, default=8, help="completions per prompt, both arms")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--minibatches", type=int, default=4)
    parser.add_argument("--micro-batch", type=int, default=16)
    parser.add_argument("--generation-batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=512, help="512 x 8 layers x 32k vocabulary: 50M parameters")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--max-rss-gb", type=float, default=12.0)
    parser.add_argument("--timeout-s", type=float, default=1800)
    parser.add_argument("--cache", default=os.environ.get("RLX_CACHE", "~/.cache/rlx"))
    args = parser.parse_args()

    model = model_dir(Path(args.cache).expanduser(), args.hidden, args.layers, args.vocab)
    meta = json.loads((model / "synthetic.json").read_text())
    if meta["parameters"] < 20e6:
        print(f"note: {meta['parameters'] / 1e6:.1f}M parameters, below the 20M claim (d) is stated for")
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')} UTC; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
        f"model {meta['arch']} {meta['parameters'] / 1e6:.1f}M parameters; {args.prompts} prompts x "
        f"{args.group_size} completions x {args.new_tokens} new tokens; 1 epoch x {args.minibatches} minibatches\n"
    )
    peaks: dict[str, list[float]] = {"grpo": [], "ppo": []}
    with tempfile.TemporaryDirectory() as tmp:
        data = prompts_file(Path(tmp))
        for repeat in range(args.repeats):
            for name, extra in arms(args.minibatches, args.micro_batch, args.generation_batch).items():
                run_dir = Path(tmp) / f"{name}-{repeat}"
                base = overrides(model, data, run_dir, args.prompts, args.group_size, args.new_tokens, extra)
                out = measure(base, args.max_rss_gb * 1024, args.timeout_s)
                print(f"  {name} repeat {repeat}: {out}", flush=True)
                if "peak_rss_mb" in out:
                    peaks[name].append(out["peak_rss_mb"])
    # the critic's own training state: weights + gradients + two AdamW moments of the policy's transformer body
    # (no LM head; the scalar head is negligible): at most 4 float32 copies of the policy's parameters
    critic_mb = 4 * meta["parameters"] * 4 / 2**20
    print("\n| arm | peak RSS of one step, MB (each repeat) | mean |")
    print("|---|---|---|")
    for name, values in peaks.items():
        mean = f"{statistics.fmean(values):.0f}" if values else "—"
        print(f"| {name} | {', '.join(f'{v:.0f}' for v in values) or '—'} | {mean} |")
    if peaks["grpo"] and peaks["ppo"]:
        ratio = statistics.fmean(peaks["ppo"]) / statistics.fmean(peaks["grpo"])
        extra = statistics.fmean(peaks["ppo"]) - statistics.fmean(peaks["grpo"])
        print(
            f"\nPPO / GRPO peak: {ratio:.2f}x (+{extra:.0f} MB); the critic's training state is at most 4 float32 "
            f"copies of the policy's {meta['parameters'] / 1e6:.1f}M parameters, {critic_mb:.0f} MB"
        )


if __name__ == "__main__":
    main()
