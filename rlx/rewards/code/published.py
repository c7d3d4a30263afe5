"""Tests of two code datasets as they are published, read as their own harnesses read them (trusted side).

- LiveCodeBench (`livecodebench/code_generation_lite`): `public_test_cases` is JSON text, a list of `{"input",
  "output", "testtype"}`; `private_test_cases` is the same list as JSON text, or that text pickled, zlib-compressed
  and base64-encoded (how the dataset ships its large ones); `metadata` is JSON text whose `func_name` names the
  method of a `functional` (LeetCode) problem. A `stdin` test is a stdin/stdout case, compared as LiveCodeBench's
  `grade_stdio` does (`lines`: the output stripped, each line stripped, the same number of lines, each equal as
  text or as a row of decimals). A `functional` test calls `Solution().<func_name>` (or the function, where the
  program defines no `Solution`) with one argument per input line, each line JSON, and compares the result with
  the JSON output as `grade_call_based` does: a tuple counts as a list, then Python's `==`.
- CodeContests (`deepmind/code_contests`): `public_tests`, `private_tests` and `generated_tests`, each `{"input":
  [...], "output": [...]}`: every one a stdin/stdout case (a problem is solved by passing them all).

The pickled private tests are read by an unpickler that builds no object but built-in data: a row cannot make
the trainer run code by being read.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import zlib

from rlx.rewards.code.cases import RowError, Tests

MAX_UNPACKED = 1 << 30  # bytes of one row's decompressed private tests


class _DataOnly(pickle.Unpickler):
    """Built-in data only: any global (a class, a function to call) is refused."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"a pickled test case names {module}.{name}: only built-in data is read")


def _cases(field: str, value) -> list:
    """One LiveCodeBench field's cases: JSON text, or JSON text pickled, zlib-compressed and base64-encoded."""
    cases = _unpacked(field, value)
    if not (isinstance(cases, list) and all(isinstance(c, dict) for c in cases)):
        raise RowError(f"`{field}` must list {{input, output, testtype}} cases")
    return cases


def _unpacked(field: str, value):
    if isinstance(value, list):
        return value
    if not isinstance(value, str):
        raise RowError(f"`{field}` must be JSON text (got {type(value).__name__})")
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        packed = zlib.decompressobj()
        raw = packed.decompress(base64.b64decode(value, validate=True), MAX_UNPACKED)
        if packed.unconsumed_tail:
            raise RowError(f"`{field}` unpacks to more than {MAX_UNPACKED >> 20} MiB")
        text = _DataOnly(io.BytesIO(raw)).load()
        return json.loads(text) if isinstance(text, str) else text
    except (binascii.Error, zlib.error, pickle.UnpicklingError, EOFError, ValueError, TypeError) as err:
        raise RowError(f"`{field}` is neither JSON nor LiveCodeBench's packed JSON ({err})") from None


def livecodebench(row: dict) -> Tests:
    cases = _cases("public_test_cases", row["public_test_cases"])
    cases += _cases("private_test_cases", row.get("private_test_cases") or "[]")
    if not cases:
        raise RowError("`public_test_cases` and `private_test_cases` hold no case")
    kinds = {c.get("testtype") for c in cases}
    if kinds == {"stdin"}:
        return _stdio_cases([c.get("input") for c in cases], [c.get("output") for c in cases], "lines")
    if kinds != {"functional"}:
        raise RowError(f"LiveCodeBench cases must all be `stdin` or all `functional` (got {sorted(map(str, kinds))})")
    metadata = row.get("metadata") or "{}"
    try:
        name = (json.loads(metadata) if isinstance(metadata, str) else metadata).get("func_name")
    except (ValueError, AttributeError):
        name = None
    if not (isinstance(name, str) and name.isidentifier()):
        raise RowError("a `functional` LiveCodeBench row needs `metadata` with its `func_name` (JSON text)")
    function = f"(Solution().{name} if 'Solution' in globals() else {name})"
    labels, steps = [], []
    for site, case in enumerate(cases):
        try:
            args = [json.loads(line) for line in str(case["input"]).split("\n")]
            expected = json.loads(case["output"])
        except (KeyError, TypeError, ValueError) as err:
            raise RowError(f"LiveCodeBench case {site}: its input lines and output must be JSON ({err})") from None
        arguments = ", ".join(repr(arg) for arg in args)
        labels.append(f"assert {name}({arguments}) == {expected!r}")
        steps.append(f"__rlx_enter__({site})\n__rlx_assert_listed__({site}, {function}({arguments}), {expected!r})")
    return Tests("asserts", labels, steps=steps, proxies=[name, "Solution"])


def code_contests(row: dict) -> Tests:
    inputs, outputs = [], []
    for field in ("public_tests", "private_tests", "generated_tests"):
        tests = row.get(field) or {"input": [], "output": []}
        if not (isinstance(tests, dict) and isinstance(tests.get("input"), list)):
            raise RowError(f'`{field}` must be {{"input": [...], "output": [...]}}')
        if not (isinstance(tests.get("output"), list) and len(tests["output"]) == len(tests["input"])):
            raise RowError(f"`{field}` needs as many outputs as inputs")
        inputs += tests["input"]
        outputs += tests["output"]
    return _stdio_cases(inputs, outputs, None)


def _stdio_cases(inputs: list, outputs: list, output: str | None) -> Tests:
    if not inputs:
        raise RowError("stdin/stdout tests need at least one case")
    for number, text in enumerate(inputs + outputs):
        if not isinstance(text, str):
            raise RowError(f"stdin/stdout case {number % len(inputs)} holds a {type(text).__name__}, not text")
    return Tests("stdio", [f"case {i}" for i in range(len(inputs))], inputs=inputs, outputs=outputs, output=output)
