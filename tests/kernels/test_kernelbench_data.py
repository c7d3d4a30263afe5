"""data=kernelbench reads a directory of KernelBench problem files as published (here: problem files written for
these tests in KernelBench's exact layout, tests/kernels/kernelbench/level{1,2}): one row per file in
KernelBench's order, its prompt KernelBench's own, a held-out split fixed by split_seed, the level's policy on
torch in forward; and every way a directory can be wrong is one message naming data.path, the file and the fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rlx.checks import build_node
from rlx.data.kernelbench.prompt import SYSTEM_PROMPT, kernelbench_prompt
from rlx.data.kernelbench.task import KernelBenchTask
from rlx.errors import ConfigError

PROBLEMS = Path(__file__).parent / "kernelbench"
LEVEL1, LEVEL2 = PROBLEMS / "level1", PROBLEMS / "level2"
ARGS = dict(
    prompt="one_shot",
    chat=True,
    level=None,
    val_size=1,
    split_seed=1234,
    cpu_max_elements=None,  # sizes as published: the shrink has its own tests
    cpu_min_size=8,
    max_new_tokens=64,
)


def task(path, **overrides) -> KernelBenchTask:
    return KernelBenchTask(path=str(path), **{**ARGS, **overrides})


def test_one_row_per_problem_file_in_kernelbench_order():
    loaded = task(LEVEL1)
    rows = sorted(loaded.train + loaded.val, key=lambda r: r["problem_id"])
    assert [r["name"] for r in rows] == [
        "level1/1_Softsign_activation",
        "level1/2_RMS_over_a_dimension",
        "level1/3_conv_2D_grouped_dilated_asymmetric_kernel",
    ]
    assert [r["problem_id"] for r in rows] == [1, 2, 3]
    for row in rows:  # the source is the file as published, and the prompt shows exactly it
        published = (LEVEL1 / f"{row['name'].split('/')[1]}.py").read_text()
        assert row["source"] == published and row["shrunk"] == {}
        assert row["prompt"] == [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": kernelbench_prompt(published, "one_shot")},
        ]
    assert len(loaded.val) == 1 and len(loaded.train) == 2


def test_plain_text_prompts_and_zero_shot():
    loaded = task(LEVEL1, chat=False, prompt="zero_shot")
    row = loaded.train[0]
    assert row["prompt"] == kernelbench_prompt(row["source"], "zero_shot") and "Example:" not in row["prompt"]


def test_the_split_is_fixed_by_split_seed(tmp_path):
    names = lambda t: sorted(r["name"] for r in t.val)  # noqa: E731
    assert names(task(LEVEL1)) == names(task(LEVEL1))
    splits = {tuple(names(task(LEVEL1, split_seed=seed))) for seed in range(20)}
    assert len(splits) == 3  # each of the three problems is held out for some seed


def test_unnumbered_files_follow_kernelbench_numbered_ones(tmp_path):
    for source in LEVEL1.glob("*.py"):
        shutil.copy(source, tmp_path / source.name)
    shutil.copy(LEVEL1 / "1_Softsign_activation.py", tmp_path / "my_softsign.py")
    shutil.copy(LEVEL1 / "1_Softsign_activation.py", tmp_path / "10_Softsign_again.py")
    (tmp_path / "notes.md").write_text("not a .py file: ignored")
    loaded = task(tmp_path, val_size=1)
    order = [r["name"].split("/")[1] for r in sorted(loaded.train + loaded.val, key=_position(tmp_path))]
    assert order == [
        "1_Softsign_activation",
        "2_RMS_over_a_dimension",
        "3_conv_2D_grouped_dilated_asymmetric_kernel",
        "10_Softsign_again",
        "my_softsign",
    ]


def _position(directory: Path):
    from rlx.data.kernelbench.problem import problem_files

    order = [p.stem for p in problem_files(directory)]
    return lambda row: order.index(row["name"].split("/")[1])


def test_the_level_comes_from_the_directory_and_says_what_torch_may_do(tmp_path):
    level1, level2 = task(LEVEL1), task(LEVEL2)
    assert (level1.level, level1.torch_in_forward) == (1, "kernels_only")
    assert (level2.level, level2.torch_in_forward) == (2, "reference_layers")
    assert all(r["name"].startswith("level2/") for r in level2.train + level2.val)
    mine = tmp_path / "mine"
    shutil.copytree(LEVEL2, mine)
    assert task(mine).level == 1  # no levelN in the name: level 1, the strict policy
    assert task(mine, level=3).torch_in_forward == "reference_layers"


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: d / "absent", ["no such directory", "KernelBench/level1"]),
        (lambda d: _file(d / "1_Softsign_activation.py"), ["is a file", "python -m rlx.score reward=triton task="]),
        (lambda d: d, ["holds no problem files"]),
    ],
    ids=["missing", "a file", "empty"],
)
def test_a_wrong_path_names_data_path_and_the_fix(tmp_path, make, expected):
    path = make(tmp_path)
    with pytest.raises(ConfigError) as err:
        task(path)
    message = str(err.value)
    assert message.startswith(f"data.path={path}") and all(e in message for e in expected), message


def _file(path: Path) -> Path:
    shutil.copy(LEVEL1 / path.name, path)
    return path


BROKEN = {
    "no_init_inputs.py": (
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
        "def get_inputs():\n    return [torch.rand(4)]\n",
        "defines no `get_init_inputs`",
    ),
    "no_model.py": ("def get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n", "defines no `Model`"),
    "no_forward.py": (
        "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs():\n    return []\n"
        "def get_init_inputs():\n    return []\n",
        "has no forward",
    ),
    "syntax.py": ("class Model(:\n", "does not parse (line 1"),
    "helper_module.py": ("import torch\n\ndef helper(x):\n    return x\n", "defines no `Model`"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_file_that_is_not_a_problem_is_named_with_the_fix(tmp_path, name):
    shutil.copy(LEVEL1 / "1_Softsign_activation.py", tmp_path / "1_Softsign_activation.py")
    text, why = BROKEN[name]
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError) as err:
        task(tmp_path)
    message = str(err.value)
    assert message.startswith(f"data.path={tmp_path}: {name} is not a KernelBench problem"), message
    assert why in message and "get_init_inputs()" in message and "move it out of the directory" in message


def test_a_file_that_is_not_text(tmp_path):
    shutil.copy(LEVEL1 / "1_Softsign_activation.py", tmp_path / "1_Softsign_activation.py")
    (tmp_path / "2_binary.py").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ConfigError, match=r"2_binary.py is not UTF-8 text"):
        task(tmp_path)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ({"val_size": 3}, "data.val_size must be in [1, 2]"),
        ({"val_size": 0}, "data.val_size must be in [1, 2]"),
        ({"prompt": "few_shot"}, "data.prompt must be one of ['one_shot', 'zero_shot']"),
        ({"cpu_max_elements": 0}, "data.cpu_max_elements must be an integer >= 1 (got 0)"),
        ({"cpu_max_elements": "many"}, "data.cpu_max_elements must be an integer >= 1 (got 'many')"),
        ({"cpu_min_size": 0}, "data.cpu_min_size must be an integer >= 1"),
        ({"level": 0}, "data.level must be a KernelBench level >= 1 or null"),
    ],
)
def test_bad_keys_name_the_key_and_the_fix(override, expected):
    with pytest.raises(ConfigError) as err:
        task(LEVEL1, **override)
    assert str(err.value).startswith(expected), str(err.value)


def test_the_config_builds_the_task_and_needs_a_path(cfg_factory):
    from omegaconf import OmegaConf

    cfg = cfg_factory(
        "reward=triton", "data=kernelbench", f"data.path={LEVEL1}", "data.val_size=1", "data.cpu_max_elements=null"
    )
    built = build_node(cfg, "data")
    assert isinstance(built, KernelBenchTask) and len(built.train) + len(built.val) == 3
    unset = cfg_factory("reward=triton", "data=kernelbench")
    assert OmegaConf.missing_keys(unset) == {"data.path"}  # preflight: "data=kernelbench needs data.path"


def test_the_default_held_out_size_fits_a_kernelbench_level(cfg_factory):
    cfg = cfg_factory("reward=triton", "data=kernelbench", f"data.path={LEVEL1}")
    assert 0 < cfg.data.val_size < 50  # levels 1 and 2 hold 100 problems each, level 3 50
    with pytest.raises(ConfigError, match=r"data.val_size must be in \[1, 2\]: data.path=.* holds 3 problems"):
        build_node(cfg, "data")


@pytest.mark.slow  # sizing on the meta device: a child process that imports torch
def test_a_problem_the_shrink_cannot_bring_under_the_budget_is_left_out_by_name(tmp_path, caplog):
    for source in LEVEL1.glob("*.py"):
        shutil.copy(source, tmp_path / source.name)
    literal = (
        (LEVEL1 / "1_Softsign_activation.py")
        .read_text()
        .replace("torch.randn(batch_size, features)", "torch.randn(4096, 4096)")
    )
    (tmp_path / "4_Softsign_literal_sizes.py").write_text(literal)  # sizes inside get_inputs: nothing to scale
    loaded = task(tmp_path, cpu_max_elements=262144)
    names = {r["name"] for r in loaded.train + loaded.val}
    assert len(names) == 3 and "level1/4_Softsign_literal_sizes" not in names
    assert all(r["shrunk"] for r in loaded.train + loaded.val)  # the other three were scaled down
    assert "4_Softsign_literal_sizes (33554432 elements)" in caplog.text and "data.cpu_max_elements" in caplog.text


def test_a_reward_that_reads_other_fields_is_named_with_the_fix():
    loaded = task(LEVEL1)
    loaded.check_fields(("source",))  # reward=triton's
    with pytest.raises(ConfigError, match=r"scored by reward=triton; this run's reward reads \['answer'\]: add reward"):
        loaded.check_fields(("answer",))  # reward=math's


@pytest.mark.slow  # sizing on the meta device: a child process that imports torch
def test_a_budget_no_problem_fits_names_the_keys_to_raise():
    with pytest.raises(ConfigError) as err:
        task(LEVEL1, cpu_max_elements=10)
    message = str(err.value)
    assert message.startswith(f"data.path={LEVEL1}: none of its 3 problems fits data.cpu_max_elements=10"), message
    assert "raise data.cpu_max_elements together with reward.limits.output_kb" in message
