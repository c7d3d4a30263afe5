"""reward=math: the completion's final answer must equal the row's `answer`.

`strict=True` requires the whole completion to be the answer, so a policy cannot earn reward by padding the
answer with other text. `strict=False` extracts the final answer (`extract_answer`: the last \\boxed{}, else
after the last `####`, `Answer:` or "the answer is", else the last inline math, else the last number; a
completion whose boxed answers, or `####` answers, differ is a hedge and scores 0); a
reference answer that itself carries a marker (GSM8K's "...#### 72", MATH's \\boxed{}) is extracted the same
way. `strict=None` (the config's default) lets the task decide (`Task.strict_answers`): strict on the bundled
arithmetic tasks, whose completions are the bare sum, extracting on user data (data=jsonl, data=hf_dataset),
where a strict match would score almost every free-text completion 0, silently.

The answer is compared by `verifier`: "exact" (rlx.rewards.math_answer: exact rationals, comma lists as lists,
units and LaTeX decorations dropped, rounding only to the reference's stated precision; text as text) or
"math_verify" (the same first; where text is involved and differs, symbolic equivalence by math_verify, e.g.
\\sqrt{2}/2 = \\frac{\\sqrt{2}}{2}, rounding numbers to no fewer digits than the reference states). math_verify
guards itself with SIGALRM, which only works on a process's main thread (off it, verl silently scored
everything 0), so it runs on the main thread of a dedicated worker process; a batch that overruns even that
is reported as INFRA, never as wrong.

Optional format component: `format_weight` × (the completion states its answer with an explicit marker),
added to correctness, so reward = correct + format_weight · format.
"""

from __future__ import annotations

import concurrent.futures as futures
import multiprocessing
import re

from rlx.rewards.base import Reward, Status, Verdict
from rlx.rewards.math_answer import decide, stated_decimals, wordy
from rlx.rewards.math_text import MINUS, braced, normalise

# a number, not an exponent ("49 cm^2" ends in 49, not 2) nor part of a name ("x2")
NUMBER = re.compile(r"(?<![\^\w.{])(?:-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d])(?!,\d)|-?\d+(?:\.\d+)?|-?\.\d+)")
# inline math as Pandoc reads it: the opening $ has no space after it and the closing one no space before it nor
# a digit after it, so prices ("$2 = $18", "costs $5 and $7") are not math
MATH_SPAN = re.compile(r"\$(?!\s)([^$]*[^\s$])\$(?!\d)|\\\((.+?)\\\)")
MARKER = re.compile(r"####|\banswer\s*:|\banswer\s+is\b\s*:?", re.IGNORECASE)
ANSWER_LINE = re.compile(r"\banswer\s*:", re.IGNORECASE)
WORD = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}")
BOX = re.compile(r"\\(?:boxed|fbox)\{")
SHOWN = 200  # characters of an extracted answer a verdict carries
MAX_FINALS = 16  # more different final answers than this is a hedge without comparing them


def _boxed(text: str) -> list[str]:
    """Contents of every \\boxed{...} (or \\fbox{...}), in order, with nested braces (\\boxed{\\frac{1}{2}})."""
    found: list[tuple[str, int]] = []
    for match in BOX.finditer(text):
        if found and match.start() < found[-1][1]:
            continue  # a box inside the last one
        group = braced(text, match.end() - 1)
        if group is None:
            break  # unclosed: every later box is inside it
        found.append(group)
    return [content for content, _ in found]


def extract_answer(text: str) -> str | None:
    """The last `\\boxed{...}`, else the rest of the line after the last `####`, `Answer:` or "the answer is"
    (up to a sentence's end), else the last inline math (`$...$`, `\\(...\\)`), else the last number."""
    boxed = _boxed(text)
    if boxed:
        return boxed[-1].strip() or None
    markers = list(MARKER.finditer(text))
    if markers:
        tail = text[markers[-1].end() :].strip()
        line = re.split(r"\n|\.\s", tail, maxsplit=1)[0].strip() if tail else ""
        return line or None
    # inline math that holds no plain word ("$5 on apples and $7" is two prices, not math)
    spans = [a or b for a, b in MATH_SPAN.findall(text) if not WORD.search(a or b)]
    if spans and spans[-1].strip():
        return spans[-1].strip()
    numbers = NUMBER.findall(text.translate(MINUS))  # "it is –4": a typographic minus is a minus
    return numbers[-1] if numbers else None


def _stated(text: str) -> list[str]:
    """The answers stated after `####` and `Answer:` (or "Final Answer:") markers, each up to its line's (or
    sentence's) end; a statement that holds a box is its box, and one in words ("Answer: let us first...") or empty
    states no answer."""
    tails = [part.split("\n", 1)[0] for part in text.split("####")[1:]]
    tails += [re.split(r"\n|\.\s", text[m.end() :].strip(), maxsplit=1)[0] for m in ANSWER_LINE.finditer(text)]
    return [t for t in tails if not BOX.search(t) and normalise(t) and not wordy(t)]


def hedged(text: str) -> bool:
    """Whether the completion states different final answers (`\\boxed{7} ... \\boxed{8}`, two `####` lines, a box
    and an `Answer:` line): a hedge is no answer, whichever of them the reference is. ("the answer is" in prose
    is not counted: reasoning says it of answers it then rejects.)"""
    finals = [*_boxed(text), *_stated(text)]
    distinct = list(dict.fromkeys(f.strip() for f in finals if f.strip()))  # the same text: the same answer
    if len(distinct) > MAX_FINALS:
        return True
    return any(decide(answer, distinct[-1]) is not True for answer in distinct[:-1])


