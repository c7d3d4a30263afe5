"""One typed protocol for rewards: every optional part has a default on rlx.rewards.base.Reward, so the trainer
calls each plainly; a `_target_` that is not a Reward stops at start with the fix; docs/rewards.md's example works."""

import json
import re
import sys
from pathlib import Path

import pytest
from hydra.utils import get_class
from omegaconf import OmegaConf

from rlx.checks import build_node, check_task
from rlx.errors import ConfigError
from rlx.rewards.base import Reward, Status, Verdict, as_reward
from rlx.samples import reference_fields
from tests.conftest import FAST_MODEL, ONE_STEP, compose_config, output, run_cli

ROOT = Path(__file__).resolve().parents[2]


class Minimal(Reward):
    """Only what a reward must write: its __call__."""

    def __call__(self, completions, rows):
        return [Verdict(float(c == "ok"), Status.PASS if c == "ok" else Status.FAIL) for c in completions]


class NotAReward:
    """A callable with the right shape that does not subclass Reward."""

    def __init__(self, **settings) -> None:
        self.settings = settings

    def __call__(self, completions, rows):
        return []


def test_every_optional_part_has_its_default():
    reward = Minimal()
    assert reward.required_fields == () and reward.sample_fields == ()
    assert reward.invalid_rows == "stop" and reward.show_expected is False
    assert reward.strict is None and reward.verifier is None
    assert reward.bind(object()) is None and reward.close() is None
    assert reward.row_problem({"answer": "1"}) is None
    assert [v.reward for v in reward(["ok", "no"], [{}, {}])] == [1.0, 0.0]


def test_sample_fields_follow_required_fields_unless_a_reward_lists_fewer():
    class Reads(Minimal):
        required_fields = ("answer", "tests")

    class Hides(Reads):
        sample_fields = ("answer",)  # the tests hold expected values the policy must never see

    class HidesPerInstance(Reads):
        def __init__(self, shown: tuple[str, ...]) -> None:
            self.sample_fields = shown  # e.g. from a YAML key

    assert reference_fields(Reads()) == ("answer", "tests")
    assert reference_fields(Hides()) == ("answer",)
    assert reference_fields(HidesPerInstance(("tests",))) == ("tests",)
    assert Reads().sample_fields == ("answer", "tests")  # one instance's choice is not the class's


def test_a_reward_without_call_cannot_be_built():
    class Forgot(Reward):
        required_fields = ("answer",)

    with pytest.raises(TypeError, match="__call__"):
        Forgot()  # type: ignore[abstract]


@pytest.mark.parametrize("path", sorted((ROOT / "conf" / "reward").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_bundled_reward_is_a_reward(path):
    target = OmegaConf.load(path)["_target_"]
    assert issubclass(get_class(target), Reward), target


def test_a_target_that_is_not_a_reward_stops_at_start_with_the_fix(tmp_path):
    cfg = compose_config([f"reward._target_={__name__}.NotAReward"], tmp_path / "run")
    built = build_node(cfg, "reward")
    with pytest.raises(ConfigError) as err:
        check_task(build_node(cfg, "data"), built)
    message = str(err.value)
    assert f"reward._target_ builds {__name__}.NotAReward" in message
    assert "subclass rlx.rewards.base.Reward" in message and "docs/rewards.md" in message
    assert as_reward(Minimal()) is not None


def doc_block(language: str, first_line: str) -> str:
    """The fenced `language` block of docs/rewards.md's "Write your own reward" that starts with `first_line`."""
    page = (ROOT / "docs" / "rewards.md").read_text()
    section = page.split("## Write your own reward", 1)[1].split("\n## ", 1)[0]
    for block in re.findall(rf"```{language}\n(.*?)```", section, re.S):
        if block.startswith(first_line):
            return block
    raise AssertionError(f"docs/rewards.md has no {language} block starting {first_line!r}")


@pytest.fixture
def doc_example(tmp_path, monkeypatch):
    """docs/rewards.md's class and YAML, written where the page says and importable as the page's command has it."""
    (tmp_path / "my_rewards.py").write_text(doc_block("python", "# my_rewards.py"))
    (tmp_path / "my_conf" / "reward").mkdir(parents=True)
    (tmp_path / "my_conf" / "reward" / "contains.yaml").write_text(doc_block("yaml", "# my_conf/reward/contains.yaml"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("my_rewards", None)


def test_the_docs_example_builds_from_its_yaml_and_scores(doc_example):
    cfg = compose_config(["reward=contains"], doc_example / "run", config_dir=doc_example / "my_conf")
    reward = as_reward(build_node(cfg, "reward"))
    task = build_node(cfg, "data")  # the default data=arithmetic: rows carry `answer`
    check_task(task, reward)  # required_fields and row_problem on every row, as training starts
    reward.bind(task)
    row = {"prompt": "5+7=", "answer": "12"}
    verdicts = reward(["The sum is 12.", "112", "  "], [row, row, row])
    assert [(v.reward, v.status) for v in verdicts] == [(1.0, Status.PASS), (0.0, Status.FAIL), (0.0, Status.FORMAT)]
    assert [v.components["correct"] for v in verdicts] == [1.0, 0.0, 0.0]
    assert reward.row_problem({"answer": " "}) == "the answer is empty: every completion would contain it"
    reward.close()


@pytest.mark.slow
def test_the_docs_command_trains_with_the_example(doc_example, test_cache):
    page = (ROOT / "docs" / "rewards.md").read_text()
    command = re.search(r"`(python -m rlx --config-dir my_conf [^`]*)`", page)
    assert command, "docs/rewards.md shows the command that trains with the example"
    argv = [*command.group(1).split()[1:], *ONE_STEP, *FAST_MODEL, "samples_every=1", "hydra.run.dir=run"]
    proc = run_cli(argv, doc_example, test_cache, check=True)
    samples = [json.loads(line) for line in (doc_example / "run" / "samples.jsonl").read_text().splitlines()]
    assert samples and all(s["reference"].keys() == {"answer"} for s in samples), samples  # its required_fields
    assert {s["status"] for s in samples} <= {"PASS", "FAIL", "FORMAT"}, output(proc)
