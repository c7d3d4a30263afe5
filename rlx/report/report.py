"""report.md, report.csv and one PNG per curve for a finished (or crashed) sweep.

    python -m rlx.report <sweep_dir>      # rebuild by hand, e.g. after a job was killed

Columns: the overrides that differ between runs, status, final reward, held-out accuracy before → after,
final KL, final response length, steps and wall time. "Final" is the mean of the last 10% of logged steps
(at least one) in the run's metrics.csv: a single RL step is noisy. Held-out accuracy comes from the run's
summary.json (greedy decoding on the validation split, before and after RL).

When `seed` is swept, runs that differ only in their seed form one configuration: a first table gives each
configuration's mean ± std over its seeds, the plots draw its mean with a ±1 std band, and a configuration is
marked best only when its lead exceeds the seed-to-seed spread (rlx.report.aggregate.leader). A second table
pairs runs by seed and compares each value of each swept key with the key's first value, per metric: the mean
paired difference, its 95% interval and an outcome (rlx.report.paired, rlx.report.stats). A swept key that
could not change anything in a run (rlx.inert, the run's inert.json) is marked inert, with the reason.
A claims sweep (`+sweeps=seed_claims`) also gets claims.md (rlx.report.claims).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from rlx.report.aggregate import fmt_mean_std, group_by_config, leader, seeds_swept
from rlx.report.claims import write_claims
from rlx.report.paired import METRICS, compare_sweep
from rlx.report.paired import markdown as paired_markdown
from rlx.report.plots import plot_configs, plot_held_out, plot_sweep
from rlx.report.provenance import markdown as provenance_markdown
from rlx.report.robust import markdown as robust_markdown
from rlx.report.run import write_run_report
from rlx.report.runs import Run, differing_keys, is_sweep_dir, load_sweep, sweep_name

FOOTNOTE = (
    "Final = mean of the last 10% of logged steps in each run's metrics.csv; held-out accuracy before/after "
    "RL from its summary.json (greedy decoding on the validation split)."
)


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
        out.append(
            {
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
                "tokens": run.tokens_generated(),
                "cpu_s": run.cpu_s,
                "wall_s": run.summary.get("wall_s"),
                "inert": " ".join(k for k in keys if k in run.inert),
                "error": run.error or "",
            }
        )
    return out


def inert_keys(runs: list[Run], keys: list[str]) -> dict[str, tuple[list[str], str]]:
    """{swept key: (names of the runs where it was inert, the first reason)} for keys inert in some run."""
    found: dict[str, tuple[list[str], str]] = {}
    for key in keys:
        where = [r for r in runs if key in r.inert]
        if where:
            found[key] = ([r.job_dir.name for r in where], where[0].inert[key])
    return found


def _table(header: list[str], body: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |" for cells in body]


def config_table(runs: list[Run], keys: list[str]) -> tuple[list[str], str]:
    """The per-configuration table (mean ± std over seeds) and the sentence saying which one is best, if any."""
    configs = group_by_config(runs, keys)
    lead = leader(configs, lambda r: r.held_out("after"))
    header = [
        *[f"`{k}`" for k in configs[0].values],
        "seeds",
        "completed",
        "reward (final)",
        "held-out acc before",
        "after",
        "Δ",
        "KL (final)",
        "length (final)",
        "tokens generated",
        "CPU s",
        "wall s",
    ]
    body = []
    for i, c in enumerate(configs):
        done = c.completed()
        after = fmt_mean_std(r.held_out("after") for r in done)
        delta = [
            a - b for r in done if (a := r.held_out("after")) is not None and (b := r.held_out("before")) is not None
        ]
        body.append(
            [
                *[short(v) for v in c.values.values()],
                ", ".join(c.seeds()),
                f"{len(done)}/{len(c.runs)}",
                fmt_mean_std(r.final("reward/mean") for r in done),
                fmt_mean_std(r.held_out("before") for r in done),
                f"**{after}**" if i == lead.index else after,
                fmt_mean_std(delta, signed=True),
                fmt_mean_std((r.final("loss/kl") for r in done), 4),
                fmt_mean_std((r.final("rollout/length_mean") for r in done), 1),
                fmt_mean_std((r.tokens_generated() for r in done), 0),
                fmt_mean_std((r.cpu_s for r in done), 0),
                fmt_mean_std((r.summary.get("wall_s") for r in done), 0),
            ]
        )
    return _table(header, body), lead.note


def markdown(name: str, info: dict, runs: list[Run], keys: list[str], pngs: list[str]) -> str:
    table = rows(runs, keys)
    n_failed = sum(r["status"] == "failed" for r in table)
    n_done = sum(r["status"] == "completed" for r in table)
    by_seed = seeds_swept(runs, keys)
    afters = [r["acc_after"] for r in table if r["acc_after"] is not None]
    best = max(afters) if not by_seed and len(set(afters)) > 1 else None  # one seed: bold the best run
    inert = inert_keys(runs, keys)
    common = sorted(
        {o for r in runs for o in r.overrides}
        - {o for r in runs for o in r.overrides if o.lstrip("+").split("=", 1)[0] in keys}
    )
    lines = [f"# Sweep `{name}`", ""]
    summary = f"{len(runs)} runs: {n_done} completed, {n_failed} failed"
    if len(table) - n_done - n_failed:
        summary += f", {len(table) - n_done - n_failed} unfinished"
    lines.append(summary + (f"; swept: {', '.join(f'`{k}`' for k in keys)}" if keys else ""))
    for key, (where, why) in inert.items():
        scope = "in every run" if len(where) == len(runs) else f"in runs {', '.join(where)}"
        lines += ["", f"**Inert**: `{key}` could not change anything {scope}: {why}"]
    if common:
        lines += ["", f"Common overrides: `{' '.join(common)}`"]
    if info.get("command"):
        lines += ["", f"Command: `{info['command']}`"]
    lead_note = None
    if by_seed:
        config_lines, lead_note = config_table(runs, keys)
        lines += [
            "",
            "## Per configuration (mean ± std over seeds)",
            "",
            *config_lines,
            "",
            lead_note.capitalize() if lead_note[:1].islower() else lead_note,
            "",
        ]
        paired = paired_markdown(compare_sweep(runs, keys))
        robust = robust_markdown(runs, keys, METRICS[:3])  # the scores: accuracy, sampled pass@1, reward
        lines += [*paired, *([""] if paired else []), *robust, *([""] if robust else []), "## Per run"]
    lines.append("")
    header = [
        "run",
        *[f"`{k}`" for k in keys],
        "status",
        "reward (final)",
        "held-out acc before",
        "after",
        "Δ",
        "KL (final)",
        "length (final)",
        "steps",
        "tokens generated",
        "CPU s",
        "wall s",
    ]
    body = []
    for r in table:
        after = _fmt(r["acc_after"])
        if best is not None and r["acc_after"] == best:
            after = f"**{after}**"
        status = r["status"] if r["status"] != "failed" else "**FAILED**"
        wall = "—" if r["wall_s"] is None else f"{r['wall_s']:.0f}"
        marked = [
            short(str(r[k])) + (" (inert)" if k in r["inert"].split() and len(inert[k][0]) < len(runs) else "")
            for k in keys
        ]
        body.append(
            [
                f"[{r['run']}]({r['run']}/)",
                *marked,
                status,
                _fmt(r["reward"]),
                _fmt(r["acc_before"]),
                after,
                _fmt(r["acc_delta"], signed=True),
                _fmt(r["kl"], 4),
                _fmt(r["length"], 1),
                "—" if r["steps"] is None else str(r["steps"]),
                _fmt(r["tokens"], 0),
                _fmt(r["cpu_s"], 0),
                wall,
            ]
        )
    lines += _table(header, body)
    failed = [r for r in table if r["status"] == "failed"]
    if failed:
        lines += ["", "Failed runs:", ""]
        lines += [
            f"- run {r['run']}: {r['error'].strip().splitlines()[-1] if r['error'].strip() else 'unknown error'}"
            f" (log: `{r['run']}/`)"
            for r in failed
        ]
    silent = [r for r in runs if r.no_learning_signal()]
    if silent:
        lines += ["", no_signal_note(silent)]
    if pngs:
        lines += ["", *[f"![{Path(p).stem}]({p})" for p in pngs]]
    lines += ["", *provenance_markdown(info, [r.wandb_url for r in runs if r.wandb_url])]
    marking = (
        "Bold: the configuration whose mean held-out accuracy after RL leads by more than the seed-to-seed "
        "spread (none when no lead is that large)."
        if by_seed
        else "Bold: best held-out accuracy after RL (one run per configuration: differences may be within "
        "seed-to-seed noise; sweep `seed` to measure it)."
    )
    lines += ["", f"{FOOTNOTE} {marking}", ""]
    return "\n".join(lines)


def no_signal_note(silent: list[Run]) -> str:
    """The report's warning for runs whose reward gave no learning signal at any step (Run.no_learning_signal)."""
    names = ", ".join(f"[{r.job_dir.name}]({r.job_dir.name}/)" for r in silent)
    return (
        f"**No learning signal** in {len(silent)} run(s): {names}. At every logged step each group's completions "
        "got the same reward (`reward/zero_std_frac` = 1), so every advantage and the policy gradient were 0: "
        "their differences from the start measure the KL term and noise, not the algorithm. Make the task "
        "neither always solved nor never solved (a stronger warm start, an easier or harder `data`, a larger "
        "`algo.group_size`, or a partial-credit reward)."
    )


def write_csv(path: Path, runs: list[Run], keys: list[str]) -> None:
    table = rows(runs, keys)
    if not table:
        path.write_text("")
        return
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)


def write_report(path: str | Path) -> Path:
    """Writes a sweep's report.md, report.csv and PNGs into the sweep directory (and claims.md for a claims
    sweep), or a single run's report.md and PNGs into the run directory. Returns report.md's path."""
    path = Path(path)

    if not is_sweep_dir(path):
        return write_run_report(path)
    info, runs = load_sweep(path)
    keys = differing_keys(runs, info.get("swept", []))
    name = info.get("name") or sweep_name(path)
    pngs: list[str] = []
    if runs:
        if seeds_swept(runs, keys):
            configs = group_by_config(runs, keys)
            pngs = plot_configs(path, configs) + plot_held_out(path, configs)
        else:
            pngs = plot_sweep(path, runs, [run_label(r, keys) for r in runs])
    write_csv(path / "report.csv", runs, keys)
    report = path / "report.md"
    report.write_text(markdown(name, info, runs, keys, pngs))

    write_claims(path, runs, info)
    return report
