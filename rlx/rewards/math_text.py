"""An answer's text without its decorations, for reward=math's reading (rlx.rewards.math_answer): delimiters and
`\\boxed{}`, LaTeX styling and spacing, what renders as nothing or struck out, units, currency, degrees, a
leading `x =`, thousands separators; spellings outside LaTeX (superscripts, typographic minus signs, vulgar
fractions, `±`, `∨`) turned into their LaTeX. The module docstring of math_answer states the rules.
"""

from __future__ import annotations

import re

from rlx.rewards.math_units import SHORT_UNIT, TEXT_UNIT, UNIT_TAIL, WORD_UNIT, is_unit, stated_unit

THOUSANDS = re.compile(r"(?<![\d,.])(-?\d{1,3}(?:,\d{3})+)(\.\d+)?(?![\d])(?!,\d)")
SPACED_THOUSANDS = re.compile(r"-?\d{1,3}(?: \d{3})+(?:\.\d+)?")  # "1 000 000", from 1\,000\,000 too
SPACING = re.compile(r"(?<!\\)((?:\\\\)*)(?:\\[,;:! ]|\\q?quad\b|~)")  # "\\ " is a row break, then a space
DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))

HIDDEN = ("\\phantom", "\\hphantom", "\\vphantom", "\\cancel", "\\bcancel", "\\xcancel", "\\sout", "\\st")

# A tilde is LaTeX's unbreakable space, except right before a number at the start or after a space ("~7", "is
# ~7"): there it says "about", the relation \approx.
ABOUT = re.compile(r"(?:^|(?<=\s))~(?=\s*[-+]?\.?\d)")
# Typographic minus signs (the hyphen, the figure and en dashes, the small and full-width hyphen-minus): a minus,
# so "–7" is -7, never 7 with a stray mark a symbolic verifier would drop.
MINUS = str.maketrans(dict.fromkeys("\u2010\u2011\u2012\u2013\u2212\ufe63\uff0d", "-"))
SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
SUPERSCRIPT = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻]+")  # 10⁸ is 10^{8} and 7² is 49: an exponent, not a digit to drop
VULGAR = {  # the vulgar fraction characters as (numerator, denominator)
    "½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5), "⅖": (2, 5), "⅗": (3, 5),
    "⅘": (4, 5), "⅙": (1, 6), "⅚": (5, 6), "⅐": (1, 7), "⅛": (1, 8), "⅜": (3, 8), "⅝": (5, 8), "⅞": (7, 8),
    "⅑": (1, 9), "⅒": (1, 10),
}  # fmt: skip
LOGICAL = re.compile(r"\\(?:lor|vee)\b|∨|\\(?:land|wedge)\b|∧")  # "7 \lor 8" is "7 or 8": two answers


def braced(text: str, start: int) -> tuple[str, int] | None:
    """The contents of the {...} group opening at text[start], and the index after it (nested braces kept)."""
    if start >= len(text) or text[start] != "{":
        return None
    depth = 0
    for index in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[start + 1 : index], index + 1
    return None


def unwrap(text: str, commands: tuple[str, ...], keep: bool = True) -> str:
    """Every `\\cmd{x}` of `commands` replaced by x (or removed when not `keep`)."""
    for command in commands:
        position = 0
        while (start := text.find(command + "{", position)) != -1:
            group = braced(text, start + len(command))
            if group is None:
                break
            text = text[:start] + (group[0] if keep else "") + text[group[1] :]
            position = start
    return text


def strip_delimiters(text: str) -> str:
    changed = True
    while changed:
        changed = False
        text = text.strip()
        if text.startswith("\\boxed{") and (group := braced(text, 6)) and group[1] == len(text):
            text, changed = group[0], True
        for left, right in DELIMITERS:
            if len(text) > len(left) + len(right) and text.startswith(left) and text.endswith(right):
                text, changed = text[len(left) : -len(right)], True
                break
        if text.endswith(".") and not text.endswith("..") and not text.endswith("\\."):
            text, changed = text[:-1], True
    return text


