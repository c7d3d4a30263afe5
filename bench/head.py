"""The fused LM head (rlx.forward.head) at the 26.5M model's shape, a few tilings side by side in one run: the
forward with kept logits plus the backward (the update's head), and the no-grad forward with entropies (the
reference's and the sampling policy's). `untiled` runs the tiles as the head did before vocabulary blocks (row
chunks of 8M logits over the whole vocabulary); the default is rlx's CHUNK_ELEMENTS and VOCAB_BLOCK.

    OMP_NUM_THREADS=1 python bench/head.py                 # 1024 positions (a micro-batch of 16 × 64), H 384, V 32000
    OMP_NUM_THREADS=1 python bench/head.py --positions 4096
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import rlx.forward.head as head

SETTINGS = {  # name: (CHUNK_ELEMENTS, VOCAB_BLOCK or None for the whole vocabulary)
    "untiled (8M logits a chunk, whole vocabulary)": (1 << 23, None),
    "default": (head.CHUNK_ELEMENTS, head.VOCAB_BLOCK),
    "1M logits, 2048 columns": (1 << 20, 2048),
    "1M logits, 8192 columns": (1 << 20, 8192),
    "4M logits, 4096 columns": (1 << 22, 4096),
}


def timed(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.manual_seed(0)
    hidden = (0.5 * torch.randn(args.positions, args.hidden)).requires_grad_()
    weight = (0.05 * torch.randn(args.vocab, args.hidden)).requires_grad_()
    targets = torch.randint(0, args.vocab, (args.positions,))
    flops = 2 * args.positions * args.hidden * args.vocab

    def train():
        hidden.grad = weight.grad = None
        head.head_logprobs(hidden, weight, targets, 1.0)[0].sum().backward()

    @torch.no_grad()
    def metric():
        head.head_logprobs(hidden, weight, targets, 1.0, with_entropy=True)

    print(
        f"fused head, {args.positions} positions × H {args.hidden} × V {args.vocab}, {torch.get_num_threads()} "
        f"thread(s), median of {args.repeats} (settings interleaved)\n"
    )
    print("| tiling | forward + backward s | GFLOP/s (3 GEMMs) | no-grad forward + entropy s | GFLOP/s |")
    print("|---|---:|---:|---:|---:|")
    results: dict[str, list[list[float]]] = {name: [[], []] for name in SETTINGS}
    for _ in range(args.repeats):  # interleaved, so that a drifting load hits every setting alike
        for name, (chunk, block) in SETTINGS.items():
            head.CHUNK_ELEMENTS, head.VOCAB_BLOCK = chunk, block or args.vocab
            results[name][0].append(timed(train, 1))
            results[name][1].append(timed(metric, 1))
    for name, (train_s, metric_s) in results.items():
        a, b = statistics.median(train_s), statistics.median(metric_s)
        print(f"| {name} | {a:.3f} | {3 * flops / a / 1e9:.1f} | {b:.3f} | {flops / b / 1e9:.1f} |")


if __name__ == "__main__":
    main()
