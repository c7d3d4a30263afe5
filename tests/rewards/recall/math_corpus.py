"""Final answers as models and datasets write them (written for rlx): each honest completion must earn full credit
from reward=math (strict=false) against its row's `answer`, each adversarial one nothing. (completion, answer)."""

from __future__ import annotations

HONEST: list[tuple[str, str]] = [
    ("\\boxed{7}", "7"),
    ("So the answer is $\\boxed{\\frac{1}{2}}$.", "0.5"),
    ("Half of it: \\boxed{0.5}", "\\frac{1}{2}"),
    ("She sells 1,234 of them.\n#### 1,234", "1234"),
    ("3 * 4 = 12 dollars in all.\n#### 12", "He pays 3 * 4 = 12.\n#### 12"),  # GSM8K's own reference
    ("Adding them up, the answer is 7.", "7"),
    ("The final answer is $7$. I hope it is correct.", "7"),
    ("Answer: 7.0", "7"),
    ("**Answer:** 42", "42"),
    ("The area of the square is 49 cm^2.", "49"),
    ("Area: \\boxed{49\\text{ cm}^2}", "49"),
    ("There are \\boxed{1{,}000} ways.", "1000"),
    ("\\boxed{1{,}000}", "1{,}000"),
    ("\\boxed{\\dfrac{3}{4}}", "\\frac{3}{4}"),
    ("\\boxed{\\tfrac34}", "0.75"),
    ("The solutions are \\boxed{2, 3}.", "3, 2"),
    ("\\boxed{(1, -2)}", "(1,-2)"),
    ("It costs \\boxed{\\$5.50}.", "5.5"),
    ("\\boxed{25\\%}", "25"),
    ("The angle is \\boxed{90^\\circ}.", "90"),
    ("\\boxed{-\\frac{7}{2}}", "-3.5"),
    ("The solution is $x = 5$.", "5"),
    ("\\boxed{x=5}", "5"),
    ("\\boxed{18446744073709551615}", "2^{64}-1"),
    ("\\boxed{2^{10}}", "1024"),
    ("Rounded: \\boxed{0.333}", "0.33"),  # more digits than the reference states, rounding to it
    ("\\boxed{\\frac{1}{3}}", "0.33"),
    ("\\boxed{\\text{(B)}}", "(B)"),
    ("\\boxed{\\sqrt{2}}", "\\sqrt{2}"),
    ("The probability is $\\frac{5}{6}$.", "\\frac{5}{6}"),
    ("He spent $5 on apples and $7 on pears, so $12 in total.", "12"),
    ("The perimeter is 12 units.", "12"),
    ("It takes \\boxed{3 \\text{ hours}}.", "3"),
    ("\\boxed{\\left( 0, \\frac{1}{2} \\right]}", "(0, 0.5]"),
    ("\\boxed{-0}", "0"),
    ("\\boxed{12,345,678}", "12345678"),
    # written for the second red team (formats nobody here had tried)
    (
        "Janet makes 9 * 2 = $18 every day.\n#### 18",
        "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer's market.\n#### 18",
    ),
    ("\\boxed{\\tfrac{1}{2}}", "1/2"),
    ("She pays 5 dollars.", "5"),
    ("The answer is 18 apples.", "18"),
    ("\\boxed{\\frac{\\sqrt{2}}{2}}", "\\frac{\\sqrt2}{2}"),
    ("\\boxed{\\sqrt{2}/2}", "\\frac{\\sqrt{2}}{2}"),
    ("\\boxed{\\frac{1}{\\sqrt{2}}}", "\\frac{\\sqrt2}{2}"),
    ("\\boxed{\\sqrt{8}}", "2\\sqrt{2}"),
    ("\\boxed{3\\sqrt{2}}", "3\\sqrt2"),
    ("\\boxed{2\\pi}", "2\\pi"),
    ("\\boxed{\\frac{1}{2}\\pi}", "\\frac{\\pi}{2}"),
    ("\\boxed{\\sqrt{2}}", "1.4142"),  # an exact root rounds to the reference's stated digits
    ("\\boxed{10^{3}}", "1000"),
    ("\\boxed{1.5 \\times 10^{3}}", "1500"),
    ("\\boxed{1.5e3}", "1500"),
    ("\\boxed{1\\frac{1}{2}}", "\\frac{3}{2}"),  # a mixed number
    ("\\boxed{\\dfrac{5}{2}}", "2\\frac12"),
    ("The answer is 1 1/2 cups.", "1.5"),
    ("\\boxed{50\\%}", "0.5"),  # a percent is its number or its hundredth
    ("\\boxed{\\frac{1}{4}}", "25\\%"),
    ("\\boxed{\\pm 2}", "\\pm 2"),
    ("\\boxed{3+\\sqrt{5}, 3-\\sqrt{5}}", "3 \\pm \\sqrt{5}"),
    ("\\boxed{0.\\overline{3}}", "\\frac{1}{3}"),  # repeating decimals are exact
    ("\\boxed{0.1666\\ldots}", "\\frac{1}{6}"),
    ("\\boxed{x \\in [1, 5]}", "[1,5]"),
    ("\\boxed{\\{1, 2, 3\\}}", "1, 2, 3"),
    ("\\boxed{x = 2 \\text{ or } x = 3}", "2, 3"),
    ("\\boxed{1\\,000\\,000}", "1000000"),
    ("\\boxed{\\textbf{(C)}}", "C"),
    ("It is 90 degrees.", "90^\\circ"),
    ("First \\boxed{7}. Checking again, the answer is \\boxed{7}.", "7"),  # one answer, stated twice
    ("\\boxed{٧}", "7"),  # a decimal digit of another script
    ("\\fbox{7}", "7"),
    ("So x = \\boxed{\\frac{-1 + \\sqrt{5}}{2}}", "\\frac{\\sqrt{5}-1}{2}"),
    ("\\boxed{5\\sqrt{2}}", "\\sqrt{50}"),
    ("\\boxed{6.02e23}", "6.02 \\times 10^{23}"),
    ("#### $1,234", "1234"),
]

