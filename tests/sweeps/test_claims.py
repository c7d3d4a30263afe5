"""The claims evaluator on hand-written 5-seed sweeps (no training): planted effects hold, planted reversals are
reversed, identical arms show no detectable effect, 3 seeds are underpowered, properties the code guarantees
are "by construction" with their test, and claims.md carries per-seed values, cost and provenance."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlx.report import write_report
from rlx.report.claims import evaluate, makespan
from rlx.report.runs import load_sweep
from tests.sweeps.synthetic import write_job

STEPS = 20
PROMPTS = [f"{a}+{b}+{c}=" for a in (11, 12, 13, 14) for b in (21, 22, 23, 24) for c in (31, 32, 33, 34)]  # 64
ARMS = ["grpo", "grpo_nostd", "grpo_nolen", "dr_grpo_beta", "grpo_eps_small", "grpo_mb1"]
ARMS += ["grpo_beta0", "grpo_beta001", "grpo_beta016", "rft"]
SKILL = [0.6, 0.72, 0.66, 0.8, 0.7]  # each seed's warm start lands elsewhere


def arm_job(root, n, arm, seed, rng, *, skill, fail_growth=4.0, clipfrac=0.05, approx_kl=2e-3):
    before = rng.random(len(PROMPTS)) < 0.3  # [P] the SFT start, greedy
    after = rng.random(len(PROMPTS)) < skill  # [P] after RL
    sampled_before, sampled_after = rng.binomial(4, 0.3, len(PROMPTS)), rng.binomial(4, skill, len(PROMPTS))
    heldout = [
        {"step": step, "prompt": p, "status": "PASS" if c else "FAIL", "sampled_passed": int(k), "sampled": 4}
        for step, greedy, sampled in ((0, before, sampled_before), (STEPS, after, sampled_after))
        for p, c, k in zip(PROMPTS, greedy, sampled, strict=True)
    ]
    job = write_job(
        root / str(n),
        [f"+sweeps/claims={arm}", f"seed={seed}"],
        {
            "reward/mean": [skill - 0.1 + rng.normal(0, 0.01) for _ in range(STEPS)],
            "loss/clipfrac": [clipfrac + rng.normal(0, clipfrac / 20) for _ in range(STEPS)],
            "loss/approx_kl": [approx_kl * (1 + rng.normal(0, 0.05)) for _ in range(STEPS)],
            "rollout/length_fail": [5.0] * (STEPS // 2) + [5.0 + fail_growth + rng.normal(0, 0.1)] * (STEPS // 2),
            "rollout/tok_per_s": [100.0] * STEPS,
            "rollout/seconds": [2.0] * STEPS,
        },
        {
            "before": {"val/accuracy": float(before.mean()), "val/pass@1": float(sampled_before.mean() / 4)},
            "after": {"val/accuracy": float(after.mean()), "val/pass@1": float(sampled_after.mean() / 4)},
            "steps": STEPS,
        },
        config={"algo": {"update_epochs": 1, "minibatches": 1 if arm == "grpo_mb1" else 4}},
        heldout=heldout,
    )
    status = json.loads((job / "status.json").read_text())
    # the reference arm's jobs come first for each seed and build its warm start: 30 of their 90 CPU seconds
    phases = {"warm start": 30.0, "RL": 60.0} if arm == "grpo" else {"RL": 90.0}
    (job / "status.json").write_text(json.dumps({**status, "cpu_s": 90.0, "cpu_s_by_phase": phases}))


def claims_sweep(root, seeds=range(5), **changes):
    """Every arm for every seed; `changes[arm]`: keyword overrides of that arm's planted numbers."""
    n = 0
    for seed in seeds:
        for arm in ARMS:
            change = dict(changes.get(arm, {}))
            kw = {"skill": SKILL[seed] + change.pop("skill_delta", 0.0), **change}
            # the same draws for every arm of a seed: an arm that changes nothing gives the same run
            arm_job(root, n, arm, seed, np.random.default_rng(seed), **kw)
            n += 1
    return root


