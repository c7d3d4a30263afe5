"""bench/staleness_report.py on hand-written sweeps (no training): runs pair by seed within a correction; a k
whose runs learn like k = 0 but take 0.8× the wall time per step shows the faster step as "holds" and "no
detectable effect" on accuracy at equal steps; a k that learns worse is "reversed"/"holds" on the accuracy; a
correction is paired with none at the same k, never across k."""

from __future__ import annotations

import sys

import numpy as np

from rlx.report.runs import load_sweep
from tests.conftest import REPO
from tests.sweeps.synthetic import write_job

sys.path.insert(0, str(REPO / "bench"))
import staleness_report  # noqa: E402  bench/ is scripts, not a package

STEPS, EVERY = 20, 10
PROMPTS = [f"{a}+{b}=" for a in range(10, 18) for b in range(20, 28)]  # 64


def job(root, n, k, seed, *, step_s, skill, correction="none"):
    rng = np.random.default_rng(seed)  # the same draws for both arms of a seed
    heldout = [
        {"step": e, "prompt": p, "status": "PASS" if c else "FAIL"}
        for e in range(0, STEPS + 1, EVERY)
        for p, c in zip(PROMPTS, rng.random(len(PROMPTS)) < (0.3 + (skill - 0.3) * e / STEPS), strict=True)
    ]
    metrics = {"time/step": [step_s * (1 + 0.01 * seed)] * STEPS, "reward/mean": [0.5] * STEPS}
    write_job(
        root / str(n),
        [f"rollout.max_staleness={k}", f"rollout_correction={correction}", f"seed={seed}"],
        metrics,
        {"steps": STEPS},
        heldout=heldout,
    )


def sweep(root, k1_skill_delta=0.0):
    n = 0
    for k, step_s in (("0", 0.30), ("1", 0.24)):
        for seed in range(5):
            skill = [0.80, 0.85, 0.75, 0.90, 0.82][seed] + (k1_skill_delta if k == "1" else 0.0)
            job(root, n, k, seed, step_s=step_s, skill=skill)
            n += 1
    return root


def outcomes(root) -> dict[str, str]:
    """{measure: outcome word} of k = 1 against k = 0 (correction none) in the report's table."""
    _, runs = load_sweep(root)
    paired = staleness_report.pairs(runs, "none", "1")
    assert sorted(paired) == ["0", "1", "2", "3", "4"]  # every seed paired, within the correction
    rows = [line for line in staleness_report.report(root).splitlines() if line.startswith("| none | 1 vs 0 |")]
    return {line.split(" | ")[2]: line.split("**")[1] for line in rows}


def test_a_faster_k_that_learns_alike_is_faster_with_no_detectable_accuracy_effect(tmp_path):
    words = outcomes(sweep(tmp_path))
    assert words["wall s per RL step"] == "holds"  # 0.24 vs 0.30 s on every seed
    assert words["held-out accuracy, equal steps"] == "no detectable effect"  # the same draws: identical
    assert words["held-out accuracy, equal wall time"] == "holds"  # k = 1 reaches step 20 within k = 0's time


def test_a_k_that_learns_worse_is_seen_at_equal_steps(tmp_path):
    words = outcomes(sweep(tmp_path, k1_skill_delta=-0.4))
    assert words["held-out accuracy, equal steps"] == "holds"  # no side claimed: the interval excludes 0, named


def test_a_correction_is_paired_with_none_at_the_same_k(tmp_path):
    """token_tis learns worse than none at k = 1 only, and its step is slower at every k: the correction rows
    see the accuracy cost at k = 1 alone (pairing across k would mix k = 0's runs in) and the slower step
    at both k."""
    n = 0
    for correction, slower in (("none", 1.0), ("token_tis", 1.1)):
        for k, step_s in (("0", 0.30), ("1", 0.24)):
            for seed in range(5):
                skill = [0.80, 0.85, 0.75, 0.90, 0.82][seed] - (0.4 if (correction, k) == ("token_tis", "1") else 0)
                job(tmp_path, n, k, seed, step_s=step_s * slower, skill=skill, correction=correction)
                n += 1
    _, runs = load_sweep(tmp_path)
    at_k1 = staleness_report.paired(runs, ("1", "none"), ("1", "token_tis"))
    assert sorted(at_k1) == ["0", "1", "2", "3", "4"]
    assert all(
        a.override_map["rollout.max_staleness"] == b.override_map["rollout.max_staleness"] == "1"
        for a, b in at_k1.values()
    )
    text = staleness_report.report(tmp_path)
    words = {
        (line.split(" | ")[1], line.split(" | ")[2]): line.split("**")[1]
        for line in text.splitlines()
        if line.startswith("| token_tis | token_tis vs none")
    }
    assert words[("token_tis vs none at k = 0", "held-out accuracy, equal steps")] == "no detectable effect"
    assert words[("token_tis vs none at k = 1", "held-out accuracy, equal steps")] == "holds"
    assert words[("token_tis vs none at k = 0", "wall s per RL step")] == "holds"
    assert words[("token_tis vs none at k = 1", "wall s per RL step")] == "holds"
    assert len(words) == 6  # 2 k × 3 measures, and no row for none against itself
    assert "| none | 1 vs 0 |" in text and "| token_tis | 1 vs 0 |" in text  # the within-correction rows remain
