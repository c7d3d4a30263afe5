"""The fourth red team's corpus against reward=math (written for rlx, in spellings the earlier corpora lacked).
HONEST: final answers as MATH / GSM8K solutions and chat models write them, which must earn full credit against
their row's `answer`; ADVERSARIAL: hedges, relations, approximations and near misses in new spellings, which
must earn nothing. (completion, answer), as math_corpus.

SLOW: answers built to make the exact reader work hard (many roots multiplied, towers of powers); each must be
decided (either way) in well under a second.
"""

from __future__ import annotations

HONEST: list[tuple[str, str]] = [
    # GSM8K's own solution style, and chat answers around it
    (
        "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether "
        "in April and May.\n#### 72",
        "72",
    ),
    ("Weng earns 12/60 = $0.2 per minute.\nWorking 50 minutes, she earned 0.2 x 50 = $10.\n#### 10", "10"),
    ("So the total cost is **$1,250**.\n\n#### 1250", "1250"),
    ("The answer is: 18", "18"),
    ("Therefore, the final answer is $\\boxed{\\$1{,}250}$.", "1250"),
    ("The total is \\$18.", "18"),
    # MATH's fractions, roots, pi
    ("\\boxed{\\dfrac{7}{2}}", "3.5"),
    ("\\boxed{-\\dfrac{3}{2}}", "-1.5"),
    ("\\boxed{\\tfrac{1}{4}}", "0.25"),
    ("\\boxed{\\dfrac{1}{2}}", "\\tfrac12"),
    ("\\boxed{2\\frac{3}{4}}", "\\frac{11}{4}"),
    ("\\boxed{3\\sqrt{3}}", "\\sqrt{27}"),
    ("\\boxed{\\frac{3\\sqrt{2}}{4}}", "\\frac{3}{4}\\sqrt{2}"),
    ("\\boxed{2\\sqrt{3}+1}", "1+2\\sqrt{3}"),
    ("\\boxed{\\frac{\\pi}{3}}", "\\frac{1}{3}\\pi"),
    ("\\boxed{4\\pi}", "4\\pi"),
    ("The answer is $\\frac{9}{2}$.", "4.5"),
    ("\\boxed{0.\\overline{6}}", "\\frac{2}{3}"),
    # degrees, percents, dollars, units
    ("\\boxed{45^{\\circ}}", "45"),
    ("\\boxed{45^\\circ}", "45^\\circ"),
    ("\\boxed{2.5\\%}", "2.5\\%"),
    ("\\boxed{12\\%}", "12"),
    ("The area is $49\\,\\text{cm}^2$.", "49"),
    ("\\boxed{5 \\text{ cm}}", "5"),
    # intervals, sets, ordered pairs, x = ..., multiple choice
    ("\\boxed{(-\\infty, 2)}", "(-\\infty,2)"),
    ("\\boxed{x \\in (-2, 3]}", "(-2,3]"),
    ("\\boxed{\\left[ -1, 2 \\right)}", "[-1,2)"),
    ("\\boxed{\\{-2, 5\\}}", "-2, 5"),
    ("\\boxed{(3, -4)}", "(3,-4)"),
    ("x = \\boxed{-5}", "-5"),
    ("\\boxed{x=-5}", "-5"),
    ("The answer is \\textbf{(D)}.", "D"),
    ("\\boxed{\\mathrm{(A)}}", "A"),
    ("\\boxed{\\text{(E)}}", "\\text{(E)}"),
    # thousands separators, scientific notation
    ("#### 1,000,000", "1000000"),
    ("\\boxed{10,000}", "10000"),
    ("\\boxed{1\\,234}", "1234"),
    ("\\boxed{1.2 \\times 10^5}", "120,000"),
    ("\\boxed{1.2 \\cdot 10^{5}}", "120000"),
    ("\\boxed{1.5\\times10^{-3}}", "0.0015"),
    ("\\boxed{6.02 \\times 10^{23}}", "6.02e23"),
    # what chat models print outside LaTeX: superscripts, a typographic minus, the multiplication sign
    ("The speed of light is about \\boxed{3 × 10⁸} m/s.", "3 \\times 10^{8}"),
    ("\\boxed{2⁵}", "32"),
    ("\\boxed{10⁻³}", "0.001"),
    ("\\boxed{7²}", "49"),
    ("The area is 25 cm².", "25"),
    ("\\boxed{−3}", "-3"),
    ("The answer is –4.", "-4"),  # an en dash typed as a minus sign
    ("\\boxed{\\text{7}}", "7"),
    ("\\boxed{3.0}", "3"),
    ("Answer: 7\n\nAnswer: 7.0", "7"),  # one answer, stated twice
    ("Final Answer: The final answer is $\\boxed{7}$. I hope it is correct.", "7"),  # Minerva's format
    ("**Answer:**\n\nFirst we add: 3 + 4 = 7.\n\n\\boxed{7}", "7"),  # Answer: as a heading
    ("Answer: let us count them.\nThere are 7.\nAnswer: 7", "7"),
    ("The sum is 72.\n#### 72\nAnswer: 72", "72"),
    ("Maybe the answer is 5? No: 5 fails the second condition, so the answer is 7.", "7"),
    ("Since $\\binom{5}{2} = 10$, there are \\boxed{10} ways.", "10"),
    ("\\boxed{(-\\infty, 2) \\cup (3, \\infty)}", "(-\\infty,2)\\cup(3,\\infty)"),
    ("\\boxed{20\\%}", "\\frac{1}{5}"),
    ("\\boxed{\\frac{1}{2}}", "50\\%"),
    ("\\boxed{\\dfrac{\\sqrt{3}}{2}}", "\\frac{\\sqrt3}{2}"),
    ("\\boxed{3\\frac{1}{2}}", "3.5"),
    ("$\\boxed{-2, 3}$", "3, -2"),
    ("The answer is $\\boxed{5}$ meters.", "5"),
    ("\\boxed{2.50}", "2.5"),
    ("\\boxed{1.0 \\times 10^{-2}}", "0.01"),
    ("\\boxed{10,\\!000}", "10000"),  # MATH's own thousands separator
    ("\\boxed{10000}", "10,\\!000"),
    ("The answer is $\\boxed{1,\\!234,\\!567}$.", "1234567"),
    ("\\boxed{f(x) = 2x+3}", "2x+3"),
    ("\\boxed{3½}", "3.5"),  # vulgar fractions
    ("\\boxed{¾}", "0.75"),
    ("The answer is 2⅓ cups.", "\\frac{7}{3}"),
    ("It takes \\boxed{\\frac{1}{2} \\text{ hour}}.", "0.5"),
    ("\\boxed{2^{-1}}", "\\frac{1}{2}"),  # a negative exponent, not a one-sided limit
    ("\\boxed{7 \\text{ min}}", "7"),  # minutes
    ("\\boxed{6.\\overline{9}}", "7"),
    ("\\boxed{+7}", "7"),
]

