"""claims.md: the seed's claims, each measured on the runs of `python -m rlx +sweeps=seed_claims`.

The sweep runs every arm of sweeps/claims/ (one YAML diff over grpo each) for every seed; a run's arm is its
`+sweeps/claims=<arm>` override. Each claim compares one arm with the reference arm (grpo) seed by seed — the
same seed means the same warm start, so its 0.07-0.12 swing cancels — and changes one thing (Dr. GRPO at
grpo's β changes its two normalisations, and the 2×2 separates them). Each row: the mean paired difference,
its 95% interval (rlx.report.stats: t over seeds, widened by the seeds × held-out prompts bootstrap for an
accuracy), the outcome in words, and the per-seed values and runs beneath it. A claim whose property the code
guarantees is "by construction", with the test that pins it, not a finding.

`meaningful` is the smallest difference a claim is about: 0.03 for an accuracy (three held-out points; the
evaluation's own standard error is ~0.012), one token for a length. A sweep that could not have detected that
much says "underpowered" instead of "no detectable effect".

`python -m rlx.report <sweep_dir>` rebuilds claims.md with the sweep report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rlx.cli.status import WARM_START
from rlx.report.aggregate import fmt_mean_std
from rlx.report.paired import (
    METRICS,
    Measure,
    Metric,
    compare,
    fmt_interval,
    fmt_per_seed,
    greedy_correct,
    run_measures,
    sampled_pass,
)
from rlx.report.provenance import markdown as provenance_markdown
from rlx.report.runs import Run, tail_mean
from rlx.report.stats import Interval, Outcome
from rlx.report.teacher import pass_at, teacher_pass

VARIANT_KEY = "sweeps/claims"  # the sweep's override `+sweeps/claims=<arm>`
REFERENCE = "grpo"
ACCURACY_MATTERS = 0.03
ACC, PASS1, REWARD, _KL, TOKENS = METRICS
PASS_K = 8


def growth(run: Run, metric: str) -> float | None:
    """The metric's mean over the last 10% of steps minus its mean over the first 10%."""
    points = run.metrics.get(metric, [])
    last, first = tail_mean(points), tail_mean(points[::-1])
    return None if len(points) < 2 or last is None or first is None else last - first


def config_value(run: Run, key: str):
    """A key of the run's resolved config (config.yaml), or None."""
    # deferred: omegaconf only to read a run's config.yaml; rlx.report imports no Hydra stack at top
    from omegaconf import OmegaConf

    path = run.job_dir / "config.yaml"
    return OmegaConf.select(OmegaConf.load(path), key) if path.is_file() else None


def optimiser_steps(run: Run) -> float | None:
    """RL steps × update epochs × minibatches: the optimiser steps the run took (skipped updates counted)."""
    epochs, minibatches = config_value(run, "algo.update_epochs"), config_value(run, "algo.minibatches")
    steps = run.summary.get("steps")
    return None if None in (epochs, minibatches, steps) else float(steps * epochs * minibatches)


CLIPFRAC = Metric("clip fraction, mean over steps", 4, lambda r: r.mean("loss/clipfrac"))
APPROX_KL = Metric("approx-KL to the sampling policy, mean over steps", 5, lambda r: r.mean("loss/approx_kl"))
FAIL_GROWTH = Metric(
    "growth of wrong answers' length, first → last 10% of steps (tokens)", 2, lambda r: growth(r, "rollout/length_fail")
)


@dataclass(frozen=True)
class Spec:
    claim: str
    arm: str
    metric: Metric
    direction: int  # the claimed sign of arm − reference (0: none claimed, either side reported)
    meaningful: float | None


