"""report.md, report.csv and one PNG per curve for a finished (or crashed) sweep.

    python -m rlx.report <sweep_dir>      # rebuild by hand, e.g. after a job was killed

Columns: the overrides that differ between runs, status, final reward, held-out accuracy before → after,
final KL, final response length, steps and wall time. "Final" is the mean of the last 10% of logged steps
(at least one) in the run's metrics.csv: a single RL step is noisy. Held-out accuracy comes from the run's
summary.json (greedy decoding on the validation split, before and after RL).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from rlx.report.runs import Run, differing_keys, load_sweep, sweep_name

# (metric in metrics.csv, file name, plot title)
CURVES = [
    ("reward/mean", "reward.png", "reward (mean over completions)"),
    ("loss/kl", "kl.png", "KL to the reference (loss/kl)"),
    ("rollout/length_mean", "length.png", "response length (tokens)"),
]


def _fmt(x: float | None, digits: int = 3, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def short(value: str) -> str:
    """An override value for display: long floats (Optuna's samples) to 4 significant digits."""
    try:
        x = float(value)
    except ValueError:
        return value
    return f"{x:.4g}" if len(value) > 8 and not value.isdigit() else value


def run_label(run: Run, keys: list[str]) -> str:
    m = run.override_map
    label = " ".join(f"{k}={short(m[k])}" for k in keys if k in m) or f"run {run.job_dir.name}"
    return label + (" (failed)" if run.status == "failed" else "")


def rows(runs: list[Run], keys: list[str]) -> list[dict]:
    out = []
    for run in runs:
        m = run.override_map
        before, after = run.held_out("before"), run.held_out("after")
        out.append({
            "run": run.job_dir.name,
            **{k: m.get(k, "") for k in keys},
            "status": run.status,
            "reward": run.final("reward/mean"),
            "acc_before": before,
            "acc_after": after,
            "acc_delta": None if before is None or after is None else after - before,
            "kl": run.final("loss/kl"),
            "length": run.final("rollout/length_mean"),
            "steps": run.summary.get("steps"),
            "wall_s": run.summary.get("wall_s"),
            "error": run.error or "",
        })
    return out


def markdown(name: str, info: dict, runs: list[Run], keys: list[str], pngs: list[str]) -> str:
    table = rows(runs, keys)
    n_failed = sum(r["status"] == "failed" for r in table)
    n_done = sum(r["status"] == "completed" for r in table)
    afters = [r["acc_after"] for r in table if r["acc_after"] is not None]
    best = max(afters) if len(set(afters)) > 1 else None  # bold the best only where runs differ
    common = sorted({o for r in runs for o in r.overrides} - {o for r in runs for o in r.overrides
                                                             if o.lstrip("+").split("=", 1)[0] in keys})
    lines = [f"# Sweep `{name}`", ""]
    summary = f"{len(runs)} runs: {n_done} completed, {n_failed} failed"
    if len(table) - n_done - n_failed:
        summary += f", {len(table) - n_done - n_failed} unfinished"
    lines.append(summary + (f"; swept: {', '.join(f'`{k}`' for k in keys)}" if keys else ""))
    if common:
        lines += ["", f"Common overrides: `{' '.join(common)}`"]
    if info.get("command"):
        lines += ["", f"Command: `{info['command']}`"]
    lines.append("")
    header = ["run", *[f"`{k}`" for k in keys], "status", "reward (final)", "held-out acc before",
              "after", "Δ", "KL (final)", "length (final)", "steps", "wall s"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in table:
        after = _fmt(r["acc_after"])
        if best is not None and r["acc_after"] == best:
            after = f"**{after}**"
        status = r["status"] if r["status"] != "failed" else "**FAILED**"
        wall = "—" if r["wall_s"] is None else f"{r['wall_s']:.0f}"
        cells = [f"[{r['run']}]({r['run']}/)", *[short(str(r[k])) for k in keys], status, _fmt(r["reward"]),
                 _fmt(r["acc_before"]), after, _fmt(r["acc_delta"], signed=True), _fmt(r["kl"], 4),
                 _fmt(r["length"], 1), "—" if r["steps"] is None else str(r["steps"]), wall]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    failed = [r for r in table if r["status"] == "failed"]
    if failed:
        lines += ["", "Failed runs:", ""]
        lines += [f"- run {r['run']}: {r['error'].strip().splitlines()[-1] if r['error'].strip() else 'unknown error'}"
                  f" (log: `{r['run']}/`)" for r in failed]
    if pngs:
        lines += ["", *[f"![{Path(p).stem}]({p})" for p in pngs]]
    lines += ["", "Final = mean of the last 10% of logged steps in each run's metrics.csv; held-out accuracy "
              "before/after RL from its summary.json (greedy decoding on the validation split). "
              "Bold: best held-out accuracy after RL.", ""]
    return "\n".join(lines)


def write_csv(path: Path, runs: list[Run], keys: list[str]) -> None:
    table = rows(runs, keys)
    if not table:
        path.write_text("")
        return
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)


def plot_curves(sweep_dir: Path, runs: list[Run], keys: list[str]) -> list[str]:
    """One PNG per curve, one line per run (labelled by its differing overrides). Returns the file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    written = []
    colors = plt.get_cmap("tab10" if len(runs) <= 10 else "tab20")
    for metric, filename, title in CURVES:
        fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=110)
        drawn = 0
        for i, run in enumerate(runs):
            points = run.metrics.get(metric, [])
            if not points:
                continue
            steps, values = zip(*points)
            color = colors(i % colors.N)
            style = "--" if run.status == "failed" else "-"
            label = run_label(run, keys)
            if len(values) >= 20:  # raw curve faint, moving average on top
                k = max(2, len(values) // 10)
                smooth = [sum(values[max(0, j - k + 1): j + 1]) / len(values[max(0, j - k + 1): j + 1])
                          for j in range(len(values))]
                ax.plot(steps, values, style, color=color, alpha=0.25, linewidth=0.8)
                ax.plot(steps, smooth, style, color=color, label=label, linewidth=1.6)
            else:
                ax.plot(steps, values, style, color=color, label=label, linewidth=1.6,
                        marker="o" if len(values) < 10 else None, markersize=3)
            drawn += 1
        ax.set_title(title)
        ax.set_xlabel("RL step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
        if drawn:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        else:
            ax.text(0.5, 0.5, f"no run logged {metric}" + (" (β = 0 runs log no KL)" if metric == "loss/kl"
                                                          else ""),
                    ha="center", va="center", transform=ax.transAxes)
        fig.savefig(sweep_dir / filename, bbox_inches="tight")
        plt.close(fig)
        written.append(filename)
    return written


def write_report(sweep_dir: str | Path) -> Path:
    """Writes report.md, report.csv and the PNGs into `sweep_dir`; returns report.md's path."""
    sweep_dir = Path(sweep_dir)
    info, runs = load_sweep(sweep_dir)
    keys = differing_keys(runs, info.get("swept", []))
    name = info.get("name") or sweep_name(sweep_dir)
    pngs = plot_curves(sweep_dir, runs, keys) if runs else []
    write_csv(sweep_dir / "report.csv", runs, keys)
    path = sweep_dir / "report.md"
    path.write_text(markdown(name, info, runs, keys, pngs))
    return path
