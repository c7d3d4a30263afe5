"""How rlx's GRPO step time grows with the group size G, the completion length and the model width: a table,
a log-log PNG, and the fitted exponent of each sweep (step time ∝ x^k).

The work of a step is linear in G (G completions per prompt) and in the completion length (at these lengths
attention is a small share), and quadratic in the width (parameters ∝ width²). A hidden quadratic cost in G
or length (re-concatenating the KV cache every step, a [N, N] pairwise op, padding every row to the longest of
the batch twice over) would show as k ≈ 2 where k ≈ 1 is expected.

Each point is a short rlx run (`--steps`, median after the first; the process's CPU time per step, which a
shared machine's load distorts far less than wall time, next to wall time) on a random-init Qwen2 built by
rlx.models.synthetic (a 2k BPE vocabulary, 4 layers; width 256 unless swept), on arithmetic prompts, 4 prompts
per step, β = 0.04, one update per batch. A random model never samples eos, so every completion has exactly
the swept length.

    OMP_NUM_THREADS=2 python bench/scaling.py            # writes docs/img/scaling.png
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _models import compose, synthetic_model_dir

BASE = {"group": 8, "length": 32, "width": 256}
SWEEPS = {"group": [4, 8, 16, 32], "length": [16, 32, 64, 128], "width": [128, 256, 512, 1024]}
EXPECTED = {"group": 1.0, "length": 1.0, "width": 2.0}


def model_shape(width: int) -> dict:
    return {"arch": "qwen2", "hidden": width, "layers": 4, "heads": max(2, width // 32), "vocab": 2000,
            "corpus_lines": 5000}


def step_time(group: int, length: int, width: int, steps: int, prompts: int) -> dict:
    import lightning.pytorch as pl

    import rlx.module
    from rlx.train import build

    path = synthetic_model_dir(model_shape(width))
    run_dir = tempfile.mkdtemp(prefix="rlx-scaling-")  # its own: concurrent benches never share a metrics.csv
    cfg = compose(["model=hf", f"model.name_or_path={path}", f"run_dir={run_dir}",
                   f"trainer.max_steps={steps}", "trainer.val_check_interval=100000",
                   "+trainer.enable_checkpointing=false", "~trainer.callbacks", "trainer.enable_progress_bar=false",
                   f"algo.prompts_per_step={prompts}", f"algo.group_size={group}", "algo.beta=0.04",
                   "algo.update_epochs=1", "algo.minibatches=1", f"data.max_new_tokens={length}",
                   "samples_every=100000"])
    module, trainer = build(cfg)
    times, cpu, generate = [], [], []
    collect = rlx.module.collect

    def collect_timed(*args, **kwargs):
        batch, stats = collect(*args, **kwargs)
        generate.append(stats.generate_seconds)
        return batch, stats

    class Timer(pl.Callback):
        def on_train_batch_start(self, *args):
            self.start = time.perf_counter(), time.process_time()

        def on_train_batch_end(self, *args):
            times.append(time.perf_counter() - self.start[0])
            cpu.append(time.process_time() - self.start[1])

    rlx.module.collect = collect_timed
    try:
        trainer.callbacks.append(Timer())
        trainer.fit(module)
    finally:
        rlx.module.collect = collect
    return {"step_s": statistics.median(times[1:]), "cpu_s": statistics.median(cpu[1:]),
            "generate_s": statistics.median(generate[1:])}


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares exponent k of y ∝ x^k."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def quiet_lightning() -> None:
    import logging

    for name in ("lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.WARNING)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--sweeps", nargs="+", choices=list(SWEEPS), default=list(SWEEPS))
    parser.add_argument("--points", type=int, default=4, help="the first this many values of each sweep")
    parser.add_argument("--png", default=str(Path(__file__).resolve().parents[1] / "docs" / "img" / "scaling.png"))
    args = parser.parse_args()
    quiet_lightning()
    results: dict[str, list[tuple[int, dict]]] = {}
    print(f"rlx GRPO step time, {args.prompts} prompts per step, median of steps 2..{args.steps}; "
          f"fixed: G {BASE['group']}, length {BASE['length']}, width {BASE['width']}")
    print("| sweep | value | s / step | CPU s / step | generate s | CPU s / step per unit of the swept quantity |")
    print("|---|---|---|---|---|---|")
    for sweep in args.sweeps:
        results[sweep] = []
        for value in SWEEPS[sweep][: max(2, args.points)]:
            point = {**BASE, sweep: value}
            r = step_time(point["group"], point["length"], point["width"], args.steps, args.prompts)
            results[sweep].append((value, r))
            unit = value ** EXPECTED[sweep]
            print(f"| {sweep} | {value} | {r['step_s']:.3f} | {r['cpu_s']:.3f} | {r['generate_s']:.3f} | "
                  f"{r['cpu_s'] / unit:.5f} |", flush=True)
    for sweep, points in results.items():
        xs = [v for v, _ in points]
        k = slope(xs, [r["step_s"] for _, r in points])
        kc = slope(xs, [r["cpu_s"] for _, r in points])
        kg = slope(xs, [r["generate_s"] for _, r in points])
        print(f"{sweep}: step CPU time ∝ {sweep}^{kc:.2f}, step time ∝ {sweep}^{k:.2f}, generation ∝ "
              f"{sweep}^{kg:.2f} (the work grows as {sweep}^{EXPECTED[sweep]:.0f})")
    plot(results, args.png)
    print(f"wrote {args.png}")


def plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.6))
    axes = axes if len(results) > 1 else [axes]
    for ax, (sweep, points) in zip(axes, results.items()):
        xs = [v for v, _ in points]
        for key, label in (("cpu_s", "step, CPU"), ("step_s", "step, wall"), ("generate_s", "generate, wall")):
            ys = [r[key] for _, r in points]
            ax.loglog(xs, ys, "o-", label=f"{label} (k={slope(xs, ys):.2f})")
        ref = [points[0][1]["cpu_s"] * (x / xs[0]) ** EXPECTED[sweep] for x in xs]
        ax.loglog(xs, ref, "k--", lw=0.8, label=f"∝ {sweep}^{EXPECTED[sweep]:.0f}")
        ax.set_xlabel(sweep)
        ax.set_ylabel("seconds")
        ax.legend(fontsize=8)
        ax.set_title(f"step time vs {sweep}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
