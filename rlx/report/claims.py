"""claims.md: the seed's claims, each measured on the runs of `python -m rlx +sweeps=seed_claims`.

The sweep runs every variant of sweeps/claims/ (one YAML diff each) for every seed; a run's variant is its
`+sweeps/claims=<variant>` override. Each claim compares variants seed by seed (same seed, same warm start)
and gets a verdict by one rule, stated in claims.md:

    For each seed, d = the measured difference in the claim's direction (or whether a ratio is in its range).
    holds          every seed's d exceeds the claim's tolerance τ
    does not hold  no seed's d exceeds τ
    inconclusive   the seeds disagree, or fewer than two seeds have the runs the claim needs

A claim that does not hold is reported as such, with its numbers: nothing here is tuned until it holds.
`python -m rlx.report <sweep_dir>` rebuilds claims.md with the sweep report.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rlx.report.aggregate import fmt_mean_std
from rlx.report.runs import Run, tail_mean

VARIANT_KEY = "sweeps/claims"  # the sweep's override `+sweeps/claims=<variant>`
ALGOS = ["ppo", "grpo", "dr_grpo", "dapo", "reinforce"]
RULE = (
    "For each seed, d is the measured difference in the claim's direction (or whether a ratio lies in the "
    "claim's range). **holds**: every seed's d exceeds the tolerance τ; **does not hold**: no seed's does; "
    "**inconclusive**: the seeds disagree, or fewer than two seeds have the runs the claim needs."
)


@dataclass
class Row:
    claim: str
    measured: str
    runs: str
    verdict: str
    note: str = ""


@dataclass
class Seeds:
    """The completed runs of each variant, by seed."""

    runs: dict[str, dict[str, Run]] = field(default_factory=dict)  # variant -> seed -> run

    @classmethod
    def of(cls, runs: list[Run]) -> Seeds:
        out = cls()
        for run in runs:
            m = run.override_map
            if run.status == "completed" and VARIANT_KEY in m:
                out.runs.setdefault(m[VARIANT_KEY], {})[m.get("seed", "0")] = run
        return out

    def paired(self, *variants: str) -> list[tuple[str, list[Run]]]:
        """(seed, [run of each variant]) for the seeds where every variant completed."""
        seeds = set.intersection(*(set(self.runs.get(v, {})) for v in variants))
        return [(s, [self.runs[v][s] for v in variants]) for s in sorted(seeds, key=str)]

    def names(self, *variants: str) -> str:
        return ", ".join(
            f"{v}: {' '.join(r.job_dir.name for _, r in sorted(self.runs.get(v, {}).items()))}" for v in variants
        )


def verdict(ds: list[bool | None]) -> str:
    """ds[i]: whether seed i shows the claim beyond its tolerance (None: not measurable)."""
    known = [d for d in ds if d is not None]
    if len(known) < 2:
        return "inconclusive"
    return "holds" if all(known) else "does not hold" if not any(known) else "inconclusive"


def growth(run: Run, metric: str) -> float | None:
    """The metric's mean over the last 10% of steps minus its mean over the first 10%."""
    points = run.metrics.get(metric, [])
    last, first = tail_mean(points), tail_mean(points[::-1])
    return None if len(points) < 2 or last is None or first is None else last - first


def config_value(run: Run, key: str):
    """A key of the run's resolved config (config.yaml), or None."""
    from omegaconf import OmegaConf

    path = run.job_dir / "config.yaml"
    return OmegaConf.select(OmegaConf.load(path), key) if path.is_file() else None


# ------------------------------------------------------------------------------------------------ claims
def beats_imitation(s: Seeds) -> list[Row]:
    rows, tol = [], 0.02
    for algo in ALGOS:
        pairs = [(r.held_out("before"), r.held_out("after")) for _, [r] in s.paired(algo)]
        ds = [a - b > tol if a is not None and b is not None else None for b, a in pairs]
        rows.append(
            Row(
                f"(a) {algo} beats the SFT imitation ceiling on held-out data (τ = {tol})",
                f"held-out acc {fmt_mean_std(b for b, _ in pairs)} → {fmt_mean_std(a for _, a in pairs)}",
                s.names(algo),
                verdict(ds),
            )
        )
    return rows