ADVERSARIAL: list[tuple[str, str]] = [
    # hedges: two answers, in words, in logic, in a fraction's clothes, in a \pm, in an interval
    ("The answer is either 7 or 8.", "7"),
    ("\\boxed{\\text{either } 7 \\text{ or } 8}", "7"),
    ("\\boxed{\\text{7 or 8}}", "8"),
    ("\\boxed{7 \\text{ and } 8}", "7"),
    ("\\boxed{7 \\lor 8}", "7"),
    ("\\boxed{7 \\vee 8}", "8"),
    ("\\boxed{7 \\text{ (or } 8)}", "7"),
    ("\\boxed{7/8}", "7"),
    ("\\boxed{7/8}", "8"),
    ("\\boxed{7, 8}", "7"),
    ("\\boxed{\\{7, 8\\}}", "8"),
    ("\\boxed{7 \\pm 1}", "7"),
    ("\\boxed{7 \\pm 1}", "8"),
    ("\\boxed{7 \\mp 1}", "8"),
    ("\\boxed{±7}", "7"),
    ("\\boxed{7 ± 1}", "8"),
    ("\\boxed{∓7}", "7"),
    ("\\boxed{[7, 7]}", "7"),
    ("\\boxed{(6, 8)}", "7"),
    ("\\boxed{6 < x < 8}", "7"),
    ("\\boxed{7} \\fbox{8}", "8"),
    ("$\\boxed{7}$ and $\\boxed{8}$", "7"),
    ("#### 7 or 8", "8"),
    ("Answer: 7\nHmm, let me reconsider.\nAnswer: 8", "8"),  # two explicit answers: a hedge
    ("**Final Answer:** 7. Alternatively, Final Answer: 8.", "8"),
    ("So the total is \\boxed{7}.\n\nFinal Answer: 8", "7"),  # a box and an Answer: line that differ
    ("#### 8\nAnswer: \\boxed{7}", "7"),
    # relations and approximations
    ("\\boxed{\\approx 7}", "7"),
    ("\\boxed{≈ 7}", "7"),
    ("\\boxed{x \\approx 7}", "7"),
    ("\\boxed{\\sim 7}", "7"),
    ("\\boxed{∼7}", "7"),
    ("The answer is ~7.", "7"),
    ("\\boxed{\\simeq 7}", "7"),
    ("\\boxed{\\ne 7}", "7"),
    ("\\boxed{x \\geq 7}", "7"),
    ("\\boxed{\\text{about } 7}", "7"),
    ("\\boxed{\\lesssim 7}", "7"),
    ("\\boxed{\\gtrsim 7}", "7"),
    ("\\boxed{≲ 7}", "7"),
    ("\\boxed{⩽ 7}", "7"),
    ("\\boxed{\\leqq 7}", "7"),
    ("\\boxed{\\ll 7}", "7"),
    ("\\boxed{\\propto 7}", "7"),
    ("\\boxed{\\doteq 7}", "7"),
    ("\\boxed{\\neq7}", "7"),  # a command's end is where its letters end
    ("\\boxed{7\\sim8}", "7"),
    ("\\boxed{7+}", "7"),  # "7 or more"
    ("\\boxed{7^+}", "7"),  # a one-sided limit
    ("\\boxed{7^{-}}", "7"),
    ("\\boxed{7⁺}", "7"),
    ("\\boxed{7 \\pm}", "7"),
    ("\\boxed{7|8}", "7"),
    ("\\boxed{7 \\mid 8}", "7"),
    # words after the number that are not its unit
    ("The answer is 7 ish.", "7"),
    ("\\boxed{7\\text{ish}}", "7"),
    ("\\boxed{7 \\text{ tops}}", "7"),
    ("\\boxed{7 \\text{ max}}", "7"),
    ("\\boxed{7 \\text{ minimum}}", "7"),
    ("\\boxed{7 \\text{ or more}}", "7"),
    # signs, scripts and powers that change the value
    ("\\boxed{–7}", "7"),  # an en dash: minus seven
    ("\\boxed{－7}", "7"),  # a full-width hyphen-minus
    ("\\boxed{7²}", "7"),
    ("\\boxed{7½}", "7"),  # math_verify dropped the ½
    ("\\boxed{7^{2}}", "7"),
    ("\\boxed{10⁸}", "8"),
    ("\\boxed{2⁶⁴}", "18446744073709551615"),
    # not-a-number, infinities, numbers past every float
    ("\\boxed{\\text{NaN}}", "7"),
    ("\\boxed{0/0}", "0"),
    ("\\boxed{\\infty}", "10^{400}"),
    ("\\boxed{1e400}", "10^{400}+1"),
    ("\\boxed{1e400}", "1e401"),
    ("\\boxed{10^{400}}", "\\infty"),
    ("\\boxed{0.9999999999999999999}", "1"),
    ("\\boxed{1.0000000000000000001}", "1"),
    ("\\boxed{10^{10^{10}}}", "1"),
    ("\\boxed{2^{2^{2^{2^{2}}}}}", "0"),
]

# Many different roots multiplied by many others: every product once needed a square-free factorisation by trial
# division (~5,000 steps each for radicands near 10^4, 4,096 products per answer).
ROOTS = [n for n in range(9000, 10000) if all(n % (p * p) for p in range(2, 100))][:64]
ROOT_SUM = "+".join(f"\\sqrt{{{n}}}" for n in ROOTS)
SLOW: list[tuple[str, str]] = [
    (f"\\boxed{{({ROOT_SUM})({ROOT_SUM})}}", "7"),
    (" ".join(f"\\boxed{{({ROOT_SUM})({ROOT_SUM})+{i}}}" for i in range(4)), "7"),  # a hedge of them
    ("\\boxed{9^{9^{9^{9}}}}", "1"),
    ("\\boxed{(10^{9999})^{10}}", "1"),
    ("\\boxed{" + "\\sqrt{2}" * 64 + "}", "2^{32}"),
]
