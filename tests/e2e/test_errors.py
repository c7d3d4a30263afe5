"""Each bad input ends in one message naming the key and the fix, exit status 1, no traceback, in under a minute
(RLX_DEBUG=1 shows the traceback); a failed run's status.json says failed."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import FAST_MODEL, ONE_STEP, cli_env, output, run_cli
from tests.e2e.fixtures import write_jsonl

pytestmark = pytest.mark.slow

ONE_STEP_NO_G = [o for o in ONE_STEP if not o.startswith("algo.group_size")]


def fails_with(tmp_path, cache, *args: str, env: dict | None = None):
    start = time.perf_counter()
    proc = run_cli(["-m", "rlx", f"hydra.run.dir={tmp_path / 'run'}", *args], tmp_path, cache, env=env)
    elapsed = time.perf_counter() - start
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, output(proc)
    assert "Traceback" not in text and "HYDRA_FULL_ERROR" not in text, output(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlx: error: "), output(proc)  # one message, on stderr
    assert text.count(lines[0].removeprefix("rlx: error: ")) == 1, output(proc)  # printed once
    assert elapsed < 60, f"took {elapsed:.0f} s to fail"
    return lines[0]


def test_misspelt_key_gets_a_did_you_mean_not_a_plus_hint(tmp_path, test_cache):
    message = fails_with(tmp_path, test_cache, "algo.epsilonn=0.1")
    assert "algo.epsilonn" in message and "did you mean algo.epsilon?" in message
    assert "+algo.epsilonn" not in message  # Hydra's hint; following it fails at the constructor


def test_policy_loss_epsilon_names_algo_epsilon(tmp_path, test_cache):
    message = fails_with(tmp_path, test_cache, "policy_loss.epsilon=0.1")
    assert message.endswith("Set algo.epsilon instead: algo.epsilon=0.1") and "+policy_loss" not in message


def test_misspelt_group_gets_a_did_you_mean(tmp_path, test_cache):
    assert "did you mean algo?" in fails_with(tmp_path, test_cache, "algoo=grpo")


def test_misspelt_option_names_the_options(tmp_path, test_cache):
    message = fails_with(tmp_path, test_cache, "algo=grpoo")
    assert "did you mean algo=grpo?" in message and "dr_grpo" in message and "reinforce" in message


def test_jsonl_without_its_files_names_them(tmp_path, test_cache):
    message = fails_with(tmp_path, test_cache, "data=jsonl")
    assert "data=jsonl" in message and "data.train_file=" in message and "data.val_file=" in message
    status = json.loads((tmp_path / "run" / "status.json").read_text())
    assert status["status"] == "failed" and "data.train_file" in status["error"]


def test_hf_model_without_a_path_names_it(tmp_path, test_cache):
    assert "model.name_or_path=" in fails_with(tmp_path, test_cache, "model=hf")


@pytest.mark.parametrize("steps", ["0", "-1"])
def test_max_steps_below_one_is_rejected(tmp_path, test_cache, steps):
    message = fails_with(tmp_path, test_cache, f"trainer.max_steps={steps}")
    assert "trainer.max_steps" in message and f"(got {steps})" in message
    assert json.loads((tmp_path / "run" / "status.json").read_text())["status"] == "failed"
    assert not (tmp_path / "run" / "summary.json").exists()


def test_a_value_of_the_wrong_kind_names_the_key(tmp_path, test_cache):
    assert "algo.beta takes a number" in fails_with(tmp_path, test_cache, "algo.beta=abc")


def test_unit_tests_on_arithmetic_names_the_bundled_task(tmp_path, test_cache):
    message = fails_with(tmp_path, test_cache, "reward=unit_tests", "data=arithmetic", *FAST_MODEL)
    assert "['tests']" in message and "data=programs" in message
    status = json.loads((tmp_path / "run" / "status.json").read_text())
    assert status["status"] == "failed" and "data=programs" in status["error"]


def test_an_incompatible_algorithm_setting_names_the_fix(tmp_path, test_cache):
    assert "algo.group_size >= 2 (got 1)" in fails_with(tmp_path, test_cache, "algo.group_size=1")


def test_a_sweep_file_never_runs_as_one_run(tmp_path, test_cache):
    message = fails_with(tmp_path, test_cache, "+sweeps=eps_beta_g", "hydra.mode=RUN")
    assert "+sweeps=eps_beta_g" in message and "-m" in message


def test_rlx_debug_shows_the_traceback(tmp_path, test_cache):
    proc = run_cli(
        ["-m", "rlx", f"hydra.run.dir={tmp_path / 'run'}", "trainer.max_steps=0"],
        tmp_path,
        test_cache,
        env=cli_env(test_cache, RLX_DEBUG="1"),
    )
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "ConfigError" in proc.stderr, output(proc)


def test_score_with_an_unknown_reward_names_the_options(tmp_path, test_cache):
    (tmp_path / "row.json").write_text('{"answer": "4"}')
    (tmp_path / "answer.txt").write_text("4")
    proc = run_cli(["-m", "rlx.score", "reward=mathh", "task=row.json", "completion=answer.txt"], tmp_path, test_cache)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, output(proc)
    assert proc.stderr.strip() == (
        "rlx.score: error: reward=mathh: no such option. did you mean reward=math? "
        "Options of reward: math, reasoning_gym, triton, unit_tests"
    ), output(proc)


# heavy (outside CI's 30-minute budget; plain `pytest` runs it): a two-job sweep
@pytest.mark.heavy
def test_a_failed_job_of_a_sweep_is_reported_once_and_the_sweep_still_reports(tmp_path, test_cache):
    proc = run_cli(
        [
            "-m",
            "rlx",
            "-m",
            "algo.group_size=1,2",
            *ONE_STEP_NO_G,
            *FAST_MODEL,
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ],
        tmp_path,
        test_cache,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr, output(proc)
    lines = proc.stderr.strip().splitlines()
    first = "rlx: error: 1 of the 2 jobs the sweep ran failed; the first, #0 (algo.group_size=1"
    assert len(lines) == 1 and lines[0].startswith(first), output(proc)
    assert "Error executing job" not in proc.stdout + proc.stderr
    statuses = [json.loads((tmp_path / "sweep" / job / "status.json").read_text())["status"] for job in "01"]
    assert statuses == ["failed", "completed"]
    assert "2 runs: 1 completed, 1 failed" in (tmp_path / "sweep" / "report.md").read_text()


def test_a_missing_data_file_fails_before_torch_is_imported(tmp_path, test_cache):
    """The data are checked before the heavy imports (torch, Lightning, transformers: 8-30 s on a 2-core machine),
    so a missing file answers in seconds (4.6 s measured at load average 8; bench/RESULTS-first_contact.md)."""
    missing = tmp_path / "missing.jsonl"
    proc = run_cli(
        ["-X", "importtime", "-m", "rlx", f"hydra.run.dir={tmp_path / 'run'}", "data=jsonl"]
        + [f"data.train_file={missing}", f"data.val_file={missing}"],
        tmp_path,
        test_cache,
    )
    imports = [line for line in proc.stderr.splitlines() if line.startswith("import time:")]
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 1 and len(errors) == 1 and str(missing) in errors[0], output(proc)
    assert imports and not [line for line in imports if line.rstrip().endswith(("| torch", "| lightning"))]


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("algo.optimizer.lr=-1e-5", "algo.optimizer.lr=-1e-05 is refused by AdamW: Invalid learning rate: -1e-05"),
        ("algo.optimizer.betas=[0.9,1.5]", "algo.optimizer.betas=[0.9, 1.5] is refused by AdamW"),
        ("algo.optimizer.lr=nan", "algo.optimizer.lr must be a finite number (got nan)"),
        ("algo.lr_schedule.final_fraction=-1", "algo.lr_schedule makes the learning rate -3.33e-05 at RL step 2 of 3"),
        ("algo.max_grad_norm=-1", "algo.max_grad_norm must be > 0 (got -1)"),  # would flip the gradient
        ("model.warm_start.lr=-1", "model.warm_start.lr and retry_init_std must be > 0"),  # the SFT's own optimiser
    ],
)
def test_an_impossible_optimiser_value_fails_before_the_warm_start(tmp_path, test_cache, override, named):
    """One line naming the key, before the warm start and the model load (a negative lr gave a 72-line traceback
    from torch once the warm start had run)."""
    proc = run_cli(
        ["-m", "rlx", f"hydra.run.dir={tmp_path / 'run'}", override, "trainer.max_steps=3", *FAST_MODEL],
        tmp_path,
        test_cache,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, output(proc)
    assert proc.stderr.strip().splitlines() == [f"rlx: error: {proc.stderr.strip().removeprefix('rlx: error: ')}"]
    assert named in proc.stderr, output(proc)
    assert "warm start" not in proc.stdout, output(proc)  # it never began (nor did the import of the model code)
    assert json.loads((tmp_path / "run" / "status.json").read_text())["status"] == "failed"


def test_a_run_directory_spelt_with_dotdot_is_locked_once(tmp_path, test_cache):
    """hydra.run.dir=<dir>/../run: the lock of its spelling and of Hydra's resolved output directory are one (it
    refused to start, blaming its own PID)."""
    (tmp_path / "a").mkdir()
    proc = run_cli(
        ["-m", "rlx", f"hydra.run.dir={tmp_path / 'a' / '..' / 'run'}", "trainer.max_steps=0"], tmp_path, test_cache
    )
    assert proc.returncode == 1 and "in use by" not in proc.stderr, output(proc)
    assert "trainer.max_steps" in proc.stderr, output(proc)  # it got as far as the first check of the config


def test_a_prompt_longer_than_the_context_is_refused_at_start_naming_its_row(tmp_path, test_cache):
    """A held-out row whose prompt leaves no room for max_new_tokens in the model's 1024-token context: refused
    at start with its file and line (before: a crash when drawn, or, for a row never drawn, a run that
    "succeeded"). 900 characters are 900 tokens of the tiny model's character tokenizer."""
    train, val = write_jsonl(tmp_path / "data")
    rows = val.read_text().splitlines(keepends=True)
    rows.insert(2, json.dumps({"prompt": "1+" * 450, "answer": "0"}) + "\n")
    val.write_text("".join(rows))
    data = ["data=jsonl", f"data.train_file={train}", f"data.val_file={val}", "model.warm_start=null"]
    message = fails_with(tmp_path, test_cache, *data)
    assert message == (
        f"rlx: error: {val}:3: the prompt is 900 tokens; with data.max_new_tokens=256 that passes the model's "
        "context of 1024 tokens (1 of 17 val rows): shorten or remove such rows, set data.max_new_tokens <= 124, "
        "use a model with a longer context, or set data.overlong_prompts=drop to train without them"
    )
    assert json.loads((tmp_path / "run" / "status.json").read_text())["status"] == "failed"