def ranking(s: Seeds) -> str:
    """Whether the algorithms' gap exceeds the seed-to-seed spread (part of the benchmark's promise)."""
    stats = []
    for algo in ALGOS:
        after = [a for r in s.runs.get(algo, {}).values() if (a := r.held_out("after")) is not None]
        if len(after) >= 2:
            stats.append((statistics.fmean(after), statistics.stdev(after), algo))
    if len(stats) < 2:
        return "Too few algorithms with two seeds to rank them."
    stats.sort(reverse=True)
    gap, spread = stats[0][0] - stats[-1][0], max(sd for _, sd, _ in stats)
    order = " > ".join(f"{a} {m:.3f} ± {sd:.3f}" for m, sd, a in stats)
    return (
        f"Held-out accuracy after RL: {order}. The gap between the best and the worst ({gap:.3f}) "
        f"{'exceeds' if gap > spread else 'does not exceed'} the largest seed-to-seed std ({spread:.3f})."
    )


def zero_variance(s: Seeds) -> list[Row]:
    tol = 0.02
    pairs = s.paired("grpo", "grpo_band")
    uni = [r.mean("reward/zero_std_frac") for _, [r, _] in pairs]
    band = [r.mean("reward/zero_std_frac") for _, [_, r] in pairs]
    seen = [r.metrics["curriculum/seen_frac"][-1][1] for _, [_, r] in pairs if r.metrics.get("curriculum/seen_frac")]
    ds = [u - b > tol if u is not None and b is not None else None for u, b in zip(uni, band, strict=True)]
    rows = [
        Row(
            f"(b) learnable_band lowers the share of generated zero-variance groups (τ = {tol})",
            f"share of generated groups with equal rewards: uniform {fmt_mean_std(uni)}, learnable_band "
            f"{fmt_mean_std(band)}",
            s.names("grpo", "grpo_band"),
            verdict(ds),
            f"By the last step the band had a pass-rate estimate for {fmt_mean_std(seen, 2)} of the training "
            "prompts (unseen ones carry its prior, inside the band)."
            if seen
            else "",
        )
    ]
    pairs = s.paired("grpo", "grpo_dynamic")
    trained = [r.mean("reward/zero_std_frac_batch") for _, [_, r] in pairs]
    worst = [max((v for _, v in r.metrics.get("reward/zero_std_frac_batch", [])), default=None) for _, [_, r] in pairs]
    cost = [(d.total("curriculum/groups") or 0) / t for _, [u, d] in pairs if (t := u.total("curriculum/groups"))]
    seconds = [(d.total("rollout/seconds") or 0) / t for _, [u, d] in pairs if (t := u.total("rollout/seconds"))]
    ds = [w == 0 if w is not None else None for w in worst]
    rows.append(
        Row(
            "(b) dynamic sampling trains on no zero-variance group (τ: exactly none, in every step)",
            f"share of trained-on groups with equal rewards: {fmt_mean_std(trained)} (worst step "
            f"{fmt_mean_std(worst)}); cost: {fmt_mean_std(cost, 2)}× the groups generated and "
            f"{fmt_mean_std(seconds, 2)}× the generation time of uniform sampling",
            s.names("grpo", "grpo_dynamic"),
            verdict(ds),
        )
    )
    return rows


