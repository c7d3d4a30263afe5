"""reward=triton against the reward-integrity classes of issue 26, each attacked by a completion written here.

Two layers, each tested on its own:
  * the whole reward (static vocabulary, then the sandboxes, then the checker's comparison): every attack
    earns 0 (the plan attack: exactly the correctness reward);
  * the sandboxed runs alone, as if the static check had let the program through (`past_the_vocabulary`): the
    attacks on secrets (seeds, RNG state) still earn no correctness because the inputs never exist in the
    candidate's process before forward; the runtime account stops the rest, except the two strict xfails
    below, in-process tricks only the static check stops (that is why it is decided outside).
"""

from __future__ import annotations

import pytest

from rlx.data.kernels.generator import IMPORTS, generate
from rlx.rewards.base import Status
from rlx.rewards.triton.reward import TritonReward
from rlx.rewards.triton.verdict import decide, reference_trials, timing_draw

pytestmark = pytest.mark.slow

PROBLEM = next(iter(generate([(16, 100)], ["float32"], ["relu"], [], [], fused=False)))  # plan B=128, mask c<n
ROW = {"source": PROBLEM.source, "preamble": IMPORTS, "plan": PROBLEM.plan}
# launches a kernel that loads and stores (o[0] = x[0]): passes the static checks, computes nothing of the task
NOOP = "# plan: B=128, mask c<n\n@triton.jit\ndef k(xp,o,n,B:tl.constexpr):\n tl.store(o,tl.load(xp))\n"
CHANNEL_FORGERY = """try:
    raise RuntimeError
except RuntimeError as error:
    frame = error.__traceback__.tb_frame
while frame is not None and "send" not in frame.f_locals:
    frame = frame.f_back
send, receive = frame.f_locals["send"], frame.f_locals["receive"]
encode_tensor, to_torch = frame.f_globals["encode_tensor"], frame.f_globals["to_torch"]
send({"ok": True})
while (request := receive()) is not None:
    message = request[0]
    x = to_torch(message["inputs"][0]["tensor"])
    send({"trial": message["trial"], "output": encode_tensor(torch.relu(x)), "launch_count": 1,
          "launches": [{"kernel": "k", "ints": {"B": 128}}], "refused": [], "canaries_ok": True,
          "inputs_unchanged": True, "output_from_kernel": True})
class ModelNew(nn.Module):
    def forward(self, x):
        return x
"""


def forward(body: str, init: str = "") -> str:
    """NOOP, then a ModelNew whose forward launches it and then runs `body` (indented 8)."""
    init_block = f"    def __init__(self):\n        super().__init__()\n{init}" if init else ""
    return NOOP + f"class ModelNew(nn.Module):\n{init_block}    def forward(self, x):\n{body}"