ADVERSARIAL: list[tuple[str, str]] = [
    ("\\boxed{18446744073709551616}", "18446744073709551615"),  # 2^64 vs 2^64 - 1: equal as floats
    ("\\boxed{2^{64}}", "18446744073709551615"),
    ("\\boxed{0.1234568}", "0.1234567"),  # math_verify's 6-digit rounding accepted it
    ("\\boxed{123}", "1,2,3"),  # deleting every comma made these equal
    ("\\boxed{1,2,3}", "123"),
    ("\\boxed{2}", "49 cm^2"),  # the exponent of the unit is not the answer
    ("\\boxed{000}", "1{,}000"),  # what is left after the `{,}`
    ("\\boxed{7.4}", "7"),  # an integer reference is matched exactly
    ("\\boxed{2x}", "2"),
    ("\\boxed{2m}", "2"),  # 2 times m, not 2 metres
    ("\\boxed{(2, 1)}", "(1, 2)"),  # an ordered pair
    ("\\boxed{[1, 2]}", "(1, 2)"),  # closed vs open interval
    ("\\boxed{2}", "2, 3"),  # part of the solutions
    ("\\boxed{2, 3, 3}", "2, 3"),
    ("\\boxed{0.33}", "\\frac{1}{3}"),  # an approximation of an exact reference
    ("\\boxed{0.5}", "0.51"),
    ("\\boxed{\\frac{1}{0}}", "0"),
    ("\\boxed{78}", "7, 8"),
    ("\\boxed{2^{1000000000}}", "0"),  # not evaluated (size limit), and not 0
    ("I think it is 7 or maybe 8", "7"),
    ("\\boxed{7} or \\boxed{8}", "7"),
    ("\\boxed{1,000}", "1"),
    ("\\boxed{-7}", "7"),
    ("\\boxed{}", "0"),
    ("\\boxed{\\infty}", "1"),
    ("The answer is 7", "77"),
    # written for the second red team
    ("\\boxed{7}\\boxed{8}", "8"),  # a hedge: two different final answers
    ("#### 8\n#### 7", "7"),
    ("\\boxed{7 \\text{ or } 8}", "7"),
    ("\\boxed{1, 2, 3, 4, 5, 6, 7, 8, 9}", "7"),  # every candidate
    ("\\boxed{[0, 100]}", "7"),  # an interval is not a point
    ("\\boxed{\\neq 7}", "7"),  # math_verify read it as 7
    ("\\boxed{x \\neq 7}", "7"),
    ("\\boxed{\\text{not } 7}", "7"),
    ("\\boxed{\\neg 7}", "7"),
    ("\\boxed{7?}", "7"),
    ("\\boxed{7 \\text{ is wrong}}", "7"),  # math_verify picked the 7 out of the words
    ("\\boxed{7 \\text{ hours}}", "7 \\text{ minutes}"),  # both state a unit: it must be the same
    ("\\boxed{\\pm 7}", "7"),
    ("\\boxed{7}", "\\pm 7"),
    ("\\boxed{1\\frac12}", "\\frac12"),  # a mixed number is not a product
    ("\\boxed{1 1/2}", "11/2"),
    ("\\boxed{0.35}", "0.3"),  # rounds to 0.4
    ("\\boxed{1.4142}", "\\sqrt{2}"),  # an approximation of an exact root
    ("\\boxed{45^\\circ}", "\\frac{\\pi}{4}"),  # degrees against radians
    ("\\boxed{٨}", "7"),
    ("\\boxed{\\phantom{7}8}", "7"),  # renders as 8
    ("\\boxed{9^{9^{9}}}", "1"),  # not evaluated, never sent to the symbolic verifier's timeout
    ("\\boxed{" + "(" * 600 + "7" + ")" * 600 + "}", "8"),  # nested past the reader's depth: no RecursionError
    ("\\boxed{" + "\\sqrt{" * 300 + "x" + "}" * 300 + "}", "7"),
    ("\\boxed{\\boxed{" * 20000 + "}" * 40000, "1"),  # long answers compare as text: no cost grows
]
