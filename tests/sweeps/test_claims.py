"""The claims evaluator on hand-written sweep directories: every claim's row, and each verdict path
(holds / does not hold / inconclusive) with numbers written out."""

from __future__ import annotations

import pytest

from rlx.report import write_report
from rlx.report.claims import evaluate, makespan, verdict
from rlx.report.runs import load_sweep
from tests.sweeps.sweep_helpers import md_table
from tests.sweeps.synthetic import write_job

STEPS = 20


def variant(sweep, n, name, seed, *, before=0.3, after=0.6, zero=0.5, zero_batch=None, fail_len=None,
            approx_kl=1e-3, state=None, peak=700.0, groups=16.0, seconds=1.0, epsilon=0.2):
    zero_batch = zero if zero_batch is None else zero_batch
    fail_len = fail_len or [5.0] * STEPS
    metrics = {"reward/mean": [0.5] * STEPS, "reward/zero_std_frac": [zero] * STEPS,
               "reward/zero_std_frac_batch": zero_batch if isinstance(zero_batch, list) else [zero_batch] * STEPS,
               "rollout/length_fail": fail_len, "loss/approx_kl": [approx_kl] * STEPS,
               "curriculum/groups": [groups] * STEPS, "rollout/seconds": [seconds] * STEPS}
    footprint = {"state_bytes": {"total": state}, "start_model": ""} if state else None
    return write_job(sweep / str(n), [f"+sweeps/claims={name}", f"seed={seed}"], metrics,
                     {"before": {"val/accuracy": before}, "after": {"val/accuracy": after}, "peak_rss_mb": peak,
                      "wall_s": 60.0, "steps": STEPS}, footprint=footprint,
                     config={"algo": {"epsilon": epsilon}})


def sweep_where_everything_holds(root, seeds=(0, 1)):
    n = 0
    for seed in seeds:
        for name, kw in {
            "ppo": {"state": 32e6, "peak": 1400.0}, "reinforce": {"state": 16e6, "peak": 700.0},
            "grpo": {"zero": 0.6, "fail_len": [5.0] * 10 + [9.0] * 10, "approx_kl": 2e-3}, "dapo": {},
            "dr_grpo": {"fail_len": [5.0] * 10 + [6.0] * 10}, "grpo_band": {"zero": 0.3},
            "grpo_dynamic": {"zero": 0.6, "zero_batch": 0.0, "groups": 40.0, "seconds": 2.5},
            "grpo_beta0": {}, "grpo_eps_small": {"approx_kl": 5e-4, "epsilon": 0.05},
        }.items():
            variant(root, n, name, seed, **kw)
            n += 1
    return root


def fake_kl(job_dir):
    """KL to the start: β = 0 drifts 3× as far (0.3 vs 0.1 nats) as the β = 0.04 run."""
    return 0.3 if "grpo_beta0" in (job_dir / ".hydra" / "overrides.yaml").read_text() else 0.1


def by_claim(rows):
    return {r.claim.split(" (τ")[0]: r for r in rows}


def test_verdict_rule():
    assert verdict([True, True]) == "holds"
    assert verdict([False, False]) == "does not hold"
    assert verdict([True, False]) == "inconclusive"
    assert verdict([True]) == "inconclusive"  # one seed decides nothing
    assert verdict([True, None, True]) == "holds"  # an unmeasurable seed is left out


def test_makespan_on_two_workers():
    # jobs of 3, 1, 1, 1 s: worker A takes 3; worker B takes 1, 1, 1 → both free at 3 s
    assert makespan([3, 1, 1, 1], 2) == 3 and makespan([1, 1, 1], 2) == 2 and makespan([], 2) == 0


def test_every_claim_holds_on_runs_that_show_it(tmp_path):
    _, runs = load_sweep(sweep_where_everything_holds(tmp_path))
    rows, ranking = evaluate(runs, measure_kl=fake_kl)
    claims = by_claim(rows)
    assert len(rows) == 12  # 5 algorithms, 2 for (b), (c), 2 for (d), (e), (f)
    assert {r.verdict for r in rows} == {"holds"}, [(r.claim, r.verdict) for r in rows if r.verdict != "holds"]
    assert "held-out acc 0.300 ± 0.000 → 0.600 ± 0.000" in claims["(a) ppo beats the SFT imitation ceiling on held-out data"].measured
    b = claims["(b) dynamic sampling trains on no zero-variance group"].measured
    assert "2.50 ± 0.00× the groups generated" in b and "2.50 ± 0.00× the generation time" in b
    # growth of failed lengths: GRPO 9 − 5 = +4 tokens, Dr. GRPO 6 − 5 = +1 token (means of the last/first 2 steps)
    c = claims["(c) Dr. GRPO grows the length of wrong answers less than GRPO"].measured
    assert "GRPO +4.00 ± 0.00" in c and "Dr. GRPO +1.00 ± 0.00" in c
    assert "2.00 ± 0.00×" in claims["(d) PPO's critic roughly doubles the training-state bytes"].measured
    assert "β = 0.04 0.100 ± 0.000, β = 0 0.300 ± 0.000" in claims[
        "(e) β > 0 keeps the KL to the reference lower than β = 0 at comparable reward"].measured
    assert "ε = 0.05 0.00050 ± 0.00000, ε = 0.2 0.00200 ± 0.00000" in claims[
        "(f) a small ε keeps the per-step approx-KL to the sampling policy below a large ε's"].measured
    assert "does not exceed" in ranking  # every algorithm reached 0.6: no gap


