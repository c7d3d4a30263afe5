"""env=code_repair: the model writes a program, reward=unit_tests runs it against the row's tests, and what failed
comes back, as a user running the tests would see it, until every test passes or `max_turns` runs out.

The observation (rlx.envs.feedback) after a turn that did not PASS:

    3 of 5 tests failed.
    f(-3) returned -3
    f(0) raised ZeroDivisionError: division by zero
    Fix the program.

One line per failing test (at most `max_failures`, the rest counted): the call of the function under test with
its arguments (`show_calls`; the test's own text is not shown), and what the code returned, printed or raised.
The expected value is never shown: reward=unit_tests keeps it out of a training run's verdicts (issue 26) and the
call is cut out of the test's source here, so `assert abs(f(x) - 0.5) < 1e-6` shows `f(x)` and no constant of
the comparison. A program that does not load shows the loader's error (a SyntaxError is FORMAT), one that hangs
or exits shows how its session ended, with the tail of its own output. Each line is bounded, and the whole
observation is cut to `max_observation_chars`.

Works on every format reward=unit_tests scores: data=programs (asserts on `f`), data=humaneval
(`check(candidate)`: `candidate` is shown under the row's `entry_point`), stdin/stdout rows (the case's stdin and
what the program printed).
"""

from __future__ import annotations

import ast

from rlx import syntax
from rlx.envs.feedback import FeedbackEnv, clip, one_line
from rlx.errors import ConfigError
from rlx.rewards.base import Reward, Verdict
from rlx.rewards.code.reward import CodeTestsReward

VALUE_CHARS = 120  # a returned value, a printed output or an error's detail, per line
CALL_CHARS = 160  # a call with its arguments
SKIPPED = ("NotReached", "NotRun")  # tests after the one where the session ended: nothing to say about them


def called(label: str, names: set[str], shown_as: str) -> str | None:
    """The outermost call of the function under test (a name in `names`) in a test's source, with its
    arguments, as the model would write it (`candidate` renamed to `shown_as`); None where there is none or
    the source does not parse. Only the call is kept, never the comparison around it (the expected value)."""
    try:
        tree = syntax.parse(label.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):  # breadth first: the outermost call comes first
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            if shown_as:
                node.func = ast.Name(shown_as, ast.Load())
            try:
                return clip(ast.unparse(node), CALL_CHARS)
            except (RecursionError, ValueError):
                return None
    return None


class CodeRepairEnv(FeedbackEnv):
    def __init__(
        self,
        reward: Reward,
        max_turns: int,
        max_observation_chars: int,
        max_failures: int,
        show_calls: bool,
        instruction: str,
        observation_role: str | None = None,
    ) -> None:
        """reward: the run's reward=unit_tests (passed by rlx.train: conf/env/code_repair.yaml is `_partial_: true`)."""
        super().__init__(reward, max_turns, max_observation_chars, observation_role)
        if not (isinstance(max_failures, int) and max_failures >= 1):
            raise ConfigError(f"env.max_failures must be an int >= 1 (got {max_failures!r}): the failing tests shown")
        if not isinstance(reward, CodeTestsReward):
            raise ConfigError(
                f"env=code_repair scores with reward=unit_tests (got {type(reward).__name__}): set reward=unit_tests"
            )
        self.unit_tests = reward
        self.max_failures, self.show_calls, self.instruction = max_failures, show_calls, instruction

    def _calls(self, row: dict) -> tuple[list[str], list[str], str]:
        """The row's test labels, stdin inputs and the name its function is shown under ("" for stdio)."""
        parsed = self.unit_tests.tests(row)
        entry = row.get("entry_point") or row.get("fn_name") or ""
        name = entry if isinstance(entry, str) and entry.isidentifier() else ""
        return list(parsed.labels), list(parsed.inputs), name

    def _line(self, test: dict, labels: list[str], inputs: list[str], name: str) -> str:
        index = test.get("test", test.get("case"))
        what = f"test {index + 1}" if isinstance(index, int) and index >= 0 else "the test program"
        if self.show_calls and isinstance(index, int) and 0 <= index < len(labels):
            if inputs:
                what = f"case {index + 1} (stdin {one_line(inputs[index], VALUE_CHARS)})"
            else:
                what = called(labels[index], {"candidate", name} - {""}, name) or what
        if test.get("error") == "Timeout":
            return f"{what} did not finish in time ({one_line(test.get('detail', ''), VALUE_CHARS)})"
        if "error" in test:
            detail = test.get("detail")
            said = f": {one_line(detail, VALUE_CHARS)}" if detail else ""
            return f"{what} raised {one_line(test['error'], 40)}{said}"
        if "got" in test:
            verb = "printed" if inputs else "returned"
            return f"{what} {verb} {one_line(test['got'], VALUE_CHARS)}"
        return f"{what} failed"

    def describe(self, verdict: Verdict, row: dict, completion: str) -> str:
        """What the tests said (reward=unit_tests ran the code: the completion itself adds nothing)."""
        details = verdict.details
        tests = details.get("tests")
        lines: list[str] = []
        if isinstance(tests, list) and tests:
            labels, inputs, name = self._calls(row)
            failing = [t for t in tests if isinstance(t, dict) and not t.get("ok") and t.get("error") not in SKIPPED]
            lines.append(f"{len(tests) - int(details.get('passed', 0))} of {len(tests)} tests failed.")
            lines += [self._line(t, labels, inputs, name) for t in failing[: self.max_failures]]
            if len(failing) > self.max_failures:
                lines.append(f"({len(failing) - self.max_failures} more failing tests not shown)")
            skipped = sum(isinstance(t, dict) and t.get("error") in SKIPPED for t in tests)
            if skipped:
                lines.append(f"({skipped} tests not run: the test program stopped earlier)")
            if "reason" in details and not any(t.get("error") == "Timeout" for t in failing):
                lines.append(one_line(details["reason"], 2 * VALUE_CHARS))
        else:
            lines.append(f"The program did not run ({verdict.status.value}): {one_line(details.get('reason'), 300)}")
        tail = details.get("output_tail")
        if tail:
            lines.append(f"Its output ended with: {one_line(tail, 2 * VALUE_CHARS)}")
        lines.append(self.instruction)
        return "\n" + "\n".join(lines) + "\n"
