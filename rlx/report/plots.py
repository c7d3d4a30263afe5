"""PNG curves vs RL step: one run's reward / KL / length, or a sweep's (one line per run, or one mean line
with a ±1 std band per configuration when seeds are swept). matplotlib is imported only when drawing."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from rlx.report.aggregate import Config
from rlx.report.runs import Run

# (file name, title, [(metric in metrics.csv, label suffix, line style)])
CURVES = [
    ("reward.png", "reward (mean over completions)", [("reward/mean", "", "-")]),
    ("kl.png", "KL to the reference (loss/kl)", [("loss/kl", "", "-")]),
    ("length.png", "response length (tokens)", [("rollout/length_mean", "", "-")]),
]
# A single run has room for more lines per panel.
RUN_CURVES = [
    (
        "reward.png",
        "reward",
        [("reward/mean", "reward/mean", "-"), ("val/accuracy", "held-out accuracy (greedy)", "-")],
    ),
    (
        "kl.png",
        "KL",
        [
            ("loss/kl", "to the reference (loss/kl)", "-"),
            ("loss/approx_kl", "to the sampling policy (loss/approx_kl)", "--"),
        ],
    ),
    (
        "length.png",
        "response length (tokens)",
        [
            ("rollout/length_mean", "all", "-"),
            ("rollout/length_pass", "passed", "--"),
            ("rollout/length_fail", "failed", ":"),
        ],
    ),
]


def smooth(values: list[float]) -> list[float]:
    """Trailing moving average over a tenth of the curve (at least 2 points): the trend of a noisy RL curve."""
    k = max(2, len(values) // 10)
    return [statistics.fmean(values[max(0, j - k + 1) : j + 1]) for j in range(len(values))]


def _pyplot():
    # deferred (start-up time): matplotlib loads only when a plot is drawn
    import matplotlib

    matplotlib.use("Agg")
    # after matplotlib.use("Agg"): pyplot picks its backend when first imported
    import matplotlib.pyplot as plt

    return plt


def _axes(plt, title: str, metric: str):
    # deferred (start-up time): matplotlib loads only when a plot is drawn
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=110)
    ax.set_title(title)
    ax.set_xlabel("RL step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    return fig, ax


def _line(ax, points, label, style, color) -> None:
    steps, values = zip(*points, strict=True)
    if len(values) >= 20:  # raw curve faint, moving average on top
        ax.plot(steps, values, style, color=color, alpha=0.25, linewidth=0.8)
        ax.plot(steps, smooth(list(values)), style, color=color, label=label, linewidth=1.6)
    else:
        ax.plot(
            steps,
            values,
            style,
            color=color,
            label=label,
            linewidth=1.6,
            marker="o" if len(values) < 10 else None,
            markersize=3,
        )


def _finish(fig, ax, drawn: int, metric: str, path: Path) -> None:
    if drawn:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    else:
        why = " (β = 0 runs load no reference and log no KL)" if "kl" in metric else ""
        ax.text(0.5, 0.5, f"no run logged {metric}{why}", ha="center", va="center", transform=ax.transAxes)
    fig.savefig(path, bbox_inches="tight")
    fig.clf()


def plot_run(run: Run, out_dir: Path) -> list[str]:
    """reward.png, kl.png and length.png of one run into `out_dir`. Returns the file names."""
    plt = _pyplot()
    colors = plt.get_cmap("tab10")
    written = []
    for filename, title, metrics in RUN_CURVES:
        fig, ax = _axes(plt, title, " / ".join(m for m, _, _ in metrics))
        drawn = 0
        for i, (metric, label, style) in enumerate(metrics):
            if run.metrics.get(metric):
                _line(ax, run.metrics[metric], label, style, colors(i))
                drawn += 1
        _finish(fig, ax, drawn, metrics[0][0], out_dir / filename)
        plt.close(fig)
        written.append(filename)
    return written


def plot_sweep(sweep_dir: Path, runs: list[Run], labels: list[str]) -> list[str]:
    """One PNG per curve, one line per run (labelled, failed runs dashed). Returns the file names."""
    plt = _pyplot()
    colors = plt.get_cmap("tab10" if len(runs) <= 10 else "tab20")
    written = []
    for filename, title, [(metric, _, _)] in CURVES:
        fig, ax = _axes(plt, title, metric)
        drawn = 0
        for i, (run, label) in enumerate(zip(runs, labels, strict=True)):
            if run.metrics.get(metric):
                _line(ax, run.metrics[metric], label, "--" if run.status == "failed" else "-", colors(i % colors.N))
                drawn += 1
        _finish(fig, ax, drawn, metric, sweep_dir / filename)
        plt.close(fig)
        written.append(filename)
    return written


def band(runs: list[Run], metric: str) -> tuple[list[int], list[float], list[float]]:
    """Steps every run logged, the mean of the runs' smoothed curves there, and their std (0 for one run)."""
    curves = [
        dict(zip((p[0] for p in r.metrics[metric]), smooth([p[1] for p in r.metrics[metric]]), strict=True))
        for r in runs
        if r.metrics.get(metric)
    ]
    if not curves:
        return [], [], []
    steps = sorted(set.intersection(*(set(c) for c in curves)))
    means = [statistics.fmean(c[s] for c in curves) for s in steps]
    stds = [statistics.stdev([c[s] for c in curves]) if len(curves) > 1 else 0.0 for s in steps]
    return steps, means, stds