def decorated(answer: str) -> str:
    """The answer without delimiters, LaTeX styling and what renders as nothing or struck out."""
    # MATH's thousands separators: 1{,}000 and 1,\!000 (a comma with its space taken back), never "1, 000"
    text = answer.translate(MINUS).replace("{,}", ",").replace(",\\!", ",").replace("**", "").replace("π", "\\pi ")
    text = text.replace("×", "\\times ").replace("·", "\\cdot ").replace("÷", "\\div ")
    text = text.replace("±", "\\pm ").replace("∓", "\\pm ")
    text = re.sub(r"\\mp(?![A-Za-z])", r"\\pm", text)  # a ∓ b is the same two values as a ± b
    # 3½ is the mixed number 3\\frac{1}{2}, never 3 with a mark a symbolic verifier drops
    text = re.sub("[" + "".join(VULGAR) + "]", lambda m: "\\frac{{{}}}{{{}}} ".format(*VULGAR[m.group(0)]), text)
    text = SUPERSCRIPT.sub(lambda m: "^{" + m.group(0).translate(SUPERSCRIPTS) + "}", text)
    text = LOGICAL.sub(lambda m: " and " if m.group(0) in ("\\land", "\\wedge", "∧") else " or ", text)
    text = re.sub(r"\.\.\.|…|\\[lc]?dots\b", r"\\ldots ", text).rstrip()  # an ellipsis is one mark, not periods
    text = re.sub(r"√\s*(\d+)", r"\\sqrt{\1}", text)
    text = ABOUT.sub(r"\\approx ", strip_delimiters(text))
    text = re.sub(r"\\[dt]frac", r"\\frac", text)
    # one-token arguments braced, so that text compares alike however it was spelled: \frac12x is \frac{1}{2}x
    text = re.sub(r"\\frac\s*(\d)\s*(\d)", r"\\frac{\1}{\2}", text)
    text = re.sub(r"\\sqrt\s*(\d)", r"\\sqrt{\1}", text)
    text = re.sub(r"\\left\b|\\right\b|\\displaystyle\b", "", text)
    text = unwrap(text, HIDDEN, keep=False)
    text = re.sub(r"\\color\{[^{}]*\}", "", text)
    text = unwrap(text, ("\\textcolor",), keep=False)  # \textcolor{red}{7}: its colour goes, {7} stays
    return SPACING.sub(lambda m: m.group(1) + " ", text)


def units(answer: str) -> tuple[str | None, bool]:
    """(the unit the answer states, whether it states a percent)."""
    text = decorated(answer)
    return stated_unit(text), bool(re.search(r"%|\bpercent\b", text))


def normalise(answer: str) -> str:
    """The answer without its decorations (module docstring); thousands separators removed."""
    text = decorated(answer)
    text = re.sub(r"\^\s*\{?\\circ\}?|°|\\degree\b", "", text)
    unit = TEXT_UNIT.search(text)  # a \text{...} (or \mbox, \mathrm) unit after a number: "49\text{ cm}^2"
    if unit is not None and is_unit(unit.group(1)):
        text = text[: unit.start()]
    text = unwrap(text, ("\\text", "\\textbf", "\\mbox", "\\mathrm", "\\mathbf", "\\boldsymbol", "\\bm"))
    text = text.replace("\\%", "").replace("%", "").replace("\\$", "").replace("$", "")
    text = re.sub(r"^[A-Za-z](?:\s*\(\s*[A-Za-z]\s*\))?\s*(?:=|\\in\b)\s*(?=\S)", "", text.strip())  # x = 5, f(x) = 2x
    text = SHORT_UNIT.sub("", UNIT_TAIL.sub("", text)).strip()
    word = WORD_UNIT.search(text)
    if word is not None and is_unit(word.group(1)):
        text = text[: word.start()]
    text = THOUSANDS.sub(lambda m: m.group(1).replace(",", "") + (m.group(2) or ""), text)
    text = re.sub(r"(?<=\d)\s*\\ldots$", "", text) if re.fullmatch(r"-?\d+\s*\\ldots", text) else text
    text = re.sub(r"(?<![.\\])\.$", "", " ".join(text.split())).strip()
    if SPACED_THOUSANDS.fullmatch(text):
        text = text.replace(" ", "")
    choice = re.fullmatch(r"\(([A-Za-z])\)", text)  # a multiple-choice letter: "(C)" is C
    return choice.group(1) if choice else text