def specs(kl_to_start: Metric) -> list[Spec]:
    acc = ACCURACY_MATTERS
    out = [
        Spec("(a) RL beats rejection-sampling fine-tuning on its own verified samples", "rft", ACC, -1, acc),
        Spec("(a) RL beats rejection-sampling fine-tuning on its own verified samples", "rft", PASS1, -1, acc),
        Spec("(b) Dr. GRPO vs GRPO at the same β = 0.04", "dr_grpo_beta", ACC, 0, acc),
        Spec("(b) std normalisation off, length normalisation on", "grpo_nostd", ACC, 0, acc),
        Spec("(b) length normalisation off, std normalisation on", "grpo_nolen", ACC, 0, acc),
        Spec("(c) Dr. GRPO grows wrong answers' length less than GRPO", "dr_grpo_beta", FAIL_GROWTH, -1, 1.0),
        Spec("(c) length normalisation off grows wrong answers' length less", "grpo_nolen", FAIL_GROWTH, -1, 1.0),
        Spec("(f) ε = 0.05 vs 0.2 at 4 minibatch steps: the clip acts more often", "grpo_eps_small", CLIPFRAC, 1, None),
        Spec("(f) ε = 0.05 vs 0.2 at 4 minibatch steps: a smaller step", "grpo_eps_small", APPROX_KL, -1, None),
        Spec("(f) ε = 0.05 vs 0.2 at 4 minibatch steps", "grpo_eps_small", ACC, 0, acc),
        Spec("(f) 1 vs 4 minibatch steps per batch (no reuse), ε = 0.2", "grpo_mb1", ACC, 0, acc),
    ]
    for arm, beta in (("grpo_beta0", 0.0), ("grpo_beta001", 0.01), ("grpo_beta016", 0.16)):
        lower = beta < 0.04
        out.append(
            Spec(
                f"(e) β = {beta} vs 0.04: {'more' if lower else 'less'} drift from the start",
                arm,
                kl_to_start,
                1 if lower else -1,
                None,
            )
        )
        out.append(Spec(f"(e) β = {beta} vs 0.04", arm, REWARD, 0, ACCURACY_MATTERS))
    return out


BY_CONSTRUCTION = [
    (
        "(b) dynamic sampling trains on no zero-variance group",
        "tests/curriculum/test_samplers.py::test_dynamic_drops_zero_variance_groups_and_oversamples",
    ),
    (
        "(d) PPO's critic (a copy of the policy) doubles the training-state bytes",
        "tests/sweeps/test_footprint.py::test_a_critic_of_the_policys_shape_doubles_the_training_state",
    ),
    (
        "(f) at 1 minibatch step per batch ε cannot act (the ratio is 1, the clip fraction 0)",
        "tests/unit/test_inert.py::test_epsilon_is_inert_with_one_update_per_batch_and_acts_with_more",
    ),
]


@dataclass
class Row:
    claim: str
    comparison: str  # "arm − reference" in words
    metric: str
    digits: int
    seeds: list[str] = field(default_factory=list)
    per_seed: list[float] = field(default_factory=list)
    interval: Interval | None = None
    outcome: Outcome | None = None
    runs: str = ""


@dataclass
class Arms:
    """The completed runs of each arm, by seed."""

    runs: dict[str, dict[str, Run]] = field(default_factory=dict)  # arm -> seed -> run

    @classmethod
    def of(cls, runs: list[Run]) -> Arms:
        out = cls()
        for run in runs:
            m = run.override_map
            if run.status == "completed" and VARIANT_KEY in m:
                out.runs.setdefault(m[VARIANT_KEY], {})[m.get("seed", "0")] = run
        return out

    def pairs(self, arm: str, reference: str = REFERENCE) -> dict[str, list[tuple[Run, Run]]]:
        """{seed: [(reference run, arm run)]} for the seeds where both completed."""
        a, b = self.runs.get(reference, {}), self.runs.get(arm, {})
        return {s: [(a[s], b[s])] for s in sorted(set(a) & set(b), key=lambda s: (len(s), s))}

    def names(self, *arms: str) -> str:
        return "; ".join(
            f"{v}: {' '.join(r.job_dir.name for _, r in sorted(self.runs.get(v, {}).items()))}" for v in arms
        )


def row(claim, comparison, metric_name, digits, pairs, direction, meaningful, runs) -> Row:
    seeds, per_seed, interval, verdict = compare(pairs, direction, meaningful)
    return Row(claim, comparison, metric_name, digits, seeds, per_seed, interval, verdict, runs)