def length_bias(s: Seeds) -> list[Row]:
    tol = 0.25
    pairs = s.paired("grpo", "dr_grpo")
    g = [growth(r, "rollout/length_fail") for _, [r, _] in pairs]
    d = [growth(r, "rollout/length_fail") for _, [_, r] in pairs]
    ds = [a - b > tol if a is not None and b is not None else None for a, b in zip(g, d, strict=True)]
    return [
        Row(
            f"(c) Dr. GRPO grows the length of wrong answers less than GRPO (τ = {tol} tokens)",
            f"growth of the mean length of failed completions, first → last 10% of steps: GRPO "
            f"{fmt_mean_std(g, 2, signed=True)}, Dr. GRPO {fmt_mean_std(d, 2, signed=True)} tokens",
            s.names("grpo", "dr_grpo"),
            verdict(ds),
        )
    ]


def critic_memory(s: Seeds) -> list[Row]:
    lo, hi = 1.5, 2.5
    pairs = s.paired("ppo", "reinforce")
    state = [
        p.footprint["state_bytes"]["total"] / r.footprint["state_bytes"]["total"]
        for _, [p, r] in pairs
        if p.footprint and r.footprint
    ]
    peak = [
        p.summary["peak_rss_mb"] / r.summary["peak_rss_mb"]
        for _, [p, r] in pairs
        if p.summary.get("peak_rss_mb") and r.summary.get("peak_rss_mb")
    ]
    mb = [p.footprint["state_bytes"]["total"] / 2**20 for _, [p, _] in pairs if p.footprint]
    mb_r = [r.footprint["state_bytes"]["total"] / 2**20 for _, [_, r] in pairs if r.footprint]
    runs = s.names("ppo", "reinforce")
    return [
        Row(
            f"(d) PPO's critic roughly doubles the training-state bytes (τ: ratio in [{lo}, {hi}])",
            f"weights + gradients + optimiser state: PPO {fmt_mean_std(mb, 1)} MB vs REINFORCE (no critic, no "
            f"reference) {fmt_mean_std(mb_r, 1)} MB: {fmt_mean_std(state, 2)}×",
            runs,
            verdict([lo <= x <= hi for x in state]),
        ),
        Row(
            f"(d) PPO's critic roughly doubles peak memory (τ: ratio in [{lo}, {hi}])",
            f"peak memory (summary.json peak_rss_mb): PPO / REINFORCE = {fmt_mean_std(peak, 2)}×",
            runs,
            verdict([lo <= x <= hi for x in peak]),
            "On a CPU this is the process's peak resident memory, mostly torch itself at this model size."
            if peak
            else "",
        ),
    ]


def kl_to_reference(s: Seeds, measure: Callable[[Path], float | None]) -> list[Row]:
    comparable = 0.05
    pairs = s.paired("grpo", "grpo_beta0")
    kl_b = [measure(r.job_dir) for _, [r, _] in pairs]
    kl_0 = [measure(r.job_dir) for _, [_, r] in pairs]
    acc_b = [r.held_out("after") for _, [r, _] in pairs]
    acc_0 = [r.held_out("after") for _, [_, r] in pairs]
    ds: list[bool | None] = []
    for kb, k0, ab, a0 in zip(kl_b, kl_0, acc_b, acc_0, strict=True):
        if kb is None or k0 is None or ab is None or a0 is None:
            ds.append(None)
        elif abs(ab - a0) > comparable:
            ds.append(None)  # not at comparable reward: this seed cannot decide the claim
        else:
            ds.append(k0 - kb > 0.1 * max(k0, 1e-9))
    return [
        Row(
            f"(e) β > 0 keeps the KL to the reference lower than β = 0 at comparable reward (τ: 10% lower, "
            f"held-out accuracies within {comparable})",
            f"KL(π_final ‖ π_start), nats per completion: β = 0.04 {fmt_mean_std(kl_b)}, β = 0 "
            f"{fmt_mean_std(kl_0)}; held-out acc {fmt_mean_std(acc_b)} vs {fmt_mean_std(acc_0)}",
            s.names("grpo", "grpo_beta0"),
            verdict(ds),
            "Measured after training on 256 held-out prompts, completions sampled from the final policy "
            "(rlx.report.kl), the same way for both.",
        )
    ]


