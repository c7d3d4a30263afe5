"""GRPO step time and peak memory: rlx against TRL 1.16's GRPOTrainer (the named peer), same machine, same run,
at two sizes:

- `tiny`: the embedded default's warm-started 1M Llama, 16 prompts × 8 completions, ≤ 4 new tokens;
- `large`: a random-init 26.5M Qwen2 with a trained 32k BPE tokenizer (bench/_models.py), 8 prompts × 8
  completions, 64 new tokens (a random model never samples eos, so every completion is 64 tokens long).

Both trainers get the same model directory, the arithmetic task's prompts, the exact-answer math reward, G,
batch, max new tokens, lr 1e-4 (AdamW β2 0.99, no weight decay, linear decay), max grad norm 1, temperature 1
with top-k/top-p off, per-sequence token-mean aggregation (TRL `loss_type="grpo"`), group-normalised
advantages, k3 KL to the frozen reference with β 0.04 in the loss, and one update per batch (TRL
`num_iterations=1`, one generation per optimiser step; rlx `algo.update_epochs=1 algo.minibatches=1`), so
neither computes old log-probs, and the same micro-batching: every forward and backward runs on the whole
batch (tiny) or 16 sequences (large), the update accumulating their gradients (rlx `algo.micro_batch_size`; TRL
`per_device_train_batch_size` with `gradient_accumulation_steps` = batch / micro-batch, whose
`steps_per_generation` then generates the whole batch at once). TRL runs with gradient checkpointing off (its
default is on, which only trades time for memory at these sizes), no vLLM, no completion logging. Each trainer
runs in its own process (peak RSS is its own); with --rounds > 1 they alternate and the median of each round's
ratio is reported, which keeps a shared machine's drifting load out of the ratio. rlx's step is split into
generate, score, reference (+ advantages) and update.

    OMP_NUM_THREADS=1 python bench/grpo_step.py --rounds 3            # both sizes, as in the README
    OMP_NUM_THREADS=1 python bench/grpo_step.py --sizes tiny --steps 30
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _models import REPO, compose, model_dir

BETA, LR = 0.04, 1e-4
SIZES = {  # prompts per step, G, max new tokens, sequences per forward/backward, default steps
    "tiny": {"prompts": 16, "group": 8, "new_tokens": 4, "micro": 128, "steps": 30, "warmup": 5},
    "large": {"prompts": 8, "group": 8, "new_tokens": 64, "micro": 16, "steps": 6, "warmup": 1},
}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_rlx(size: str, steps: int, path: Path) -> dict:
    import lightning.pytorch as pl

    import rlx.module
    from rlx.train import build

    spec = SIZES[size]
    model = [] if size == "tiny" else ["model=hf", f"model.name_or_path={path}"]
    run_dir = tempfile.mkdtemp(prefix="rlx-bench-")  # its own: concurrent benches never share a metrics.csv
    cfg = compose(
        [
            *model,
            f"run_dir={run_dir}",
            f"trainer.max_steps={steps}",
            "trainer.val_check_interval=100000",
            "+trainer.enable_checkpointing=false",
            "~trainer.callbacks",
            "trainer.enable_progress_bar=false",
            f"algo.prompts_per_step={spec['prompts']}",
            f"algo.group_size={spec['group']}",
            f"algo.beta={BETA}",
            f"algo.optimizer.lr={LR}",
            "algo.update_epochs=1",
            "algo.minibatches=1",
            f"algo.micro_batch_size={spec['micro']}",
            f"data.max_new_tokens={spec['new_tokens']}",
            "samples_every=100000",
        ]
    )
    module, trainer = build(cfg)
    split: dict[str, list[float]] = {"generate": [], "score": [], "reference": [], "update": []}
    times: list[float] = []

    def timed(fn, name):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            split[name].append(time.perf_counter() - start)
            return out

        return wrapper

    collect = rlx.module.collect

    def collect_split(*args, **kwargs):
        batch, stats = collect(*args, **kwargs)
        split["generate"].append(stats.generate_seconds)
        split["score"].append(stats.seconds - stats.generate_seconds)  # scoring not hidden behind generation
        return batch, stats

    rlx.module.collect = collect_split
    rlx.module.prepare = timed(rlx.module.prepare, "reference")  # reference log-probs, advantages
    module.update = timed(module.update, "update")

    class Timer(pl.Callback):
        def on_train_batch_start(self, *args):
            self.start = time.perf_counter(), time.process_time()

        def on_train_batch_end(self, *args):
            times.append(time.perf_counter() - self.start[0])
            cpu.append(time.process_time() - self.start[1])

    cpu: list[float] = []
    trainer.callbacks.append(Timer())
    precision = {"weights": str(next(module.policy.parameters()).dtype), "autocast": str(trainer.precision)}
    trainer.fit(module)
    return {"step_s": times, "cpu_s": cpu, "peak_rss_mb": peak_rss_mb(), "split": split, "precision": precision}


def run_trl(size: str, steps: int, path: Path) -> dict:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from rlx.data.arithmetic import ArithmeticTask
    from rlx.rewards.math import MathReward

    spec = SIZES[size]
    task = ArithmeticTask(
        10, 99, 500, 1234, 0.7, spec["new_tokens"], warm_start_min_match=0.7, warm_start_plateau_loss=0.6
    )
    scorer = MathReward(strict=True, verifier="exact", format_weight=0.0, timeout_s=5)

    def reward(completions, answer, **_):
        return [v.reward for v in scorer(completions, [{"answer": a} for a in answer])]

    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(path)
    data = Dataset.from_list([{"prompt": r["prompt"], "answer": r["answer"]} for r in task.train])
    times: list[float] = []

    cpu: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, *args, **kwargs):
            self.start = time.perf_counter(), time.process_time()

        def on_step_end(self, *args, **kwargs):
            times.append(time.perf_counter() - self.start[0])
            cpu.append(time.process_time() - self.start[1])

    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="trl-bench-"),
        use_cpu=True,
        max_steps=steps,
        learning_rate=LR,
        beta=BETA,
        adam_beta2=0.99,
        weight_decay=0.0,
        lr_scheduler_type="linear",
        warmup_steps=0,
        max_grad_norm=1.0,
        num_generations=spec["group"],
        per_device_train_batch_size=spec["micro"],
        gradient_accumulation_steps=spec["prompts"] * spec["group"] // spec["micro"],
        max_completion_length=spec["new_tokens"],
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        repetition_penalty=1.0,
        loss_type="grpo",
        scale_rewards="group",
        num_iterations=1,
        epsilon=0.2,
        importance_sampling_level="token",
        mask_truncated_completions=False,
        top_entropy_quantile=1.0,
        use_vllm=False,
        gradient_checkpointing=False,
        log_completions=False,
        logging_steps=10_000,
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        seed=0,
        # rlx's precision: float32 weights and math. GRPOConfig's default bf16=True holds even with use_cpu=True and
        # would run TRL under bf16 autocast (emulated on an AVX2 CPU: 10x slower; native elsewhere: flattered)
        bf16=False,
        fp16=False,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=config,
        train_dataset=data,
        processing_class=tokenizer,
        callbacks=[Timer()],
    )
    # what TRL will really run at: its weights' dtype and accelerate's mixed-precision (autocast) mode
    precision = {
        "weights": str(next(trainer.model.parameters()).dtype),
        "autocast": trainer.accelerator.mixed_precision,
    }
    trainer.train()
    return {"step_s": times, "cpu_s": cpu, "peak_rss_mb": peak_rss_mb(), "precision": precision}


# The two arms' precision descriptions that mean the same arithmetic (Lightning's "32-true" is accelerate's "no")
SAME_PRECISION = {("torch.float32", "32-true"), ("torch.float32", "no")}


def check_same_precision(results: dict[str, dict]) -> str:
    """Refuse to compare arms that compute at different precisions; returns the shared one for the table."""
    seen = {name: (r["precision"]["weights"], r["precision"]["autocast"]) for name, r in results.items()}
    if any(p not in SAME_PRECISION for p in seen.values()):
        raise SystemExit(f"the arms do not run at rlx's float32 precision, not identical work: {seen}")
    return "float32 weights, no autocast (rlx precision 32-true, TRL bf16=False fp16=False)"


def worker(name: str, size: str, steps: int, path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", name, "--sizes", size, "--steps", str(steps), "--model", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        raise RuntimeError(f"{name} ({size}) failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_size(size: str, steps: int, warmup: int, rounds: int) -> None:
    spec = SIZES[size]
    path = model_dir(size)
    precision = ""
    peers = ("rlx", "trl") if importlib.util.find_spec("trl") else ("rlx",)  # TRL is not an rlx dependency
    ratios, rows = [], {name: [] for name in peers}
    split: dict[str, list[float]] = {}
    for _ in range(rounds):
        result = {name: worker(name, size, steps, path) for name in peers}
        precision = check_same_precision(result)
        for name, r in result.items():
            rows[name].append(
                (statistics.median(r["step_s"][warmup:]), r["peak_rss_mb"], statistics.median(r["cpu_s"][warmup:]))
            )
        if "trl" in rows:
            ratios.append(tuple(a / b for a, b in zip(rows["rlx"][-1], rows["trl"][-1], strict=True)))
        for part, values in result["rlx"]["split"].items():
            split.setdefault(part, []).extend(values[warmup:])
    print(
        f"\nGRPO step, {size} model, {spec['prompts']}x{spec['group']} completions, <= {spec['new_tokens']} new "
        f"tokens, beta {BETA}, median of steps {warmup + 1}..{steps}, {rounds} round(s); {precision}"
    )
    print("| trainer | s / step | CPU s / step | peak RSS MB |\n|---|---|---|---|")
    for name, values in rows.items():
        print(
            f"| {name} | {statistics.median(v[0] for v in values):.3f} | "
            f"{statistics.median(v[2] for v in values):.3f} | {statistics.median(v[1] for v in values):.0f} |"
        )
    parts = {part: statistics.median(values) for part, values in split.items()}
    print("rlx step split (median s): " + ", ".join(f"{part} {value:.3f}" for part, value in parts.items()))
    if not ratios:
        print(f"rlx / trl ({size}): not measured, TRL is not installed (pip install trl)", flush=True)
        return
    print(
        f"rlx / trl ({size}): step time {statistics.median(r[0] for r in ratios):.3f}x, "
        f"peak RSS {statistics.median(r[1] for r in ratios):.3f}x "
        f"(CPU time per step {statistics.median(r[2] for r in ratios):.3f}x); step time per round: "
        + ", ".join(f"{r[0]:.3f}x" for r in ratios),
        flush=True,
    )


def quiet_lightning() -> None:
    import logging

    for name in ("lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.WARNING)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--steps", type=int, help="steps per run (default: 30 tiny, 6 large)")
    parser.add_argument("--warmup", type=int, help="leading steps left out of the median (default: 5 tiny, 1 large)")
    parser.add_argument("--rounds", type=int, default=1, help="alternating rlx/TRL runs per size")
    parser.add_argument("--worker", choices=["rlx", "trl"], help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args()
    quiet_lightning()
    if args.worker:
        size = args.sizes[0]
        run = run_rlx if args.worker == "rlx" else run_trl
        print(json.dumps(run(size, args.steps, Path(args.model))))
        return
    for size in args.sizes:
        spec = SIZES[size]
        bench_size(
            size, args.steps or spec["steps"], spec["warmup"] if args.warmup is None else args.warmup, args.rounds
        )


if __name__ == "__main__":
    main()