def beats_start_and_teacher(arms: Arms, teacher: Callable[[Path], dict[str, float] | None]) -> list[Row]:
    """(a): RL against its own SFT start (the same run before RL) and against the teacher's pass@1 / pass@k."""
    runs = arms.runs.get(REFERENCE, {})
    seeds = sorted(runs, key=lambda s: (len(s), s))
    names = arms.names(REFERENCE)

    def start_vs_end(metric: Metric, per_prompt) -> dict[str, list[tuple[Measure, Measure]]]:
        key = "val/accuracy" if metric is ACC else "val/pass@1"
        return {
            s: [(Measure(runs[s].held_out("before", key), per_prompt(runs[s], 0)), Measure(*_after(runs[s], metric)))]
            for s in seeds
        }

    out = [
        row(
            "(a) RL improves on its SFT start",
            "after − before RL",
            ACC.name,
            3,
            start_vs_end(ACC, greedy_correct),
            1,
            ACCURACY_MATTERS,
            names,
        ),
        row(
            "(a) RL improves on its SFT start",
            "after − before RL",
            PASS1.name,
            3,
            start_vs_end(PASS1, sampled_pass),
            1,
            ACCURACY_MATTERS,
            names,
        ),
    ]
    rates = teacher(runs[seeds[0]].job_dir) if seeds else None
    if rates:
        bars = [("teacher's pass@1", rates, 1), (f"teacher's pass@{PASS_K}", pass_k(rates), -1)]
        for bar, per_prompt, direction in bars:
            ref = Measure(sum(per_prompt.values()) / len(per_prompt), per_prompt)
            for metric in (ACC, PASS1):
                claim = (
                    "(a) RL beats imitating the teacher" if direction > 0 else "(a) RL stays within the teacher's reach"
                )
                pairs = {s: [(ref, Measure(*_after(runs[s], metric)))] for s in seeds}
                out.append(row(claim, f"RL − {bar}", metric.name, 3, pairs, direction, ACCURACY_MATTERS, names))
    return out


def pass_k(rates: dict[str, float]) -> dict[str, float]:
    return pass_at(rates, PASS_K)


def _after(run: Run, metric: Metric) -> tuple[float | None, dict[str, float] | None]:
    return metric.value(run), metric.per_prompt(run) if metric.per_prompt is not None else None


def cached_kl(measure_kl: Callable[[Path], float | None]) -> Metric:
    """KL(π_final ‖ π_start) per run (rlx.report.kl), measured once and kept in the run's kl_to_start.json."""

    def value(run: Run) -> float | None:
        path = run.job_dir / "kl_to_start.json"
        if path.is_file():
            return json.loads(path.read_text()).get("kl")
        kl = measure_kl(run.job_dir)
        path.write_text(json.dumps({"kl": kl}))
        return kl

    return Metric("KL(π_final ‖ π_start), nats per completion", 3, value)


def evaluate(
    runs: list[Run],
    measure_kl: Callable[[Path], float | None] | None = None,
    teacher: Callable[[Path], dict[str, float] | None] | None = None,
) -> list[Row]:
    """Every claim's row: (a) first, then the arms' comparisons, then the properties held by construction."""
    # deferred: rlx.report.kl imports the model stack; only claims sweeps need it
    from rlx.report.kl import kl_to_start

    arms = Arms.of(runs)
    rows = beats_start_and_teacher(arms, teacher or teacher_pass)
    for spec in specs(cached_kl(measure_kl or kl_to_start)):
        pairs = run_measures(arms.pairs(spec.arm), spec.metric)
        comparison = f"{spec.arm} − {REFERENCE}"
        rows.append(
            row(
                spec.claim,
                comparison,
                spec.metric.name,
                spec.metric.digits,
                pairs,
                spec.direction,
                spec.meaningful,
                arms.names(REFERENCE, spec.arm),
            )
        )
    for claim, test in BY_CONSTRUCTION:
        rows.append(Row(claim, "—", "—", 3, outcome=Outcome("by construction", f"pinned by `{test}`")))
    return rows


def makespan(seconds: list[float], workers: int) -> float:
    """The wall time of jobs taking `seconds` each (in launch order) on `workers` idle workers that each take
    the next job when free (joblib's dispatch): a job's CPU seconds at one thread ≈ its wall time alone on a
    core, so this is the sweep's wall time on `workers` idle cores."""
    free = [0.0] * workers
    for s in seconds:
        free[free.index(min(free))] += s
    return max(free, default=0.0)


