"""reward=math: strict arithmetic scoring, answer extraction, math_verify off the trainer's threads."""

from __future__ import annotations

import threading

import pytest

from rlx.rewards.base import Status
from rlx.rewards.math import MathReward, extract_answer


def test_strict_requires_the_whole_completion():
    reward = MathReward(strict=True, verifier="exact", format_weight=0.0, timeout_s=5)
    verdicts = reward(["85", "85 ok", "", "75"], [{"answer": "85"}] * 4)
    assert [v.status for v in verdicts] == [Status.PASS, Status.FAIL, Status.FORMAT, Status.FAIL]
    assert [v.reward for v in verdicts] == [1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "text, answer",
    [
        ("so \\boxed{\\frac{1}{2}} done", "\\frac{1}{2}"),
        ("work...\n#### 1,234", "1,234"),
        ("Answer: 7\nthanks", "7"),
        ("it is 3 then 42.", "42"),
        ("nothing", None),
        # prices are not inline math (Pandoc's rule: no space inside either $, no digit after the closing one)
        ("9 x $2 = $18.\nTherefore, Janet makes $18 every day.", "18"),
        ("It costs $5 and $7 more, so $x = 12$ and we are done.", "x = 12"),
        ("so $\\frac{1}{2}$ of them", "\\frac{1}{2}"),
    ],
)
def test_extract_answer(text, answer):
    assert extract_answer(text) == answer


def test_exact_gsm8k_style_with_format_weight():
    reward = MathReward(strict=False, verifier="exact", format_weight=0.1, timeout_s=5)
    verdicts = reward(["so #### 1,234", "it is 1234", "#### 12"], [{"answer": "1234"}] * 3)
    assert [v.reward for v in verdicts] == [1.1, 1.0, 0.1]
    assert verdicts[0].components == {"correct": 1.0, "format": 1.0}


def test_math_verify_runs_where_its_timeout_holds_even_from_a_thread():
    """Called from a non-main thread (as a trainer's worker thread would), answers are still verified."""
    reward = MathReward(strict=False, verifier="math_verify", format_weight=0.0, timeout_s=5)
    out = {}
    rows = [{"answer": "\\frac{1}{2}"}, {"answer": "\\frac{1}{2}"}, {"answer": "3"}]
    thread = threading.Thread(target=lambda: out.update(v=reward(["\\boxed{0.5}", "\\boxed{2}", "#### 3"], rows)))
    thread.start()
    thread.join()
    reward.close()
    assert [v.status for v in out["v"]] == [Status.PASS, Status.FAIL, Status.PASS]