def test_a_sweep_with_a_failed_job_ends_in_one_truthful_line(tmp_path, test_cache):
    """Job 0 fails with a bug (a RuntimeError, not a message for the user), job 1 completes: one line saying so,
    naming the job and where its traceback is; no raw traceback, and no "the sweep stopped early"."""
    sweep = tmp_path / "sweep"
    rewards = "reward._target_=tests.resume.broken_reward.BindFails,rlx.rewards.math.MathReward"
    proc = run_cli(
        ["-m", "rlx", "-m", rewards, *ONE_STEP, *FAST_MODEL, f"hydra.sweep.dir={sweep}"], tmp_path, test_cache
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr, output(proc)
    assert "stopped early" not in proc.stdout + proc.stderr and "Error executing job" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "rlx: error: 1 of the 2 jobs the sweep ran failed; the first, #0 (reward._target_=tests.resume.broken_reward"
        f".BindFails {' '.join(ONE_STEP)} {' '.join(FAST_MODEL)}): RuntimeError: this reward's bind has a bug (its "
        f"traceback: {sweep / '0' / 'status.json'}; the sweep's report: {sweep / 'report.md'})"
    ], output(proc)
    failed = json.loads((sweep / "0" / "status.json").read_text())
    assert failed["status"] == "failed" and "this reward's bind has a bug" in failed["traceback"]
    assert json.loads((sweep / "1" / "status.json").read_text())["status"] == "completed"
    assert "2 runs: 1 completed, 1 failed" in (sweep / "report.md").read_text()


