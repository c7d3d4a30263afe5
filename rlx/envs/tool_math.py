"""env=tool_math: math with a calculator and Python. A turn either calls one tool or answers:

    <tool>calc: 2*(3+4)**2</tool>                 -> <result>98</result>
    <tool>python: print(sum(range(101)))</tool>   -> <result>5050</result>
    The total is 98. Answer: 98                   -> scored by reward=math; the episode ends

The call runs to the stop string `</tool>` (declared as `stop`, so the turn loop ends the model's turn there;
a turn cut before it, by the stop or by max_new_tokens, still counts as the call it started). The tool's result,
or its error, comes back as the observation; the next turn goes on from it. A turn without a `<tool>` call is
the final answer, scored by the run's reward=math (which extracts `\\boxed{}`, `Answer:` and the other markers
it knows, or takes the whole completion under strict): that verdict is the turn's and the episode's.
A tool turn's verdict is a labelled zero (FAIL, reward 0, `details.tool`): no answer yet.

calc is an evaluator of Python's arithmetic syntax over the parsed tree (no eval): numbers, + - * / // % **,
parentheses, `pi`, `e` and the functions in FUNCTIONS; integer results stay exact, and an operation whose
result would pass MAX_BITS bits (9**9**9) is refused before it is computed. python runs in rlx's sandbox
(reward=unit_tests' harness: its own process in a jail, no network, no files of the host, the `python.limits`
below, `python.timeout_s` per call); what it prints is the result. Anything hostile or broken in a call (an
unknown tool, a syntax error, a loop, an exception, a flood of output) is an error observation, never a crash.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import operator
import re
from collections.abc import Callable
from typing import Any

from rlx import syntax
from rlx.envs.feedback import EpisodeState, check_common, clip, printable, render
from rlx.envs.protocol import Observation, Turn
from rlx.errors import ConfigError
from rlx.rewards.base import Reward, Status, Verdict
from rlx.rewards.code.reward import HARNESS, MODULES
from rlx.rewards.sandbox.session import Failure, Limits, Sandbox, Session

TOOLS = ("calc", "python")
RESULT = "\n<result>\n{}\n</result>\n"  # a tool's result, as text after the call
CALL = re.compile(r"<tool>\s*([A-Za-z_]\w*)?\s*:?(.*?)(?:</tool>|\Z)", re.DOTALL)
MAX_BITS = 10_000  # an integer result larger than this is refused (about 3,000 digits)
MAX_EXPRESSION = 1_000  # characters of a calc expression
MAX_FACTORIAL = 1_000
# The call runs as __main__ in fresh globals; an exception is printed as Python's last traceback line would be.
WRAPPER = (
    "try:\n    exec(compile({code!r}, '<tool>', 'exec'), {{'__name__': '__main__'}})\n"
    "except BaseException as err:\n    print(f'{{type(err).__name__}}: {{err}}')\n"
)


class CalcError(ValueError):
    """What the calculator refused, said to the model."""


def _factorial(n):
    if not (isinstance(n, int) and 0 <= n <= MAX_FACTORIAL):
        raise CalcError(f"factorial takes an integer in [0, {MAX_FACTORIAL}]")
    return math.factorial(n)


def _round(x, digits=None):
    if digits is not None and not (isinstance(digits, int) and abs(digits) <= 100):
        raise CalcError("round's digits must be an integer in [-100, 100]")  # round(n, -10**9) computes 10**10**9
    return round(x, digits)


FUNCTIONS: dict[str, Callable] = {
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "abs": abs,
    "round": _round,
    "floor": math.floor,
    "ceil": math.ceil,
    "min": min,
    "max": max,
    "gcd": math.gcd,
    "factorial": _factorial,
}
CONSTANTS = {"pi": math.pi, "e": math.e}
BINARY: dict[type, Callable] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _bits(value) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def _binary(op: ast.operator, left, right):
    if type(op) not in BINARY:
        hint = " (use ** for powers)" if isinstance(op, ast.BitXor) else ""
        raise CalcError(f"operator {type(op).__name__} is not supported{hint}")
    if isinstance(op, ast.Pow) and isinstance(right, int) and right > 0 and _bits(left) * right > MAX_BITS:
        raise CalcError(f"the result would have more than {MAX_BITS} bits")
    if isinstance(op, ast.Mult) and _bits(left) + _bits(right) > MAX_BITS:
        raise CalcError(f"the result would have more than {MAX_BITS} bits")
    return BINARY[type(op)](left, right)


def _evaluate(node: ast.AST):
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp):
        return _binary(node.op, _evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return CONSTANTS[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
        if node.keywords:
            raise CalcError(f"{node.func.id}() takes no keyword arguments")
        return FUNCTIONS[node.func.id](*[_evaluate(a) for a in node.args])
    shown = clip(ast.unparse(node), 40) if isinstance(node, ast.expr) else type(node).__name__
    raise CalcError(
        f"{shown!r} is not arithmetic: numbers, + - * / // % **, pi, e and {', '.join(FUNCTIONS)} are supported"
    )


def calculate(expression: str) -> str:
    """The value of an arithmetic expression as text, or `Error: ...` (never raises on any input)."""
    text = expression.strip()
    if len(text) > MAX_EXPRESSION:
        return f"Error: the expression is longer than {MAX_EXPRESSION} characters"
    try:
        value = _evaluate(syntax.parse_expression(text))
    except SyntaxError as err:
        return f"Error: the expression does not parse ({err.msg})"
    except (CalcError, ArithmeticError, ValueError, TypeError) as err:  # ZeroDivision, Overflow: arithmetic's own
        return f"Error: {type(err).__name__ if not isinstance(err, CalcError) else 'calc'}: {err}"
    except (RecursionError, MemoryError):
        return "Error: the expression is too deeply nested"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value) if math.isinf(value) else format(value, ".15g")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return f"Error: the result is not a real number ({type(value).__name__})"


def tool_call(completion: str) -> tuple[str, str] | None:
    """(tool name, its input) of the turn's first `<tool>` call, None where the turn calls no tool."""
    found = CALL.search(completion)
    if found is None:
        return None
    return (found.group(1) or "").strip(), found.group(2).strip()


