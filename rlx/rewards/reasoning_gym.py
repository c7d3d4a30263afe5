"""reward=reasoning_gym: a completion scored by its reasoning-gym dataset's own `score_answer`.

As reasoning-gym's own evaluation does: `reasoning_gym.utils.extract_answer` takes the last <answer>...</answer>
(None without one), then `dataset.score_answer(answer, entry)` against the row's kept entry. Around that call:

- A scorer that raises (prime_factorization's on non-numeric text) gives a labelled 0 (FORMAT, the exception in
  `details`), never a crashed trainer.
- Scorers of some datasets eval() the answer (string_insertion, spiral_matrix, binary_matrix, n_queens) or parse it
  with sympy, which evals too (the integration, polynomial, countdown, puzzle24 and propositional_logic ones).
  Which ones is read from the dataset's module source at start (`eval(`, `sympify`, `parse_expr`), not from a
  list. Their answers reach the scorer only when `safe_expression` accepts them; anything else is a VIOLATION.
- Graded credit (28 datasets pay partial scores) is kept as the library pays it, status FAIL below 1.0, unless
  `partial_credit=false` makes every score below 1.0 a 0. At start the scorer is shown a nonsense answer on a few
  held-out entries: what it pays is the dataset's floor (logged, and a score at or below it is labelled
  `floor` in `details`); a dataset that pays it 1.0 (game_of_life_halting in 0.1.25 pays any non-empty answer)
  is refused, since nothing could be learnt from it.
"""

from __future__ import annotations

import ast
import inspect
import logging
import re
import sys

from rlx import syntax
from rlx.errors import ConfigError
from rlx.rewards.base import Reward, Status, Verdict

try:  # optional dependency: reasoning_gym (the [reasoning-gym] extra)
    from reasoning_gym.utils import extract_answer
except ImportError:  # pragma: no cover - exercised where the extra is absent
    extract_answer = None

log = logging.getLogger(__name__)
INSTALL = 'pip install -c constraints/cpu.txt -e ".[reasoning-gym]"'
INSTALL = 'pip install -c constraints/cpu.txt -e ".[reasoning-gym]"'
EVALUATING = re.compile(r"\beval\(|\bsympify\b|\bparse_expr\b")
PROBE = "rlx probe: not an answer"  # what no dataset's question asks for
PROBE_ENTRIES = 8
# Names an evaluated answer may never mention: Python's ways to reach code, objects and files.
UNSAFE_NAMES = frozenset(
    "eval exec compile open input breakpoint help exit quit globals locals vars dir getattr setattr delattr "
    "type object super memoryview classmethod staticmethod property import lambda os sys subprocess".split()
)
SAFE_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop,
    ast.List, ast.Tuple, ast.Set, ast.Call, ast.Compare, ast.cmpop, ast.BoolOp, ast.boolop,
)  # fmt: skip
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def safe_expression(text: str) -> bool:
    """Whether `text` may be handed to a scorer that evaluates it: a Python expression of literals, names and
    calls of names, arithmetic, comparisons and containers (no attribute, subscript, lambda or comprehension;
    no name starting with `_` or in UNSAFE_NAMES), or text Python cannot parse (sympy's implicit products, "2x")
    holding no such name, no `__` and no attribute access (a `.` before a letter)."""
    try:
        tree = syntax.parse_expression(text.strip())
    except (SyntaxError, ValueError):
        names = IDENTIFIER.findall(text)
        return "__" not in text and not re.search(r"\.\s*[A-Za-z_]", text) and not UNSAFE_NAMES.intersection(names)
    for node in ast.walk(tree):
        if not isinstance(node, SAFE_NODES):
            return False
        if isinstance(node, ast.Name) and (node.id.startswith("_") or node.id in UNSAFE_NAMES):
            return False
        if isinstance(node, ast.Call) and (node.keywords or not isinstance(node.func, ast.Name)):
            return False
    return True


class ReasoningGymReward(Reward):
    """Scores with the bound data=reasoning_gym task's dataset (`bind`). Components: `correct` (1.0 on a full
    score) and `partial` (the graded score below 1.0 that was paid)."""

    required_fields = ("entry",)
    _sample_fields = ("answer",)  # the oracle answer beside a completion, not the whole generated entry

    def __init__(self, partial_credit: bool) -> None:
        if extract_answer is None:
            raise ConfigError(f"reward=reasoning_gym needs the reasoning-gym extra: {INSTALL}")
        self.partial_credit = partial_credit
        self.dataset = None
        self.guarded = False
        self.floor = 0.0

    def bind(self, task) -> None:
        """Take the task's dataset (its scorer), find whether it evaluates answers, and measure its floor."""
        dataset = getattr(task, "dataset", None)
        if dataset is None or not hasattr(dataset, "score_answer"):
            raise ConfigError(
                f"reward=reasoning_gym scores data=reasoning_gym's rows (got {type(task).__name__}): "
                "set data=reasoning_gym data.name=<dataset>"
            )
        self.dataset = dataset
        self.guarded = bool(EVALUATING.search(inspect.getsource(sys.modules[type(dataset).__module__])))
        paid = [self._probe(row["entry"]) for row in task.val[:PROBE_ENTRIES]]
        self.floor = max(paid)
        if self.floor >= 1.0:
            raise ConfigError(
                f"data.name={task.name}: its score_answer pays {self.floor} to a nonsense answer ({PROBE!r}), so a "
                "policy would be rewarded for anything and learn nothing: choose another reasoning-gym dataset"
            )
        if self.floor > 0:
            log.info("reward=reasoning_gym: %s pays %.3g to any wrong answer (labelled floor)", task.name, self.floor)
        if self.guarded:
            log.info("reward=reasoning_gym: %s's scorer evaluates answers; unsafe ones are a VIOLATION", task.name)

    def _probe(self, entry: dict) -> float:
        try:
            return self._score(PROBE, entry)
        except Exception:  # a scorer that refuses non-numeric text (prime_factorization) pays nothing
            return 0.0

    def _score(self, answer: str | None, entry: dict) -> float:
        assert self.dataset is not None
        return float(self.dataset.score_answer(answer, entry))

    def __call__(self, completions: list[str], rows: list[dict]) -> list[Verdict]:
        if self.dataset is None:
            raise RuntimeError("ReasoningGymReward scores only after bind(task) has given it the dataset")
        return [self.verdict(completion, row["entry"]) for completion, row in zip(completions, rows, strict=True)]

    def verdict(self, completion: str, entry: dict) -> Verdict:
        answer = extract_answer(completion)
        if answer is not None and self.guarded and not safe_expression(answer):
            return Verdict(0.0, Status.VIOLATION, {"correct": 0.0}, {"why": "an unsafe answer to an evaluating scorer"})
        try:
            score = self._score(answer, entry)
        except Exception as err:  # the library's scorer on the model's text: a labelled 0, never a crash
            return Verdict(0.0, Status.FORMAT, {"correct": 0.0}, {"scorer_error": f"{type(err).__name__}: {err}"})
        details: dict = {"answer": answer, "score": score}
        if answer is not None and 0 < score <= self.floor:
            details["floor"] = True
        if score >= 1.0:
            return Verdict(1.0, Status.PASS, {"correct": 1.0, "partial": 0.0}, details)
        paid = score if self.partial_credit else 0.0
        status = Status.FORMAT if answer is None else Status.FAIL
        return Verdict(paid, status, {"correct": 0.0, "partial": paid}, details)