def has_marker(text: str) -> bool:
    return bool(_boxed(text)) or MARKER.search(text) is not None


def answers_equal(predicted: str, reference: str) -> bool:
    """The exact verifier (rlx.rewards.math_answer.decide); differing text is not equal."""
    return decide(predicted, reference) is True


def math_verify_batch(pairs: list[tuple[str, str]], timeout_s: int) -> list[bool]:
    """Runs in the worker process's main thread, where math_verify's SIGALRM timeouts hold. rlx's exact reading
    decides first; math_verify only where text differs, rounding to the reference's stated digits (else 15)."""
    # deferred: math_verify loads in the scoring worker process, not in the trainer
    from latex2sympy2_extended.latex2sympy2 import NormalizationConfig
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    # its own unit stripping off: it read "2m" as 2 metres (rlx's reading has dropped real units already)
    normal = NormalizationConfig(basic_latex=True, units=False, malformed_operators=True, nits=True, boxed="all")
    config = [LatexExtractionConfig(normalization_config=normal), ExprExtractionConfig()]

    results = []
    for predicted, reference in pairs:
        known = decide(predicted, reference)
        if known is not None or wordy(predicted):  # words: math_verify would pick a number out of "7 is wrong"
            results.append(bool(known))
            continue
        try:
            gold = parse(f"${reference}$", extraction_config=config, parsing_timeout=timeout_s)
            target = parse(f"${predicted}$", extraction_config=config, parsing_timeout=timeout_s)
            digits = stated_decimals(reference)
            rounding = 15 if digits is None else digits
            same = bool(gold and target and verify(gold, target, float_rounding=rounding, timeout_seconds=timeout_s))
        except Exception:  # noqa: BLE001 - a hostile answer that breaks the parser (RecursionError) is not equal
            same = False
        results.append(same)
    return results


class MathReward(Reward):
    required_fields = ("answer",)

    def __init__(self, strict: bool | None, verifier: str, format_weight: float, timeout_s: int) -> None:
        if verifier not in ("exact", "math_verify"):
            raise ValueError(f"reward.verifier must be 'exact' or 'math_verify' (got {verifier!r})")
        self.strict, self.verifier, self.format_weight, self.timeout_s = strict, verifier, format_weight, timeout_s
        self._executor: futures.ProcessPoolExecutor | None = None

    def bind(self, task) -> None:
        """Resolve `strict=None` from the task this reward scores, or its class (`strict_answers` is a class
        attribute); called once at start by rlx.train and rlx.score."""
        if self.strict is None:
            self.strict = task.strict_answers

    def _verify(self, pairs: list[tuple[str, str]]) -> list[bool] | None:
        """math_verify on a dedicated process; None when the worker broke or overran (INFRA)."""
        if self._executor is None:
            self._executor = futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        budget = 30 + 2 * self.timeout_s * len(pairs)
        try:
            return self._executor.submit(math_verify_batch, pairs, self.timeout_s).result(timeout=budget)
        except (futures.TimeoutError, futures.process.BrokenProcessPool):
            self.close()
            return None

    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]:
        if self.strict is None:
            raise RuntimeError("MathReward(strict=None) scores only after bind(task) has chosen the strictness")
        verdicts: list[Verdict | None] = [None] * len(completions)
        pending = []
        for index, (completion, row) in enumerate(zip(completions, rows, strict=True)):
            predicted = completion.strip() if self.strict else extract_answer(completion)
            formatted = float(bool(predicted) if self.strict else has_marker(completion))
            if not predicted:
                verdicts[index] = Verdict(0.0, Status.FORMAT, {"correct": 0.0, "format": 0.0})
                continue
            if not self.strict and hedged(completion):
                shown = {"extracted": predicted[:SHOWN], "reason": "different final answers (a hedge)"}
                verdicts[index] = Verdict(0.0, Status.FAIL, {"correct": 0.0, "format": formatted}, shown)
                continue
            pending.append((index, predicted, self._reference(str(row["answer"])), formatted))
        if self.verifier == "math_verify" and pending:
            outcomes = self._verify([(p, r) for _, p, r, _ in pending])
        else:
            outcomes = [answers_equal(p, r) for _, p, r, _ in pending]
        for position, (index, predicted, _, formatted) in enumerate(pending):
            if outcomes is None:
                verdicts[index] = Verdict(0.0, Status.INFRA, {}, {"reason": "math_verify worker broke or overran"})
                continue
            correct = float(outcomes[position])
            verdicts[index] = Verdict(
                correct + self.format_weight * formatted,
                Status.PASS if correct else Status.FAIL,
                {"correct": correct, "format": formatted},
                {"extracted": predicted[:SHOWN] + ("..." if len(predicted) > SHOWN else "")},
            )
        done = [v for v in verdicts if v is not None]
        assert len(done) == len(verdicts), "every completion has a verdict: FORMAT, INFRA or the verifier's"
        return done

    def _reference(self, answer: str) -> str:
        if self.strict or not has_marker(answer):
            return answer
        return extract_answer(answer) or answer

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