class ToolMathEnv:
    #: the turn ends where the call does (the turn loop passes it to the engine as a stop string)
    stop: tuple[str, ...] = ("</tool>",)

    def __init__(
        self,
        reward: Reward,
        max_turns: int,
        max_observation_chars: int,
        tools: list[str],
        python: dict,
        observation_role: str | None = None,
    ) -> None:
        """reward: the run's reward=math (passed by rlx.train: the yaml is `_partial_: true`); tools: the ones a
        turn may call; python: the sandbox for `python` calls (workers, base_uid, timeout_s, limits)."""
        check_common(max_turns, max_observation_chars, observation_role)
        unknown = [t for t in tools if t not in TOOLS]
        if unknown or not tools:
            raise ConfigError(f"env.tools must be a non-empty list from {list(TOOLS)} (got {list(tools)})")
        self.reward, self.max_turns, self.tools = reward, max_turns, tuple(tools)
        self.required_fields: tuple[str, ...] = tuple(reward.required_fields)  # the rows reward=math reads
        self.max_observation_chars, self.observation_role = max_observation_chars, observation_role
        self.timeout_s = float(python["timeout_s"])
        if not self.timeout_s > 0:
            raise ConfigError(f"env.python.timeout_s must be > 0 (got {python['timeout_s']!r})")
        self.sandbox: Sandbox | None = None
        if "python" in self.tools:  # refuses to start (SandboxUnavailable, one line) where no jail can be built
            try:
                limits = Limits(**python["limits"])
            except TypeError as err:
                fields = ", ".join(f.name for f in dataclasses.fields(Limits))
                raise ConfigError(f"env.python.limits: {err} (its keys: {fields})") from None
            self.sandbox = Sandbox(HARNESS, python["workers"], limits, modules=MODULES, base_uid=python["base_uid"])

    def reset(self, rows: list[dict]) -> list[EpisodeState]:
        return [EpisodeState(row) for row in rows]

    def _python(self, session: Session, index: int) -> dict:
        request = {"op": "load", "code_from": "completion", "names": [], "classes": [], "execute": False}
        loaded = session.request({**request, "preamble": ""})[0]
        if loaded.get("ok") is not True:  # the wrapper always compiles: only a broken harness gets here
            return {"stdout": f"{loaded.get('error')}: {loaded.get('detail')}"}
        return session.request({"op": "stdio", "stdin": ""}, timeout_s=self.timeout_s)[0]

    def _run_python(self, codes: list[str]) -> list[str]:
        if not codes:
            return []
        assert self.sandbox is not None, "python calls are run only when `python` is in env.tools"
        outcomes = self.sandbox.map([WRAPPER.format(code=code) for code in codes], self._python)
        results = []
        for outcome in outcomes:
            if isinstance(outcome, Failure):
                why = {Status.TIMEOUT: f"it ran past {self.timeout_s:g} s"}.get(outcome.status, outcome.reason)
                results.append(f"Error: the program was stopped ({outcome.status.value}): {why}")
            else:
                stdout = printable(str(outcome.get("stdout", ""))[: self.max_observation_chars + 1])
                results.append(stdout.rstrip("\n") or "(no output: print the value you need)")
        return results

    def _result(self, name: str, body: str) -> str | None:
        """The result of a call not run in the sandbox, or None for a python call (run in one batch)."""
        if name not in self.tools:
            return (
                f"Error: unknown tool {clip(name, 40)!r}: call one of {', '.join(self.tools)} as <tool>name: ...</tool>"
            )
        if name == "calc":
            return calculate(body)
        return None

    def step(self, states: list[Any], completions: list[str]) -> list[Turn]:
        found = [tool_call(c) for c in completions]
        calls = {i: call for i, call in enumerate(found) if call is not None}
        results = {i: self._result(*call) for i, call in calls.items()}
        pending = [i for i, result in results.items() if result is None]  # python calls: one batch
        results |= dict(zip(pending, self._run_python([calls[i][1] for i in pending]), strict=True))
        answered = [i for i in range(len(states)) if i not in calls]
        final = {}  # the answers, scored together
        if answered:
            verdicts = self.reward([completions[i] for i in answered], [states[i].row for i in answered])
            final = dict(zip(answered, verdicts, strict=True))
        turns = []
        for i, state in enumerate(states):
            state.turns += 1
            if i in final:
                turns.append(Turn(final[i], True))
                continue
            (name, body), result = calls[i], str(results[i])
            details = {"tool": name, "call": clip(body, 200), "result": clip(result, 200)}
            verdict = Verdict(0.0, Status.FAIL, {}, {**details, "reason": "a tool call: no answer yet"})
            turns.append(Turn(verdict, False, self._observation(result)))
        return turns

    def _observation(self, result: str) -> Observation:
        """The result in its tags (text) or as the message's content, the whole within max_observation_chars."""
        if self.observation_role is not None:
            return render(result, self.observation_role, self.max_observation_chars)
        room = self.max_observation_chars - len(RESULT.format(""))  # the closing tag is never cut off
        return RESULT.format(clip(result, room))

    def close(self) -> None:
        """The python sandbox's jails end here; the reward is the run's (rlx.train closes it)."""
        if self.sandbox is not None:
            self.sandbox.close()