def clip_range(s: Seeds) -> list[Row]:
    pairs = s.paired("grpo_eps_small", "grpo")
    small = [r.mean("loss/approx_kl") for _, [r, _] in pairs]
    large = [r.mean("loss/approx_kl") for _, [_, r] in pairs]
    eps = [(config_value(a, "algo.epsilon"), config_value(b, "algo.epsilon")) for _, [a, b] in pairs[:1]]
    names = f"ε = {eps[0][0]}" if eps else "small ε", f"ε = {eps[0][1]}" if eps else "large ε"
    ds = [
        (lg - sm) > 0.05 * max(lg, 1e-12) if sm is not None and lg is not None else None
        for sm, lg in zip(small, large, strict=True)
    ]
    still = all(v == 0 for v in small + large if v is not None) and any(v is not None for v in small + large)
    return [
        Row(
            "(f) a small ε keeps the per-step approx-KL to the sampling policy below a large ε's (τ: 5% lower)",
            f"loss/approx_kl, mean over steps: {names[0]} {fmt_mean_std(small, 5)}, {names[1]} "
            f"{fmt_mean_std(large, 5)}",
            s.names("grpo_eps_small", "grpo"),
            verdict(ds),
            "The ratio never left 1 (one optimiser step per batch): no clip range could act." if still else "",
        )
    ]


def evaluate(runs: list[Run], measure_kl: Callable[[Path], float | None] | None = None) -> tuple[list[Row], str]:
    """Every claim's row, and the algorithms' ranking sentence."""
    if measure_kl is None:
        from rlx.report.kl import kl_to_start

        measure_kl = kl_to_start
    s = Seeds.of(runs)
    rows = [
        *beats_imitation(s),
        *zero_variance(s),
        *length_bias(s),
        *critic_memory(s),
        *kl_to_reference(s, measure_kl),
        *clip_range(s),
    ]
    return rows, ranking(s)


def makespan(seconds: list[float], workers: int) -> float:
    """The wall time of jobs taking `seconds` each (in launch order) on `workers` idle workers that each take
    the next job when free (joblib's dispatch): a job's CPU seconds at one thread ≈ its wall time alone on a
    core, so this is the sweep's wall time on `workers` idle cores."""
    free = [0.0] * workers
    for s in seconds:
        free[free.index(min(free))] += s
    return max(free, default=0.0)


def markdown(rows: list[Row], ranking_line: str, info: dict, runs: list[Run]) -> str:
    wall = sum(r.summary.get("wall_s") or 0 for r in runs)
    cpu = [r.cpu_s for r in runs if r.cpu_s is not None]
    budget = (
        f"; {sum(cpu) / 60:.1f} CPU-minutes: about {makespan(cpu, 2) / 60:.0f} min on 2 idle cores, two "
        "one-thread jobs at a time"
        if len(cpu) == len(runs)
        else ""
    )
    lines = [
        "# The seed's claims",
        "",
        f"Command: `{info.get('command', 'python -m rlx +sweeps=seed_claims')}`",
        f"(started {info.get('started', '?')}; {len(runs)} runs, {wall / 60:.1f} min of run time in all{budget})",
        "",
        "| claim | measured (mean ± std over seeds) | runs | verdict |",
        "|---|---|---|---|",
    ]
    for r in rows:
        cells = [r.claim, r.measured + (f" — {r.note}" if r.note else ""), r.runs, f"**{r.verdict}**"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += ["", ranking_line, "", f"Verdict rule: {RULE}", ""]
    return "\n".join(lines)


def write_claims(sweep_dir: Path, runs: list[Run], info: dict) -> Path | None:
    """claims.md in `sweep_dir` when its runs are claim variants (`+sweeps/claims=...`); else nothing."""
    if not any(VARIANT_KEY in r.override_map for r in runs):
        return None
    rows, ranking_line = evaluate(runs)
    path = Path(sweep_dir) / "claims.md"
    path.write_text(markdown(rows, ranking_line, info, runs))
    return path