def cost_table(arms: Arms) -> list[str]:
    lines = ["| arm | seeds | tokens generated | optimiser steps | CPU s |", "|---|---|---|---|---|"]
    for arm, by_seed in arms.runs.items():
        rs = list(by_seed.values())
        lines.append(
            f"| {arm} | {len(rs)} | {fmt_mean_std((r.tokens_generated() for r in rs), 0)} | "
            f"{fmt_mean_std((optimiser_steps(r) for r in rs), 0)} | {fmt_mean_std((r.cpu_s for r in rs), 0)} |"
        )
    return lines


def budget(runs: list[Run]) -> str:
    """The sweep's CPU time and its makespan on 2 idle cores, and again without the warm starts it built (a
    later sweep of the same seeds finds them cached)."""
    cpu = [r.cpu_s for r in runs if r.cpu_s is not None]
    if not cpu or len(cpu) < len(runs):
        return "CPU seconds missing for some runs: no budget estimate"
    line = (
        f"{sum(cpu) / 60:.1f} CPU-minutes: about {makespan(cpu, 2) / 60:.0f} min on 2 idle cores, two one-thread "
        "jobs at a time (an estimate from each job's CPU seconds, not a wall-clock measurement)"
    )
    built = [r.cpu_s_by_phase.get(WARM_START, 0.0) for r in runs]
    if any(built):
        cached = [c - w for c, w in zip(cpu, built, strict=True)]
        line += (
            f"; {sum(built) / 60:.1f} of them built {sum(w > 0 for w in built)} warm starts, which the cache keeps: "
            f"with them cached, about {makespan(cached, 2) / 60:.0f} min"
        )
    elif not all(r.cpu_s_by_phase for r in runs):
        line += "; the warm starts' share is not recorded (runs from before status.json split CPU by phase)"
    return line


def markdown(rows: list[Row], info: dict, runs: list[Run]) -> str:
    seeds = sorted({r.override_map.get("seed", "0") for r in runs}, key=lambda s: (len(s), s))
    lines = [
        "# The seed's claims",
        "",
        f"{len(runs)} runs, seeds {', '.join(seeds)}; {budget(runs)}.",
        "",
        "| claim | comparison | metric | difference [95% interval] | seeds | prompts | outcome |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        prompts = r.interval.n_prompts if r.interval is not None and r.interval.n_prompts else "—"
        verdict = f"**{r.outcome.word}** ({r.outcome.detail})" if r.outcome else "—"
        cells = [
            r.claim,
            r.comparison,
            r.metric,
            fmt_interval(r.interval, r.digits),
            str(len(r.seeds)),
            str(prompts),
            verdict,
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        if r.seeds:
            under = f"per seed {fmt_per_seed(r.seeds, r.per_seed, r.digits)}; runs {r.runs}"
            lines.append("| ↳ | " + under.replace("|", "\\|") + " | | | | | |")
    lines += [
        "",
        "Difference: arm − reference, mean over the paired seeds. Interval: 95%, Student's t over seeds, widened to "
        "the seeds × held-out prompts bootstrap for accuracies (rlx/report/stats.py). **holds**: the interval "
        "excludes 0 on the claimed side (no side claimed: either, named); **reversed**: on the other side; **no "
        "detectable effect**: it contains 0, and the sweep would have detected the effect given with 80% power; "
        f"**underpowered**: fewer than 5 seeds, or it could not detect the smallest effect that matters "
        f"({ACCURACY_MATTERS} for an accuracy, 1 token for a length); **by construction**: the code guarantees it, "
        "and the named test pins it.",
        "",
        "Not measured by this sweep: PPO's critic cost as one step's peak memory (bench/critic_memory.py, fresh "
        "processes, matched minibatching: bench/RESULTS-critic_memory.md).",
        "",
        "## Cost per arm (mean ± std over seeds)",
        "",
        *cost_table(Arms.of(runs)),
        "",
        *provenance_markdown(info, [r.wandb_url for r in runs if r.wandb_url]),
        "",
    ]
    return "\n".join(lines)


def write_claims(sweep_dir: Path, runs: list[Run], info: dict) -> Path | None:
    """claims.md in `sweep_dir` when its runs are claim arms (`+sweeps/claims=...`); else nothing."""
    if not any(VARIANT_KEY in r.override_map for r in runs):
        return None
    path = Path(sweep_dir) / "claims.md"
    path.write_text(markdown(evaluate(runs), info, runs))
    return path