ATTACKS = {
    # the trial seeds from torch's RNG state: reseed from it, draw the inputs the task would, precompute
    "rng_seed": forward(
        "        y = torch.empty_like(x)\n        k[(1,)](x, y, 1, B=16)\n        self.calls += 1\n"
        "        return self.table[self.calls - 1]\n",
        init="        self.calls = 0\n        self.table = []\n        base = torch.initial_seed()\n"
        "        for t in range(3):\n            torch.manual_seed(base + 1000 * t)\n"
        "            self.table.append(Model()(*get_inputs()))\n",
    ),
    # the input's bytes read and rewritten in Python through its storage: no torch compute, a kernel launched
    "storage_bytes": forward(
        "        y = torch.empty_like(x)\n        k[(1,)](x, y, 1, B=16)\n"
        "        s, d = x.untyped_storage(), y.untyped_storage()\n"
        "        for i in range(0, len(s), 4):\n            negative = s[i + 3] >= 128\n"
        "            for j in range(4):\n                d[i + j] = 0 if negative else s[i + j]\n        return y\n"
    ),
    # the guard found on torch's mode stack and its launch flag set, then torch compute
    "mode_stack_flag": forward(
        "        for mode in torch.overrides._get_current_function_mode_stack():\n"
        "            mode.in_launch = True\n        k[(1,)](x, x, 1, B=16)\n        return torch.relu(x)\n"
    ),
    # a tensor subclass that does its compute when the harness encodes it, after the guard is gone
    "subclass_at_encode": NOOP
    + """class Lazy(torch.Tensor):
    def contiguous(self, *args, **kwargs):
        return torch.relu(self.source)
    def detach(self):
        return torch.relu(self.source)
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        k[(1,)](x, y, 1, B=16)
        out = Lazy(y)
        out.source = x
        return out
""",
    # the harness's reply channel taken from its frames at load time: the program answers every request itself,
    # computing with torch and forging the in-process facts
    "channel_forgery": NOOP + CHANNEL_FORGERY,
    # a correct plan on a forward that falls back to torch: a VIOLATION must not earn the plan
    "violation_with_plan": PROBLEM.solution.replace("  return y", "  return torch.relu(x)"),
    # a correct plan on a kernel that computes nothing
    "noop_with_plan": forward("        y = torch.empty_like(x)\n        k[(1,)](x, y, 1, B=128)\n        return y\n"),
}
# A correct kernel that masks nothing (it clamps its column index instead, so lanes past the row rewrite the
# last column with the same value), with the reference plan "B=128, mask c<n" and a `mask=` only in a kernel
# it never launches: the plan describes the unlaunched kernel, so it earns exactly the correctness reward.
CLAMPED = """# plan: B=128, mask c<n
@triton.jit
def relu_k(xp,o,n,B:tl.constexpr):
 r=tl.program_id(0)
 c=tl.minimum(tl.arange(0,B),n-1)
 x=tl.load(xp+r*n+c)
 tl.store(o+r*n+c,tl.maximum(x,0.0))
@triton.jit
def unused_k(xp,o,n,B:tl.constexpr):
 c=tl.arange(0,B)
 tl.store(o+c,tl.load(xp+c,mask=c<n),mask=c<n)
class ModelNew(nn.Module):
 def forward(self,x):
  y=torch.empty_like(x)
  relu_k[(x.shape[0],)](x,y,x.shape[1],B=triton.next_power_of_2(x.shape[1]))
  return y
"""


def kernel_reward(base_uid: int) -> TritonReward:
    return TritonReward(
        workers=2,
        device="cpu",
        trials=3,
        seed=None,
        speedup_cap=2.0,
        speedup_weight=0.5,
        plan_weight=0.5,
        time_repeats=10,
        base_uid=base_uid,
        limits=dict(wall_s=20, cpu_s=15, memory_mb=4096, fsize_mb=16, disk_mb=64, output_kb=8192),
    )


def past_the_vocabulary(reward: TritonReward, texts: list[str], row: dict = ROW) -> list:
    """Verdicts of the sandboxed runs alone (the reward's own private steps, in its order): every static
    check taken as passed."""
    reference = reward._references_for([row["source"]]).popitem()[1]
    expected = reference_trials(reference)
    assert not isinstance(expected, str), expected
    inputs = [list(expected[t].inputs) for t in sorted(expected)]
    check = reward._candidate_check(row["source"], inputs, timing_draw(reference))
    outcomes = reward.sandbox.map([row["preamble"] + text for text in texts], check)
    checks = dict.fromkeys(
        ("parses", "defines_model_new", "defines_jit_kernel", "loads_and_stores", "vocabulary"), True
    )
    return [decide(checks, outcome, reference, 2.0, 0.5) for outcome in outcomes]


@pytest.fixture(scope="module")
def verdicts():
    reward = kernel_reward(61500)
    try:
        names = list(ATTACKS)
        whole = reward([ATTACKS[n] for n in names] + [CLAMPED, PROBLEM.solution], [ROW] * (len(names) + 2))
        alone = past_the_vocabulary(reward, [ATTACKS[n] for n in names] + [PROBLEM.solution])
    finally:
        reward.close()
    return dict(zip([*names, "clamped", "honest"], whole, strict=True)), dict(
        zip([*names, "honest"], alone, strict=True)
    )


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_earns_nothing_from_the_whole_reward(verdicts, name):
    verdict = verdicts[0][name]
    assert verdict.reward == 0.0 and verdict.components["correct"] == 0.0, verdict.details
    assert verdict.components["plan"] == 0.0
    assert verdict.status in (Status.VIOLATION, Status.FAIL), verdict.details


