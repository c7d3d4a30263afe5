"""Torch threads for the embedded default: 1 against 2 (or any counts), on an idle machine and beside competing
CPU-bound processes, for the two kinds of work the default run does on the tiny model:

- `sft`: one warm-start step (model=tiny's recipe: batch 64 of prompt + answer, forward + backward + AdamW);
- `sample`: one RL rollout's sampling (128 sequences, 8 new tokens, KV cache, `generate`).

Each (threads, competitors) cell runs in its own process (torch's thread pool is fixed at its first use), timing
`--steps` steps after 5 warm-up ones; the competitors are `python -c "while True: pass"` processes started before
and killed after the cell. The median seconds per step is printed; the code's choice (rlx.cli.threads) follows
from this table. State the machine's other load (`uptime`) beside the numbers: a shared machine adds its own.

    python bench/threads.py                         # threads 1,2 x competitors 0,1
    python bench/threads.py --threads 1 2 --competitors 0 1 3 --steps 30
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cell(threads: int, steps: int) -> dict:
    import torch

    torch.set_num_threads(threads)

    sys.path.insert(0, str(REPO / "bench"))
    from _models import compose
    from hydra.utils import instantiate

    from rlx.models.tiny import build_tiny_llama
    from rlx.models.tokenizer import build_char_tokenizer
    from rlx.models.warm_start import encode_examples

    cfg = compose(["run_dir=/tmp/rlx-bench-threads"])
    task = instantiate(cfg.data)
    tokenizer = build_char_tokenizer()
    arch = {k: cfg.model[k] for k in ("hidden_size", "layers", "heads", "intermediate_size", "max_positions")}
    model = build_tiny_llama(tokenizer, **arch, init_std=0.02, seed=0)
    examples = task.warm_start_examples(2048, 0)
    ids, mask, labels = encode_examples(tokenizer, examples)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    sft = []
    for step in range(steps + 5):
        rows = torch.randint(0, ids.shape[0], (64,), generator=generator)
        start = time.perf_counter()
        model(input_ids=ids[rows], attention_mask=mask[rows], labels=labels[rows], use_cache=False).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step >= 5:
            sft.append(time.perf_counter() - start)
    model.eval()
    prompts = tokenizer([p for p, _ in examples[:128]], add_special_tokens=False, padding=True, return_tensors="pt")
    sample = []
    with torch.inference_mode():
        for step in range(max(3, steps // 4) + 2):
            start = time.perf_counter()
            model.generate(**prompts, max_new_tokens=8, min_new_tokens=8, do_sample=True, pad_token_id=0)
            if step >= 2:
                sample.append(time.perf_counter() - start)
    return {"sft": statistics.median(sft), "sample": statistics.median(sample)}


def measure(threads: int, competitors: int, steps: int) -> dict:
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(competitors)]
    try:
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(REPO)}
        out = subprocess.run(
            [sys.executable, __file__, "--cell", str(threads), "--steps", str(steps)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        for process in busy:
            process.kill()
            process.wait()
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--competitors", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--cell", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cell is not None:
        print(json.dumps(cell(args.cell, args.steps)))
        return
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  cores {os.cpu_count()}  {os.getloadavg()} load")
    print(f"{'competitors':>11} {'threads':>7} {'sft s/step':>10} {'sample s':>9}")
    for competitors in args.competitors:
        for threads in args.threads:
            result = measure(threads, competitors, args.steps)
            print(f"{competitors:>11} {threads:>7} {result['sft']:>10.4f} {result['sample']:>9.4f}", flush=True)


if __name__ == "__main__":
    main()
