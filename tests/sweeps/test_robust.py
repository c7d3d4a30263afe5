"""rliable's aggregate estimators (rlx/report/robust.py) on hand-computed numbers, and the sweep report's section
built from them."""

from __future__ import annotations

import numpy as np
import pytest

from rlx.report import write_report
from rlx.report.robust import improvement_estimate, iqm, iqm_estimate, probability_of_improvement
from tests.sweeps.test_paired_report import SEED_SKILL, sweep


def test_iqm_is_the_mean_of_the_middle_half():
    # sorted: 1 2 3 4 5 6 7 100; a quarter (2 runs) cut from each end -> (3 + 4 + 5 + 6) / 4 = 4.5
    assert iqm([7, 1, 100, 3, 5, 2, 6, 4]) == 4.5
    # 5 runs: int(0.25 * 5) = 1 cut from each end -> (0.6 + 0.7 + 0.9) / 3
    assert iqm([0.5, 0.9, 0.6, 1.0, 0.7]) == pytest.approx(2.2 / 3, abs=1e-15)
    # the outlier that moves the mean by 11.6 does not move the IQM
    assert iqm([7, 1, 1000, 3, 5, 2, 6, 4]) == 4.5


def test_probability_of_improvement_counts_pairs_and_half_ties():
    # x = 1, 2, 3 against y = 0, 2, 5: x > y in (1,0) (2,0) (3,0) (3,2) = 4 pairs, one tie (2,2) -> (4 + 0.5) / 9
    assert probability_of_improvement([1, 2, 3], [0, 2, 5]) == pytest.approx(4.5 / 9, abs=1e-15)
    assert probability_of_improvement([5, 6], [1, 2, 3]) == 1.0
    assert probability_of_improvement([1, 2, 3], [5, 6]) == 0.0
    x, y = [0.3, 0.8, 0.5, 0.5], [0.5, 0.1, 0.9]
    assert probability_of_improvement(x, y) + probability_of_improvement(y, x) == pytest.approx(1.0, abs=1e-15)


def test_intervals_cover_the_estimate_and_collapse_without_spread():
    e = iqm_estimate([0.55, 0.7, 0.62, 0.8, 0.66])
    assert e.low <= e.value <= e.high and e.low < e.high and e.n == 5
    same = iqm_estimate([0.5] * 5)
    assert (same.value, same.low, same.high) == (0.5, 0.5, 0.5)
    assert iqm_estimate([None, float("nan")]) is None and improvement_estimate([1.0], []) is None
    one = improvement_estimate([0.5], [0.1, 0.2, 0.3])  # one run: the value, and no interval to draw
    assert one.value == 1.0 and np.isnan(one.low) and np.isnan(one.high)
    p = improvement_estimate([0.8, 0.9, 0.85, 0.95, 0.9], [0.1, 0.2, 0.15, 0.3, 0.2])
    assert (p.value, p.high) == (1.0, 1.0)  # every run of X above every run of Y, in every resample
    # the same runs give the same interval (a seeded bootstrap): the report is reproducible
    assert iqm_estimate([0.55, 0.7, 0.62, 0.8, 0.66]) == e


def test_the_sweep_report_shows_iqm_and_probability_of_improvement(tmp_path):
    # a 10x smaller learning rate with every prompt's pass probability 0.3 lower, 5 seeds
    root = sweep(tmp_path, "optimizer.lr", ["1e-4", "1e-5"], range(5), lambda v, s: SEED_SKILL[s] - 0.3 * (v == "1e-5"))
    text = write_report(root).read_text()
    assert "## Aggregate over runs (rliable's estimators)" in text
    rows = [line for line in text.splitlines() if line.startswith("| `optimizer.lr` | 1e-5 | held-out accuracy")]
    assert len(rows) == 1  # (the paired table writes "1e-5 vs 1e-4")
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[3] == "5"
    iqm_value, iqm_low, iqm_high = (float(v) for v in cells[4].replace("[", ",").rstrip("]").split(","))
    assert iqm_low <= iqm_value <= iqm_high < 0.6  # the seeds' skills less 0.3: 0.25-0.5, drawn on 64 prompts
    low, high = (float(v) for v in cells[5].split("[")[1].rstrip("]").split(","))
    assert high < 0.5  # the smaller rate is the worse arm: P(1e-5 > 1e-4) well under a coin flip
    reference = next(line for line in text.splitlines() if line.startswith("| `optimizer.lr` | 1e-4 | held-out"))
    assert reference.rstrip().endswith("| — |")  # the reference is not compared with itself
