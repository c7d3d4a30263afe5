"""data=kernels: the generated problems, the held-out split and the warm-start corruptions (no sandbox here;
tests/kernels/test_kernel_sandbox.py runs the answers)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from rlx.checks import build_node
from rlx.data.kernels.generator import block_plan, generate
from rlx.data.kernels.ops import BINARY, ROWS, UNARY
from rlx.data.kernels.task import CODE_ONLY, CORRUPTIONS, PLAN_ONLY, KernelTask
from rlx.errors import ConfigError
from tests.conftest import compose_config


def kernels_task(*overrides: str) -> KernelTask:
    return build_node(compose_config(["reward=triton", *overrides]), "data")


@pytest.fixture(scope="module")
def task() -> KernelTask:
    return kernels_task()


def test_families_shapes_dtypes_and_fused_pairs_make_distinct_problems(task):
    problems = list(task.problems.values())
    # the default: (6 unary + 4 binary + 5 row ops + 4 x 6 fused pairs) x 5 shapes x 3 dtypes
    assert len(problems) == (6 + 4 + 5 + 24) * 5 * 3 == 585
    assert len({p.name for p in problems}) == len({p.source for p in problems}) == len(problems)
    assert {p.family for p in problems} == {"unary", "binary", "row", "fused"}
    assert {p.dtype for p in problems} == {"float32", "float16", "bfloat16"}
    everything = generate([(16, 100)], ["float32"], list(UNARY), list(BINARY), list(ROWS), fused=True)
    assert len(everything) == 13 + 4 + 9 + 4 * 13  # every operation rlx knows
    assert len(generate([(16, 100)], ["float32"], ["relu"], ["add"], [], fused=False)) == 2


def test_held_out_split_is_disjoint_fixed_and_made_of_seen_parts(task):
    assert len(task.val) == 64 and len(task.train) == 585 - 64
    train, val = {r["name"] for r in task.train}, {r["name"] for r in task.val}
    assert not train & val
    assert {r["name"] for r in kernels_task("seed=7").val} == val  # the run's seed does not move it
    assert {r["name"] for r in kernels_task("data.split_seed=1").val} != val
    parts = [lambda p: p.op.split(",")[-1], lambda p: p.shape, lambda p: p.dtype]
    for part in parts:  # every op, shape and dtype of a held-out problem is trained on in other problems
        assert {part(task.problems[n]) for n in val} <= {part(task.problems[n]) for n in train}
    prompts = {p for p, _ in task.warm_start_examples(4000, seed=0)}
    assert not prompts & {r["prompt"] for r in task.val}  # the warm start never sees a held-out problem


def test_plan_is_the_smallest_covering_power_of_two(task):
    # cols 48 -> 64 (overhangs: mask), 64 -> 64 (exact: no mask), 100 -> 128, 128 -> 128, 200 -> 256
    assert [block_plan(c) for c in (48, 64, 100, 128, 200)] == [
        (64, True),
        (64, False),
        (128, True),
        (128, False),
        (256, True),
    ]
    relu = task.problems["relu 16x100 f32"]
    assert relu.plan == "B=128, mask c<n" and relu.solution.startswith("# plan: B=128, mask c<n\n")
    assert "B=triton.next_power_of_2(x.shape[1]))" in relu.solution and ",mask=m" in relu.solution
    exact = task.problems["softmax 8x64 bf16"]
    assert exact.plan == "B=64, no mask" and "mask" not in exact.solution.split("\n", 1)[1]
    assert ".to(tl.float32)" in exact.solution and ".to(torch.bfloat16)" in exact.source


def test_rows_carry_what_the_reward_reads(task):
    row = next(r for r in task.train if r["name"] == "add,sigmoid 16x100 f16")
    assert row["prompt"] == "# add,sigmoid 16x100 f16\n"
    assert row["preamble"].startswith("import torch\n") and row["plan"] == "B=128, mask c<n"
    assert "class Model(nn.Module)" in row["source"] and "def get_inputs()" in row["source"]
    source_style = kernels_task("data.prompt_style=source")
    assert source_style.train[0]["prompt"].startswith(source_style.train[0]["source"])
    assert all(len(p.solution) < task.max_new_tokens for p in task.problems.values())


def test_corruptions_touch_only_their_part(task):
    for problem in list(task.problems.values())[::7]:
        plan, code = problem.solution.split("\n", 1)
        for name in CODE_ONLY + PLAN_ONLY:
            corrupted = CORRUPTIONS[name](problem.solution)
            if corrupted is None:
                continue
            new_plan, new_code = corrupted.split("\n", 1)
            if name in CODE_ONLY:
                assert new_plan == plan and new_code != code, (name, problem.name)
            else:
                assert new_plan != plan and new_code == code, (name, problem.name)
        both = CORRUPTIONS["half_block"](problem.solution)
        assert both.split("\n", 1)[0] != plan and both.split("\n", 1)[1] != code


def test_every_answer_has_code_and_plan_corruptions(task):
    for problem in task.problems.values():
        applicable = {n for n, corrupt in CORRUPTIONS.items() if corrupt(problem.solution) is not None}
        assert applicable & set(CODE_ONLY) and applicable >= set(PLAN_ONLY), problem.name
        masked = "mask c<n" in problem.plan
        reduces = "tl.store(o+r," in problem.solution  # one value per row: the store needs no mask
        assert ("no_mask" in applicable) == masked
        assert ("unmasked_store" in applicable) == (masked and not reduces)


def test_noise_share_and_determinism(task):
    examples = task.warm_start_examples(3000, seed=0)
    solutions = {f"# {p.name}\n": p.solution for p in task.problems.values()}
    corrupted = [c for p, c in examples if c != solutions[p]]
    assert abs(len(corrupted) / len(examples) - task.noise) < 0.03
    kinds = {
        name
        for p, c in examples
        if c != solutions[p]
        for name, corrupt in CORRUPTIONS.items()
        if corrupt(solutions[p]) == c
    }
    assert kinds == set(CORRUPTIONS)
    assert examples == task.warm_start_examples(3000, seed=0)
    assert all(c == solutions[p] for p, c in kernels_task("data.noise=0").warm_start_examples(200, 0))
    assert kernels_task("data.noise=0").fingerprint() != task.fingerprint()


def test_balance_family_draws_each_family_equally_often_and_problem_each_problem(task):
    def shares(t: KernelTask) -> dict[str, float]:
        names = {f"# {p.name}\n": p.family for p in t.problems.values()}
        families = Counter(names[prompt] for prompt, _ in t.warm_start_examples(4000, seed=0))
        return {f: n / 4000 for f, n in families.items()}

    assert task.balance == "family"  # the default
    assert all(abs(share - 0.25) < 0.03 for share in shares(task).values()), shares(task)
    by_problem = kernels_task("data.balance=problem")
    train = Counter(by_problem.problems[row["name"]].family for row in by_problem.train)
    expected = {f: n / len(by_problem.train) for f, n in train.items()}  # fused: about 24/39 of the problems
    assert expected["fused"] > 0.55 and expected["row"] < 0.15, expected
    assert all(abs(shares(by_problem)[f] - expected[f]) < 0.03 for f in expected)
    assert by_problem.fingerprint() != task.fingerprint()  # another corpus: another cached warm start


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("data.prompt_style=code", "data.prompt_style must be 'source' or 'name'"),
        ("data.noise=1.5", "data.noise must be a probability (got 1.5)"),
        ("data.balance=op", "data.balance must be 'family' or 'problem' (got 'op')"),
        ("data.dtypes=[float64]", "data.dtypes must be a non-empty list from"),
        ("data.shapes=[[16]]", "data.shapes must be a non-empty list of [rows, cols]"),
        ("data.val_size=2000", "data.val_size must be in (0, 585)"),
        ("data.unary=[relu,swish]", "data.unary names unknown operations ['swish']"),
        ("data.max_new_tokens=480", "raise it to at least"),
    ],
)
def test_bad_values_name_the_key(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        kernels_task(override)