def test_claims_that_do_not_hold_are_reported_with_their_numbers(tmp_path):
    for seed in (0, 1):
        n = 10 * seed
        variant(tmp_path, n, "ppo", seed, after=0.29, state=17e6, peak=720.0)  # worse than its start
        variant(tmp_path, n + 1, "reinforce", seed, state=16e6, peak=700.0)
        variant(tmp_path, n + 2, "grpo", seed, zero=0.4, approx_kl=1e-3, fail_len=[5.0] * STEPS)
        variant(tmp_path, n + 3, "grpo_band", seed, zero=0.5)  # more zero-variance groups than uniform
        variant(tmp_path, n + 4, "grpo_dynamic", seed, zero_batch=[0.0] * 19 + [0.25])  # one bad step
        variant(tmp_path, n + 5, "dr_grpo", seed, fail_len=[5.0] * 10 + [8.0] * 10)  # grows more than GRPO
        variant(tmp_path, n + 6, "grpo_eps_small", seed, approx_kl=1e-3)  # no lower than the large ε
        variant(tmp_path, n + 7, "grpo_beta0", seed)
    _, runs = load_sweep(tmp_path)
    claims = by_claim(evaluate(runs, measure_kl=lambda job: 0.2)[0])  # equal KL: β did not help
    for name in ["(a) ppo beats the SFT imitation ceiling on held-out data",
                 "(b) learnable_band lowers the share of generated zero-variance groups",
                 "(b) dynamic sampling trains on no zero-variance group",
                 "(c) Dr. GRPO grows the length of wrong answers less than GRPO",
                 "(d) PPO's critic roughly doubles the training-state bytes",
                 "(d) PPO's critic roughly doubles peak memory",
                 "(e) β > 0 keeps the KL to the reference lower than β = 0 at comparable reward",
                 "(f) a small ε keeps the per-step approx-KL to the sampling policy below a large ε's"]:
        assert claims[name].verdict == "does not hold", (name, claims[name])
    assert "0.300 ± 0.000 → 0.290 ± 0.000" in claims["(a) ppo beats the SFT imitation ceiling on held-out data"].measured
    assert "1.06 ± 0.00×" in claims["(d) PPO's critic roughly doubles the training-state bytes"].measured
    # the algorithms that never ran cannot be judged
    assert claims["(a) dapo beats the SFT imitation ceiling on held-out data"].verdict == "inconclusive"


def test_seeds_that_disagree_or_a_single_seed_are_inconclusive(tmp_path):
    variant(tmp_path, 0, "grpo", 0, zero=0.6)
    variant(tmp_path, 1, "grpo_band", 0, zero=0.3)  # seed 0: band lowers the share
    variant(tmp_path, 2, "grpo", 1, zero=0.6)
    variant(tmp_path, 3, "grpo_band", 1, zero=0.7)  # seed 1: it does not
    variant(tmp_path, 4, "grpo_beta0", 0, after=0.9)  # β = 0 reached a much higher accuracy: not comparable
    variant(tmp_path, 5, "grpo_beta0", 1, after=0.9)
    variant(tmp_path, 6, "ppo", 0)  # one seed only
    _, runs = load_sweep(tmp_path)
    claims = by_claim(evaluate(runs, measure_kl=fake_kl)[0])
    assert claims["(b) learnable_band lowers the share of generated zero-variance groups"].verdict == "inconclusive"
    assert claims["(e) β > 0 keeps the KL to the reference lower than β = 0 at comparable reward"].verdict == \
        "inconclusive"
    assert claims["(a) ppo beats the SFT imitation ceiling on held-out data"].verdict == "inconclusive"


@pytest.mark.parametrize("with_claims", [True, False])
def test_write_report_writes_claims_md_only_for_a_claims_sweep(tmp_path, with_claims, monkeypatch):
    if with_claims:
        sweep_where_everything_holds(tmp_path)
        monkeypatch.setattr("rlx.report.kl.kl_to_start", fake_kl)
        (tmp_path / "sweep.json").write_text('{"command": "python -m rlx +sweeps=seed_claims", "started": "today"}')
    else:
        write_job(tmp_path / "0", ["algo.beta=0"], {"reward/mean": [0.1]})
    write_report(tmp_path)
    assert (tmp_path / "claims.md").is_file() == with_claims
    if with_claims:
        text = (tmp_path / "claims.md").read_text()
        rows = md_table(text)
        assert len(rows) == 12 and all(r["verdict"] == "**holds**" for r in rows)
        assert "Command: `python -m rlx +sweeps=seed_claims`" in text and "Verdict rule:" in text
        assert rows[0]["runs"] == "ppo: 0 9"  # the job directories the numbers come from
