"""reward=math's reading of answers (rlx.rewards.math_answer): exact rationals, lists as lists, units dropped, rounding
only to the reference's stated precision; and the recall corpus's confusion matrix under both verifiers."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from rlx.rewards import math_answer
from rlx.rewards.base import Status
from rlx.rewards.math import MathReward, hedged
from rlx.rewards.math_answer import Items, Number, Text, decide, read
from tests.rewards.recall.math_corpus import ADVERSARIAL, HONEST


@pytest.mark.parametrize(
    "answer, value",
    [
        ("18446744073709551615", Number(Fraction(2**64 - 1))),  # a float would make it 2^64
        ("2^{64}-1", Number(Fraction(2**64 - 1))),
        ("0.1234567", Number(Fraction(1234567, 10**7), 7)),
        ("\\frac12", Number(Fraction(1, 2))),
        ("-\\dfrac{3}{4}", Number(Fraction(-3, 4))),
        ("1{,}000", Number(Fraction(1000))),
        ("12,345,678.5", Number(Fraction(24691357, 2), 1)),
        ("1,2,3", Items("", (Number(Fraction(1)), Number(Fraction(2)), Number(Fraction(3))))),
        ("1,234,5", Items("", (Number(Fraction(1)), Number(Fraction(234)), Number(Fraction(5))))),  # not thousands
        ("49 cm^2", Number(Fraction(49))),
        ("49\\text{ cm}^2", Number(Fraction(49))),
        ("$\\$5.00$", Number(Fraction(5), 2)),
        ("x = 5", Number(Fraction(5))),
        ("5 m", Number(Fraction(5))),
        ("5m", Text("5m")),  # 5 times m
        ("\\left[0, 1\\right)", Items("[)", (Number(Fraction(0)), Number(Fraction(1))))),
        ("2^{1000000000}", Text("2^{1000000000}", huge=True)),  # over the size limit: never evaluated
        ("1\\frac{1}{2}", Number(Fraction(3, 2))),  # a mixed number
        ("1 1/2", Number(Fraction(3, 2))),
        ("0.1\\overline{6}", Number(Fraction(1, 6))),
        ("0.333...", Number(Fraction(1, 3))),
        ("1.5e3", Number(Fraction(1500))),
        ("1\\,000\\,000", Number(Fraction(10**6))),
        ("\\pm 2", Items("", (Number(Fraction(2)), Number(Fraction(-2))))),
        ("x = 2 \\text{ or } x = 3", Items("", (Number(Fraction(2)), Number(Fraction(3))))),
        ("\\{1, 2\\}", Items("", (Number(Fraction(1)), Number(Fraction(2))))),  # a set is a set of solutions
        ("\\phantom{8}7", Number(Fraction(7))),  # what renders as nothing is nothing
        ("\\textbf{(C)}", Text("C")),
        # MATH's vectors and matrices: rows of entries, each read as a value
        (
            "\\begin{pmatrix} -\\frac{1}{3} \\\\ 0.5 \\end{pmatrix}",
            Items("matrix", (Items("row", (Number(Fraction(-1, 3)),)), Items("row", (Number(Fraction(1, 2), 1),)))),
        ),
        (
            "\\begin{bmatrix}1&2\\\\3&4\\\\\\end{bmatrix}",  # a trailing \\\\ ends no row
            Items(
                "matrix",
                (
                    Items("row", (Number(Fraction(1)), Number(Fraction(2)))),
                    Items("row", (Number(Fraction(3)), Number(Fraction(4)))),
                ),
            ),
        ),
        (
            "\\begin{vmatrix} 1 & 2 \\\\ 3 & 4 \\end{vmatrix}",
            Text("\\begin{vmatrix}1&2\\\\3&4\\end{vmatrix}"),
        ),  # a determinant
    ],
)
def test_answers_are_read_as_values(answer, value):
    assert read(answer) == value


@pytest.mark.parametrize(
    "predicted, reference, same",
    [
        ("7.0", "7", True),
        ("7.4", "7", False),  # an integer reference is exact
        ("\\frac{1}{3}", "0.33", True),  # |1/3 - 0.33| = 1/300 <= 0.5 * 10^-2
        ("0.34", "0.33", False),  # as precise as the reference: must equal it
        ("0.3349", "0.33", True),
        ("0.336", "0.33", False),  # rounds to 0.34
        ("0.33", "\\frac{1}{3}", False),  # the reference is exact
        ("0.1234568", "0.1234567", False),
        ("3, 2", "2, 3", True),  # bare lists: a set of solutions
        ("(2, 1)", "(1, 2)", False),  # bracketed: ordered
        ("\\sqrt{2}", "\\sqrt{2}", True),
        ("\\sqrt{2}", "\\sqrt2", True),  # exact roots: sums of q·√n·π^k
        ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt2}", True),
        ("\\sqrt{8}", "2\\sqrt{2}", True),
        ("\\frac{\\pi}{2}", "\\frac12\\pi", True),
        ("\\sqrt{2}", "1.41", True),  # rounds to the reference's digits
        ("1.41", "\\sqrt{2}", False),  # an approximation of an exact reference
        ("25\\%", "0.25", True),
        ("25\\%", "25", True),
        ("25\\%", "2.5", False),
        ("7 \\text{ hours}", "7 \\text{ minutes}", False),
        ("7 \\text{ cm}", "7", True),
        ("\\neq 7", "7", False),
        ("7?", "7", False),
        ("x^2+1", "1+x^2", None),  # text that differs: left to a symbolic verifier
        ("123", "1,2,3", False),
        # LaTeX's row break "\\\\" followed by a space is not the spacing command "\\ " (a vector read as "1 \\2")
        ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", True),
        (
            "\\begin{pmatrix} -1/3 \\\\ 2/3 \\end{pmatrix}",
            "\\begin{pmatrix} -\\frac{1}{3} \\\\ \\frac{2}{3} \\end{pmatrix}",
            True,
        ),
        ("\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}", "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", True),
        (
            "\\begin{pmatrix}1&3\\\\2&4\\end{pmatrix}",
            "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
            False,
        ),  # transposed
        (
            "\\begin{pmatrix}1 & 2\\end{pmatrix}",
            "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}",
            False,
        ),  # a row, not a column
        ("\\begin{pmatrix}2\\\\1\\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", False),  # ordered
        ("\\begin{pmatrix}1\\\\2\\\\3\\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", False),
        ("\\begin{pmatrix}1 \\text{ or } 3\\\\2\\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", False),
        ("(1, 2)", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", False),  # a tuple is not a column vector
        # numerals in a stated base (MATH's number theory): digits and base, never a value; the question names the base
        ("1011_{2}", "1011_2", True),
        ("1011", "1011_2", True),
        ("a3f_{16}", "A3F_{16}", True),
        ("1011_3", "1011_2", False),  # math_verify took the subscript for a name and matched these
        ("11", "1011_2", False),  # its value, in base 10, where base 2 was asked
        ("1011_2", "11", False),
        # one-token arguments: \frac12x is \frac{1}{2}x as text too (the exact verifier compares text)
        ("-\\frac12x+3", "-\\frac{1}{2}x + 3", True),
        ("\\sqrt2 x", "\\sqrt{2}x", True),
        # a rate is a unit: its two units' names, so 18 dollars per day is 18, but not 18 dollars a week
        ("18 dollars per day", "18", True),
        ("7 miles an hour", "7", True),
        ("18 per day", "18", True),
        ("5 dollars each", "5", True),
        ("18 dollars a day", "18 \\text{ dollars per day}", True),
        ("18 dollars per day", "18 dollars per week", False),
        ("7 square feet", "7 square meters", False),  # two-word units are compared by name too
        ("7 or more", "7", False),
    ],
)
def test_decide(predicted, reference, same):
    assert decide(predicted, reference) is same


def test_bare_integers_decide_as_their_reading_does(monkeypatch):
    """decide's shortcut for two bare integers changes no decision: leading zeros, -0, 2^64 - 1 against 2^64 and
    100 digits decide as the full reading does, and a sign, digits of another script, an underscore or a space
    take the reading path."""
    answers = ["0", "-0", "7", "007", "-7", "12", "120", "18446744073709551615", "18446744073709551616", "9" * 100]
    answers += ["+7", "\u0663", "1_0", " 7", "7.0", "1,000", "3", "١٢"]
    shortcut = {(p, r): decide(p, r) for p in answers for r in answers}
    monkeypatch.setattr(math_answer, "PLAIN_INTEGER", re.compile(r"(?!)"))  # never matches: the reading decides
    assert {(p, r): decide(p, r) for p in answers for r in answers} == shortcut
    assert shortcut[("007", "7")] is True and shortcut[("18446744073709551615", "18446744073709551616")] is False


@pytest.mark.parametrize(
    "completion, is_hedge",
    [
        ("\\boxed{7} or maybe \\boxed{8}", True),
        ("\\boxed{\\frac12}, that is \\boxed{0.5}", False),  # one answer in two forms
        ("#### 7\n#### 8", True),
        ("\\boxed{7}", False),
    ],
)
def test_different_final_answers_are_a_hedge(completion, is_hedge):
    assert hedged(completion) is is_hedge


def score(reward: MathReward, pairs: list[tuple[str, str]]) -> list[float]:
    verdicts = reward([completion for completion, _ in pairs], [{"answer": answer} for _, answer in pairs])
    assert all(v.status in (Status.PASS, Status.FAIL, Status.FORMAT) for v in verdicts), verdicts
    return [v.reward for v in verdicts]


@pytest.mark.parametrize("verifier", ["exact", "math_verify"])
def test_recall_corpus_confusion_matrix(verifier, capsys):
    reward = MathReward(strict=False, verifier=verifier, format_weight=0.0, timeout_s=5)
    try:
        honest, adversarial = score(reward, HONEST), score(reward, ADVERSARIAL)
    finally:
        reward.close()
    refused = [pair for pair, r in zip(HONEST, honest, strict=True) if r != 1.0]
    accepted = [pair for pair, r in zip(ADVERSARIAL, adversarial, strict=True) if r != 0.0]
    with capsys.disabled():
        print(
            f"\nreward=math verifier={verifier}: honest given full credit {len(HONEST) - len(refused)}/{len(HONEST)}, "
            f"adversarial scored 0 {len(ADVERSARIAL) - len(accepted)}/{len(ADVERSARIAL)}"
        )
    assert refused == [] and accepted == []
    assert len(HONEST) >= 30 and len(ADVERSARIAL) >= 25