def score_fails_with(tmp_path, cache, *args: str) -> str:
    proc = run_cli(["-m", "rlx.score", *args], tmp_path, cache)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and proc.stdout == "", output(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlx.score: error: "), output(proc)
    return lines[0]


def test_score_names_a_completion_that_is_not_utf8(tmp_path, test_cache):
    (tmp_path / "row.json").write_text('{"answer": "4"}')
    (tmp_path / "answer.txt").write_bytes(b"the answer is \xff4")
    message = score_fails_with(tmp_path, test_cache, "reward=math", "task=row.json", "completion=answer.txt")
    assert message == (
        "rlx.score: error: completion=answer.txt is not UTF-8 text (byte 0xff at offset 14): save it as UTF-8, "
        "as a completion is text once its tokens are decoded"
    )


def test_score_checks_a_task_row_as_training_does(tmp_path, test_cache):
    """`tests` as one string instead of a list of assert lines: the row check training runs at start, not a
    traceback from inside the reward."""
    (tmp_path / "row.json").write_text(json.dumps({"tests": "assert f(1) == 1", "entry_point": "f"}))
    (tmp_path / "answer.py").write_text("def f(x):\n    return x\n")
    message = score_fails_with(tmp_path, test_cache, "reward=unit_tests", "task=row.json", "completion=answer.py")
    assert message == "rlx.score: error: task=row.json: `tests` must be a non-empty list of assert lines"


def test_score_prints_a_huge_answer_bounded(tmp_path, test_cache):
    """A 5 MB completion is scored, and its verdict printed with every text field cut (to 2,000 characters by
    rlx.score, or shorter by the reward itself: reward=math keeps 200 of an extracted answer); a 50 MB answer was
    echoed back whole."""
    (tmp_path / "row.json").write_text('{"answer": "4"}')
    (tmp_path / "answer.txt").write_text("1" * 5_000_000)
    proc = run_cli(["-m", "rlx.score", "reward=math", "task=row.json", "completion=answer.txt"], tmp_path, test_cache)
    assert proc.returncode == 0 and len(proc.stdout) < 10_000, output(proc)
    verdict = json.loads(proc.stdout)
    assert verdict["status"] == "FAIL" and verdict["reward"] == 0.0
    extracted = verdict["details"]["extracted"]
    assert extracted.startswith("1" * 100) and len(extracted) <= 2_100, extracted[-120:]


STOPPED_SCORING = """
import os, signal, sys
from rlx.rewards.math import MathReward
from rlx.score import cli
calls = []
score = MathReward.__call__
def second_call_stopped(self, completions, rows):
    calls.append(1)
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGTERM)  # the offline evaluator's job is pre-empted in its second chunk
    return score(self, completions, rows)
MathReward.__call__ = second_call_stopped
sys.argv = ["rlx.score", *sys.argv[1:]]
cli()
"""


def test_score_stopped_by_a_signal_keeps_the_verdicts_written(tmp_path, test_cache):
    from rlx.score_batch import CHUNK

    rows = [{"task_id": f"t{i}", "prompt": f"{i}+0=", "answer": str(i)} for i in range(2 * CHUNK)]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "done.jsonl").write_text(
        "".join(json.dumps({"task_id": r["task_id"], "completion": "1"}) + "\n" for r in rows)
    )
    args = ["-c", STOPPED_SCORING, "reward=math", "tasks=tasks.jsonl", "completions=done.jsonl", "out=v.jsonl"]
    proc = run_cli(args, tmp_path, test_cache)
    assert proc.returncode == 128 + 15 and "Traceback" not in proc.stderr, output(proc)
    assert proc.stderr.strip().splitlines() == [
        f"rlx.score: stopped by SIGTERM; v.jsonl holds the {CHUNK} verdicts written before it"
    ]
    assert [json.loads(line)["task_id"] for line in (tmp_path / "v.jsonl").read_text().splitlines()] == [
        f"t{i}" for i in range(CHUNK)
    ]