def test_honest_answer_and_the_unlaunched_mask_plan(verdicts):
    honest, clamped = verdicts[0]["honest"], verdicts[0]["clamped"]
    assert honest.status == Status.PASS and honest.reward == 1.5, honest.details  # correct + 0.5 * plan
    assert clamped.status == Status.PASS, clamped.details
    assert clamped.components["plan"] == 0.0 and clamped.reward == 1.0  # exactly the correctness reward


# what the sandboxed runs alone give each attack (the vocabulary refuses all of them first)
ALONE = {
    "rng_seed": Status.FAIL,  # the inputs were drawn elsewhere: the precomputed table is for other inputs
    "storage_bytes": Status.VIOLATION,  # untyped_storage refused in forward
    "mode_stack_flag": Status.VIOLATION,  # no flag: torch.relu refused
    "subclass_at_encode": Status.CRASH,  # the subclass cannot even be built under the dispatch account
    "violation_with_plan": Status.VIOLATION,
    "noop_with_plan": Status.FAIL,
}


@pytest.mark.parametrize("name", list(ALONE))
def test_attack_earns_no_correctness_past_the_vocabulary(verdicts, name):
    verdict = verdicts[1][name]
    assert verdict.status in (ALONE[name], Status.VIOLATION), verdict.details
    assert verdict.reward == 0.0 and verdict.components["correct"] == 0.0


def test_honest_answer_passes_past_the_vocabulary(verdicts):
    assert verdicts[1]["honest"].status == Status.PASS


@pytest.mark.xfail(strict=True, reason="in-process, the harness's reply channel is the program's to take")
def test_harness_alone_keeps_its_channel(verdicts):
    assert verdicts[1]["channel_forgery"].components["correct"] == 0.0


POP_AND_PUSH = forward(
    "        y = torch.empty_like(x)\n        k[(1,)](x, y, 1, B=16)\n"
    "        calls = torch._C._pop_torch_function_stack()\n        ops = torch._C._pop_torch_dispatch_stack(None)\n"
    "        y.copy_(torch.relu(x))\n        torch._C._push_on_torch_dispatch_stack(ops)\n"
    "        torch._C._push_on_torch_function_stack(calls)\n        return y\n"
)


@pytest.mark.xfail(strict=True, reason="in-process, the account cannot see itself taken off the stacks and put back")
def test_guard_alone_sees_pop_and_push():
    reward = kernel_reward(61530)
    try:
        assert reward([POP_AND_PUSH], [ROW])[0].status == Status.VIOLATION  # the vocabulary refuses torch._C
        verdict = past_the_vocabulary(reward, [POP_AND_PUSH])[0]
    finally:
        reward.close()
    assert verdict.components["correct"] == 0.0


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"x": value}
    return value


def test_hostile_text_and_records_give_labelled_zeros_never_an_exception():
    reward = kernel_reward(61540)
    try:
        deep = reward(["(" * 6000 + ")" * 6000, "x = " + "-" * 100000 + "1", "[" * 200 + "]" * 200], [ROW] * 3)
    finally:
        reward.close()
    assert [v.status for v in deep] == [Status.FORMAT] * 3 and all(v.reward == 0.0 for v in deep)
    checks = dict.fromkeys(
        ("parses", "defines_model_new", "defines_jit_kernel", "loads_and_stores", "vocabulary"), True
    )
    tensor = {"dtype": "torch.float32", "shape": [1], "data": "AACAPw=="}  # 1.0
    reference = {"trials": [{"trial": 0, "inputs": [{"tensor": tensor}], "output": tensor}], "timing": None}
    hostile = [
        {"trial": 0, "output": nested(5000), "launch_count": 1},
        {"trial": 0, "launches": [nested(5000)], "launch_count": 1},
        {"trial": 0, "output": {"dtype": "torch.float32", "shape": [1], "data": "!!!"}, "launch_count": 1},
        {"trial": 0, "output": {"dtype": "torch.float32", "shape": [10**12], "data": ""}, "launch_count": 1},
        nested(5000),
        {"trial": 0, "refused": "relu", "launch_count": True},
    ]
    for record in hostile:
        verdict = decide(checks, {"trials": [record], "timing": record}, reference, 2.0, 0.5)
        assert verdict.reward == 0.0 and verdict.status in (Status.FAIL, Status.VIOLATION, Status.CRASH), record
