"""GRPO step time and peak memory: rlx against TRL's GRPOTrainer (the named peer), same machine, same run.

Both train the same warm-started tiny model (the embedded default's cached SFT checkpoint) on the same
arithmetic prompts with the same reward: 16 prompts × 8 completions, ≤ 4 new tokens, β = 0.04 (k3 to the
reference), one update per batch, lr 1e-4, temperature 1. TRL runs with gradient checkpointing off (its
default is on, which only costs time at this size) and its `grpo` loss type. Each trainer runs in its own
process so peak RSS is its own. The median over steps after `--warmup` is reported.

    pip install trl            # the peer; not an rlx dependency
    python bench/grpo_step.py --steps 30
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROMPTS, GROUP, NEW_TOKENS, BETA, LR = 16, 8, 4, 0.04, 1e-4


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def compose(overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return hydra_compose("config", overrides=overrides)


def model_dir() -> Path:
    """The default recipe's warm-started model (built once, cached), shared by both trainers."""
    from hydra.utils import instantiate

    from rlx.data.arithmetic import ArithmeticTask

    cfg = compose(["run_dir=/tmp/rlx-bench"])
    task: ArithmeticTask = instantiate(cfg.data)
    return instantiate(cfg.model)(task).path


def run_rlx(steps: int) -> dict:
    import lightning.pytorch as pl

    from rlx.train import build

    cfg = compose(["run_dir=/tmp/rlx-bench/rlx", f"trainer.max_steps={steps}", "trainer.val_check_interval=100000",
                   "+trainer.enable_checkpointing=false", "~trainer.callbacks", "+trainer.enable_progress_bar=false",
                   f"algo.prompts_per_step={PROMPTS}", f"algo.group_size={GROUP}", f"algo.beta={BETA}",
                   f"algo.optimizer.lr={LR}", f"data.max_new_tokens={NEW_TOKENS}", "samples_every=100000"])
    module, trainer = build(cfg)
    times: list[float] = []

    class Timer(pl.Callback):
        def on_train_batch_start(self, *args):
            self.start = time.perf_counter()

        def on_train_batch_end(self, *args):
            times.append(time.perf_counter() - self.start)

    trainer.callbacks.append(Timer())
    trainer.fit(module)
    return {"step_s": times, "peak_rss_mb": peak_rss_mb()}


def run_trl(steps: int, path: Path) -> dict:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from rlx.data.arithmetic import ArithmeticTask
    from rlx.rewards.math import MathReward

    task = ArithmeticTask(10, 99, 500, 1234, 0.7, NEW_TOKENS, warm_start_min_match=0.7, warm_start_plateau_loss=0.6)
    scorer = MathReward(strict=True)

    def reward(completions, answer, **_):
        return [v.reward for v in scorer(completions, [{"answer": a} for a in answer])]

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    data = Dataset.from_list([{"prompt": r["prompt"], "answer": r["answer"]} for r in task.train])
    times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, *args, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, *args, **kwargs):
            times.append(time.perf_counter() - self.start)

    config = GRPOConfig(
        output_dir="/tmp/rlx-bench/trl", use_cpu=True, max_steps=steps, learning_rate=LR, beta=BETA,
        num_generations=GROUP, per_device_train_batch_size=PROMPTS * GROUP, max_completion_length=NEW_TOKENS,
        temperature=1.0, top_k=0, top_p=1.0, loss_type="grpo", gradient_checkpointing=False, num_iterations=1,
        logging_steps=10_000, save_strategy="no", report_to=[], disable_tqdm=True, seed=0,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config, train_dataset=data,
                          processing_class=tokenizer, callbacks=[Timer()])
    trainer.train()
    return {"step_s": times, "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--worker", choices=["rlx", "trl"], help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "rlx":
        print(json.dumps(run_rlx(args.steps)))
        return
    if args.worker == "trl":
        print(json.dumps(run_trl(args.steps, Path(args.model))))
        return
    path = model_dir()
    results = {}
    for name in ("rlx", "trl"):
        out = subprocess.run([sys.executable, __file__, "--worker", name, "--steps", str(args.steps),
                              "--model", str(path)], cwd=REPO, capture_output=True, text=True, check=True)
        results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    rows = {n: (statistics.median(r["step_s"][args.warmup:]), r["peak_rss_mb"]) for n, r in results.items()}
    print(f"GRPO step, tiny model, {PROMPTS}x{GROUP} completions, <= {NEW_TOKENS} new tokens, beta {BETA}, "
          f"median of steps {args.warmup + 1}..{args.steps}")
    print(f"| trainer | s / step | peak RSS MB |\n|---|---|---|")
    for name, (step, rss) in rows.items():
        print(f"| {name} | {step:.3f} | {rss:.0f} |")
    print(f"rlx / trl: step time {rows['rlx'][0] / rows['trl'][0]:.2f}x, "
          f"peak RSS {rows['rlx'][1] / rows['trl'][1]:.2f}x")


if __name__ == "__main__":
    main()