def fake_kl(job_dir):
    """KL to the start, by β: 0 → 0.5, 0.01 → 0.3, 0.04 → 0.2, 0.16 → 0.1 nats (± a little per seed)."""
    text = (job_dir / ".hydra" / "overrides.yaml").read_text()
    base = 0.5 if "beta0\n" in text else 0.3 if "beta001" in text else 0.1 if "beta016" in text else 0.2
    return base + 0.001 * int(job_dir.name) % 7


def fake_teacher(job_dir):
    return {p: 0.4 for p in PROMPTS}  # pass@1 0.4, pass@8 1 − 0.6^8 = 0.983


def rows_by(rows):
    return {(r.claim, r.metric): r for r in rows}


PLANTED = {
    "dr_grpo_beta": {"fail_growth": 1.0},  # wrong answers grow by 1 token instead of 4
    "grpo_nolen": {"fail_growth": 1.5},
    "grpo_eps_small": {"clipfrac": 0.2, "approx_kl": 1e-3},
    "rft": {"skill_delta": -0.2},  # RFT ends 0.2 below RL on every seed
}


def test_planted_effects_hold_and_unchanged_arms_show_no_detectable_effect(tmp_path):
    _, runs = load_sweep(claims_sweep(tmp_path, **PLANTED))
    rows = evaluate(runs, measure_kl=fake_kl, teacher=fake_teacher)
    by = rows_by(rows)
    words = {k: r.outcome.word for k, r in by.items()}
    acc, pass1 = "held-out accuracy after RL", "sampled pass@1 after RL"
    growth = "growth of wrong answers' length, first → last 10% of steps (tokens)"
    assert words[("(a) RL improves on its SFT start", acc)] == "holds"  # 0.3 → 0.6-0.8 on 64 prompts
    assert words[("(a) RL improves on its SFT start", pass1)] == "holds"
    assert words[("(a) RL beats imitating the teacher", acc)] == "holds"  # vs the teacher's 0.4
    assert words[("(a) RL stays within the teacher's reach", pass1)] == "holds"  # below its pass@8, 0.983
    rft = "(a) RL beats rejection-sampling fine-tuning on its own verified samples"
    assert words[(rft, acc)] == "holds" and by[(rft, acc)].interval.high < 0  # rft − grpo, planted −0.2
    assert words[(rft, pass1)] == "holds"
    assert words[("(c) Dr. GRPO grows wrong answers' length less than GRPO", growth)] == "holds"
    assert words[("(c) length normalisation off grows wrong answers' length less", growth)] == "holds"
    assert (
        words[("(f) ε = 0.05 vs 0.2 at 4 minibatch steps: the clip acts more often", "clip fraction, mean over steps")]
        == "holds"
    )
    assert (
        words[
            (
                "(f) ε = 0.05 vs 0.2 at 4 minibatch steps: a smaller step",
                "approx-KL to the sampling policy, mean over steps",
            )
        ]
        == "holds"
    )
    kl = "KL(π_final ‖ π_start), nats per completion"
    assert words[("(e) β = 0.0 vs 0.04: more drift from the start", kl)] == "holds"
    assert words[("(e) β = 0.01 vs 0.04: more drift from the start", kl)] == "holds"
    assert words[("(e) β = 0.16 vs 0.04: less drift from the start", kl)] == "holds"
    # arms whose planted accuracy is grpo's, drawn with the same generator: identical, no effect
    for claim in ("(b) Dr. GRPO vs GRPO at the same β = 0.04", "(b) std normalisation off, length normalisation on"):
        r = by[(claim, acc)]
        assert r.outcome.word == "no detectable effect" and r.interval.mean == 0 and r.interval.n_prompts == 64
    dr = by[("(c) Dr. GRPO grows wrong answers' length less than GRPO", growth)]
    assert dr.seeds == ["0", "1", "2", "3", "4"] and all(-3.2 < d < -2.8 for d in dr.per_seed)  # 1 − 4 tokens
    assert dr.interval.high < 0
    constructed = [r for r in rows if r.outcome.word == "by construction"]
    assert len(constructed) == 3 and all("pinned by `tests/" in r.outcome.detail for r in constructed)