def mean_band(ax, xs, means, stds, color, label: str, style: str) -> None:
    """A mean line with a ±1 std band around it."""
    ax.plot(xs, means, style, color=color, linewidth=1.6, markersize=3, label=label)
    lows, highs = [m - s for m, s in zip(means, stds, strict=True)], [m + s for m, s in zip(means, stds, strict=True)]
    ax.fill_between(xs, lows, highs, color=color, alpha=0.2, linewidth=0)


def plot_configs(sweep_dir: Path, configs: list[Config]) -> list[str]:
    """One PNG per curve: per configuration, the mean over its seeds with a ±1 std band."""
    plt = _pyplot()
    colors = plt.get_cmap("tab10" if len(configs) <= 10 else "tab20")
    written = []
    for filename, title, [(metric, _, _)] in CURVES:
        fig, ax = _axes(plt, f"{title}, mean ± std over seeds", metric)
        drawn = 0
        for i, config in enumerate(configs):
            steps, means, stds = band(config.runs, metric)
            if not steps:
                continue
            color = colors(i % colors.N)
            n = sum(1 for r in config.runs if r.metrics.get(metric))
            mean_band(ax, steps, means, stds, color, f"{config.label()} ({n} seeds)", "-")
            drawn += 1
        _finish(fig, ax, drawn, metric, sweep_dir / filename)
        plt.close(fig)
        written.append(filename)
    return written


# ------------------------------------------------------------------------- held-out curves (steps and tokens)
def held_out_curve(run: Run) -> dict[str, list[tuple[int, float]]]:
    """{"greedy accuracy" / "sampled pass@1": [(RL steps done, value), ...]} from heldout.jsonl, one point per
    evaluation (step 0: before RL). heldout.jsonl, not metrics.csv: there the before-RL row and the first
    step's share step 0."""
    rows_by_step: dict[int, list[dict]] = {}
    path = run.job_dir / "heldout.jsonl"
    if path.is_file():
        for step in sorted({r.get("step", 0) for r in _jsonl(path)}):
            rows_by_step[step] = run.held_out_rows(step)
    out: dict[str, list[tuple[int, float]]] = {"greedy accuracy": [], "sampled pass@1": []}
    for step, rows in rows_by_step.items():
        if rows:
            out["greedy accuracy"].append((step, statistics.fmean(r.get("status") == "PASS" for r in rows)))
        sampled = [r["sampled_passed"] / r["sampled"] for r in rows if r.get("sampled")]
        if sampled:
            out["sampled pass@1"].append((step, statistics.fmean(sampled)))
    return out


def _jsonl(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def tokens_after(run: Run) -> dict[int, float]:
    """{k: completion tokens generated by the first k RL steps} (metrics.csv's steps 0 .. k − 1)."""
    rates = dict(run.metrics.get("rollout/tok_per_s", []))
    total, out = 0.0, {0: 0.0}
    for step, seconds in sorted(run.metrics.get("rollout/seconds", [])):
        total += rates.get(step, 0.0) * seconds
        out[step + 1] = total
    return out


def plot_held_out(sweep_dir: Path, configs: list[Config]) -> list[str]:
    """heldout.png: per configuration, held-out greedy accuracy and sampled pass@1 (rows) against RL steps and
    against tokens generated (columns): the mean over seeds with a ±1 std band, at the evaluations every seed
    ran (tokens: the seeds' mean at that evaluation)."""
    curves = [
        (c, [held_out_curve(r) for r in c.completed()], [tokens_after(r) for r in c.completed()]) for c in configs
    ]
    if not any(pts for _, cs, _ in curves for c in cs for pts in c.values()):
        return []
    plt = _pyplot()
    colors = plt.get_cmap("tab10" if len(configs) <= 10 else "tab20")
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), dpi=110, squeeze=False)
    for row, name in enumerate(("greedy accuracy", "sampled pass@1")):
        for col, xlabel in enumerate(("RL step", "tokens generated")):
            ax = axes[row][col]
            ax.set_xlabel(xlabel)
            ax.set_ylabel(f"held-out {name}")
            ax.grid(alpha=0.3)
            for i, (config, per_run, tokens) in enumerate(curves):
                series = [dict(c[name]) for c in per_run if c[name]]
                if not series:
                    continue
                steps = sorted(set.intersection(*(set(s) for s in series)))
                ys = [[s[k] for s in series] for k in steps]
                mean = [statistics.fmean(y) for y in ys]
                std = [statistics.stdev(y) if len(y) > 1 else 0.0 for y in ys]
                xs = steps if col == 0 else [statistics.fmean(t.get(k, float("nan")) for t in tokens) for k in steps]
                color = colors(i % colors.N)
                mean_band(ax, xs, mean, std, color, f"{config.label()} ({len(series)} seeds)", "-o")
    axes[0][1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.suptitle("held-out evaluation, mean ± std over seeds")
    fig.savefig(sweep_dir / "heldout.png", bbox_inches="tight")
    plt.close(fig)
    return ["heldout.png"]
