"""Prepared for a day with a GPU (not run on the CPU machines): rollout=vllm colocated with the trainer in bf16
with vLLM's sleep mode, on a Qwen2-architecture model built offline, and the measured sampler–trainer mismatch
without and with a rollout correction.

It builds a random-init Qwen2 (rlx.models.synthetic: hidden 1024, 16 layers, 16 heads, 4 KV heads, a 32k BPE
vocabulary trained on the arithmetic corpus; ~0.25B parameters) once under $RLX_CACHE/bench, then runs a few
RL steps per setting as subprocesses of `python -m rlx` and prints, from each run's metrics.csv, the per-step
mean of rollout/logprob_abs_diff_max, rollout/logprob_abs_diff_mean, rollout/mismatch_kl,
rollout/mismatch_ratio_outside_frac, loss/correction_weight_mean and loss/correction_masked_frac, and the time
of the weight push (time/weight_sync) and of generation. A random-init model has no reward signal: this measures
the mismatch and the machinery, not learning.

Settings (each: trainer.precision=bf16-mixed, the policy's weights float32, vLLM in bfloat16, sleep mode on,
gpu_memory_utilization 0.3, CUDA graphs on):
    float32 vLLM, correction none      the floor: same weights, other kernels
    bf16 vLLM, correction none         the mismatch a bf16 sampler brings
    bf16 vLLM, token_tis / icepop      the same, reweighted / masked

    pip install -e ".[vllm]"           # on the GPU machine (vLLM's CUDA build brings its own torch)
    python bench/vllm_gpu.py --steps 5 # ~10 minutes on one H100-class GPU (estimate, not measured)
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _models import synthetic_model_dir

SHAPE = {"arch": "qwen2", "hidden": 1024, "layers": 16, "heads": 16, "kv_heads": 4, "vocab": 32000}
SETTINGS = {
    "fp32 vLLM, none": ["rollout.dtype=float32", "rollout_correction=none"],
    "bf16 vLLM, none": ["rollout.dtype=bfloat16", "rollout_correction=none"],
    "bf16 vLLM, token_tis": ["rollout.dtype=bfloat16", "rollout_correction=token_tis"],
    "bf16 vLLM, icepop": ["rollout.dtype=bfloat16", "rollout_correction=icepop"],
}
COMMON = [
    "rollout=vllm",
    "rollout.sleep=true",
    "rollout.enforce_eager=false",
    "rollout.gpu_memory_utilization=0.3",
    "trainer.precision=bf16-mixed",
    "algo.prompts_per_step=32",
    "algo.group_size=8",
    "data.max_new_tokens=128",
    "data.warm_start_min_match=0",
    "val_batch_size=64",
    "data.val_size=64",
]
METRICS = [
    "rollout/logprob_abs_diff_max",
    "rollout/logprob_abs_diff_mean",
    "rollout/mismatch_kl",
    "rollout/mismatch_ratio_outside_frac",
    "loss/correction_weight_mean",
    "loss/correction_masked_frac",
    "time/weight_sync",
    "time/generate",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--out", default="outputs/vllm_gpu")
    args = parser.parse_args()
    model = synthetic_model_dir(SHAPE)
    print(f"| setting | {' | '.join(METRICS)} |")
    print("|---" * (len(METRICS) + 1) + "|")
    for name, overrides in SETTINGS.items():
        run_dir = Path(args.out) / name.replace(" ", "_").replace(",", "")
        argv = ["-m", "rlx", "model=hf", f"model.name_or_path={model}", f"run_dir={run_dir}", *COMMON, *overrides]
        argv += [f"trainer.max_steps={args.steps}", f"trainer.val_check_interval={args.steps}"]
        subprocess.run([sys.executable, *argv], check=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        with (run_dir / "metrics.csv").open() as handle:
            rows = [r for r in csv.DictReader(handle) if r.get("rollout/logprob_abs_diff_max")]
        means = [
            statistics.mean(float(r[m]) for r in rows) if rows and rows[0].get(m) else float("nan") for m in METRICS
        ]
        print(f"| {name} | " + " | ".join(f"{v:.3g}" for v in means) + " |", flush=True)


if __name__ == "__main__":
    main()