def test_a_planted_reversal_is_reported_reversed(tmp_path):
    _, runs = load_sweep(claims_sweep(tmp_path, dr_grpo_beta={"fail_growth": 8.0}))  # grows more than grpo
    by = rows_by(evaluate(runs, measure_kl=fake_kl, teacher=fake_teacher))
    r = by[
        (
            "(c) Dr. GRPO grows wrong answers' length less than GRPO",
            "growth of wrong answers' length, first → last 10% of steps (tokens)",
        )
    ]
    assert (r.outcome.word, r.outcome.detail) == ("reversed", "higher") and r.interval.low > 0


def test_three_seeds_are_underpowered(tmp_path):
    _, runs = load_sweep(claims_sweep(tmp_path, seeds=range(3), **PLANTED))
    rows = evaluate(runs, measure_kl=fake_kl, teacher=fake_teacher)
    measured = [r for r in rows if r.outcome.word != "by construction"]
    assert measured and {r.outcome.word for r in measured} == {"underpowered"}
    assert all(r.outcome.detail == "3 paired seeds < 5" for r in measured)


def test_makespan_on_two_workers():
    # jobs of 3, 1, 1, 1 s: worker A takes 3; worker B takes 1, 1, 1 → both free at 3 s
    assert makespan([3, 1, 1, 1], 2) == 3 and makespan([1, 1, 1], 2) == 2 and makespan([], 2) == 0


@pytest.mark.parametrize("with_claims", [True, False])
def test_write_report_writes_claims_md_only_for_a_claims_sweep(tmp_path, with_claims, monkeypatch):
    if with_claims:
        claims_sweep(tmp_path, **PLANTED)
        monkeypatch.setattr("rlx.report.kl.kl_to_start", fake_kl)
        monkeypatch.setattr("rlx.report.claims.teacher_pass", fake_teacher)  # claims.py imports it by name
        (tmp_path / "sweep.json").write_text('{"command": "python -m rlx +sweeps=seed_claims", "started": "today"}')
    else:
        write_job(tmp_path / "0", ["algo.beta=0"], {"reward/mean": [0.1]})
    write_report(tmp_path)
    assert (tmp_path / "claims.md").is_file() == with_claims
    if not with_claims:
        return
    text = (tmp_path / "claims.md").read_text()
    assert "50 runs, seeds 0, 1, 2, 3, 4; 75.0 CPU-minutes: about 38 min on 2 idle cores" in text
    # 5 × 30 s = 2.5 CPU-minutes of warm starts; without them 5 × 60 + 45 × 90 s = 72.5 CPU-min, on 2 workers
    # 36.25 min if it split evenly; the jobs in launch order leave one worker 1.5 min over (makespan)
    assert "; 2.5 of them built 5 warm starts, which the cache keeps: with them cached, about 37 min" in text
    assert "an estimate from each job's CPU seconds, not a wall-clock measurement" in text
    assert "| ↳ | per seed 0: " in text and "runs grpo: 0 10 20 30 40" in text  # per-seed values under each row
    assert "- command: `python -m rlx +sweeps=seed_claims`" in text and "- code: `" in text
    assert "| grpo_mb1 | 5 | 4000 ± 0 | 20 ± 0 | 90 ± 0 |" in text  # 1 optimiser step per RL step
    assert "| grpo | 5 | 4000 ± 0 | 80 ± 0 | 90 ± 0 |" in text
    assert json.loads((tmp_path / "0" / "kl_to_start.json").read_text()) == {"kl": fake_kl(tmp_path / "0")}
