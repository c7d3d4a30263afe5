"""reward=triton against forged harness records: a kernel with wrong math (an honest run FAILs) that tries to
pass for correct by writing the reference's outputs as trial records itself. The whole reward refuses every
case before it runs (the static vocabulary: underscore names, imports of os/sys/json/rlx); the cases below test
the sandboxed run alone, past the vocabulary (tests/rewards/test_triton_integrity.past_the_vocabulary).
The harness keeps its records until the candidate is done and seals them as one block with a nonce only it
holds (rlx.rewards.sandbox.runner.recorder); the tripwire refuses every way to reach its frames or objects
(rlx.rewards.sandbox.guard). So each case earns no correctness: VIOLATION where it reached for the harness's
state, FAIL where its forged lines were simply ignored, CRASH where it broke the record pipe so that no block
came. One batch, then one test per case; honest code that uses a stdlib helper which reads its caller's frame
still passes the run."""

from __future__ import annotations

import pytest

from rlx.data.kernels.generator import IMPORTS, generate
from rlx.rewards.base import Status
from rlx.rewards.triton.reward import TritonReward
from tests.rewards.test_triton_integrity import past_the_vocabulary

pytestmark = pytest.mark.slow

PROBLEM = next(iter(generate([(16, 100)], ["float32"], ["relu"], [], [], fused=False)))
WRONG = PROBLEM.solution.replace("tl.maximum(x,0.0)", "x*0.0")  # launches, in bounds: only its math is wrong
# The reference's outputs as Trial lines, computed at load time (torch is not guarded there) for guessed seeds
# (the reward's seed 0, 3 trials) or for a payload found in the harness's frames: the forward_exploit's recipe.
FORGE = """
import json as _json, os as _os, sys as _sys
from rlx.rewards.triton.records import CandidateTrial as _Trial, Launch as _Launch
from rlx.rewards.triton.tensors import encode_tensor as _encode

def _forged(seeds=(0, 1000, 2000), init_seed=0):
    lines = []
    for t, seed in enumerate(seeds):
        torch.manual_seed(seed)
        inputs = get_inputs()
        torch.manual_seed(init_seed)
        out = Model(*get_init_inputs())(*inputs)
        record = _Trial(t, output=_encode(out), launch_count=1, launches=(_Launch("relu_k", {"B": 128}),),
                        canaries_ok=True, inputs_unchanged=True)
        lines.append(record.to_json())
    return lines

def _write_everywhere(lines, nonce="0" * 32):
    block = _json.dumps({"final": nonce, "records": [{"event": "loaded"}, *lines, {"event": "done"}]})
    data = ("\\n".join(_json.dumps(r) for r in lines) + "\\n" + block + "\\n").encode()
    for fd in range(3, 64):
        try:
            _os.write(fd, data)
        except OSError:
            pass

def _from_frame(frame):
    while frame is not None and "payload" not in frame.f_locals:
        frame = frame.f_back
    payload = frame.f_locals["payload"]
    _write_everywhere(_forged(payload.get("seeds", (0, 1000, 2000)), payload["init_seed"]))
"""


def forged(attack: str) -> str:
    """WRONG with FORGE and `attack` (module-level code) inserted after its imports line."""
    head, _, body = WRONG.partition("\n")
    return head + "\n" + FORGE + attack + "\n" + body


CASES = {
    # the reported exploit: walk sys._getframe up to the harness, read its payload, forge from its seeds
    "via_getframe": (Status.VIOLATION, forged("_from_frame(_sys._getframe(1))")),
    "via_current_frames": (Status.VIOLATION, forged("_from_frame(next(iter(_sys._current_frames().values())))")),
    "via_traceback": (
        Status.VIOLATION,
        forged("try:\n    raise ValueError\nexcept ValueError as e:\n    _from_frame(e.__traceback__.tb_frame)"),
    ),
    "via_generator_frame": (
        Status.VIOLATION,
        forged("def _g():\n    yield _sys\n_it = _g()\nnext(_it)\n_from_frame(_it.gi_frame)"),
    ),
    "via_gc_objects": (
        Status.VIOLATION,
        forged(
            "import gc\n_p = [o for o in gc.get_objects() if isinstance(o, dict) and 'inputs' in o][0]\n"
            "_write_everywhere(_forged())"
        ),
    ),
    "via_gc_referrers": (Status.VIOLATION, forged("import gc\n_refs = gc.get_referrers(get_inputs)")),
    "via_settrace": (Status.VIOLATION, forged("_sys.settrace(lambda frame, event, arg: _from_frame(frame))")),
    "via_setprofile": (Status.VIOLATION, forged("_sys.setprofile(lambda frame, event, arg: _from_frame(frame))")),
    "via_thread_tracer": (
        Status.VIOLATION,
        forged(
            "import threading\nthreading.settrace(lambda frame, event, arg: _from_frame(frame))\n"
            "_t = threading.Thread(target=print)\n_t.start()\n_t.join()"
        ),
    ),
    "via_signal_handler": (
        Status.VIOLATION,
        forged("import signal\nsignal.signal(signal.SIGALRM, lambda n, frame: _from_frame(frame))"),
    ),
    "via_fresh_signal_module": (
        Status.VIOLATION,
        forged("del _sys.modules['_signal']\nimport _signal\n_signal.signal(14, lambda n, f: _from_frame(f))"),
    ),
    "via_ctypes_frame": (
        Status.VIOLATION,
        forged("import ctypes\nctypes.pythonapi.PyEval_GetFrame.restype = ctypes.py_object"),
    ),
    # no introspection: forged lines and a fake final block (guessed nonce) with guessed seeds, from the main
    # thread and from a thread; the reward reads only the block carrying the run's nonce, so they are ignored
    "early_fake_block": (Status.FAIL, forged("_write_everywhere(_forged())")),
    "fake_block_from_thread": (
        Status.FAIL,
        forged(
            "import threading\n_t = threading.Thread(target=lambda: _write_everywhere(_forged()))\n"
            "_t.start()\n_t.join()"
        ),
    ),
    # os.write replaced to rewrite the harness's own block on its way out (keeping its nonce): the recorder bound
    # os.write before candidate code ran, so it never calls this
    "rewrites_the_seal": (
        Status.FAIL,
        forged(
            "_real_write = _os.write\n"
            "def _rewrite(fd, data):\n"
            "    if b'\"final\"' in data:\n"
            "        body = [{'event': 'loaded'}, *_forged(), {'event': 'done'}]\n"
            "        data = data.split(b'[')[0] + _json.dumps(body).encode() + b'}\\n'\n"
            "    return _real_write(fd, data)\n"
            "_os.write = _rewrite"
        ),
    ),
    # a fake block, then the record pipe closed so that the harness's own block cannot follow it
    "fake_block_then_close_pipe": (
        Status.CRASH,
        forged("_write_everywhere(_forged())\n_os.closerange(3, 64)"),
    ),
    "fake_block_then_exit": (Status.CRASH, forged("_write_everywhere(_forged())\n_os._exit(0)")),
    # controls: honest code using stdlib helpers that read their caller's frame (module name only) still passes
    "honest_with_namedtuple_and_enum": (
        Status.PASS,
        PROBLEM.solution.replace(
            "\n",
            "\nimport collections, enum, typing\nP = collections.namedtuple('P', 'a b')\n"
            "E = enum.Enum('E', 'A B')\nT = typing.TypeVar('T')\n",
            1,
        ),
    ),
}


# No forgery at all: the reference's answers computed at load time (torch is not guarded there) for the inputs
# of guessed seeds, returned in trial order. Past the vocabulary it passes at a known seed (0 here: the same
# inputs the reference's sandbox draws), and fails at reward.seed=null, the default, which draws the seeds
# secretly (nothing in the candidate's process reveals them: it gets the inputs as bytes).
PRECOMPUTED = (
    "@triton.jit\ndef k(xp,o,n,B:tl.constexpr):\n tl.store(o,tl.load(xp))\n"
    + """
_table = []
for _s in (0, 1000, 2000):
    torch.manual_seed(_s)
    _inputs = get_inputs()
    torch.manual_seed(0)
    _table.append(Model(*get_init_inputs())(*_inputs))
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
    def forward(self, x):
        k[(1,)](x, x, 1, B=16)
        self.calls += 1
        return _table[self.calls - 1]
"""
)
CASES["precomputed_at_known_seed"] = (Status.PASS, PRECOMPUTED)


def kernel_reward(seed: int | None, base_uid: int) -> TritonReward:
    return TritonReward(
        workers=2,
        device="cpu",
        trials=3,
        seed=seed,
        speedup_cap=2.0,
        speedup_weight=0.5,
        plan_weight=0.5,
        time_repeats=10,
        hide=[],
        base_uid=base_uid,
        limits=dict(wall_s=20, cpu_s=15, memory_mb=4096, nproc=64, fsize_mb=16, disk_mb=64, record_cap_kb=8192),
    )


ROW = {"source": PROBLEM.source, "preamble": IMPORTS, "plan": PROBLEM.plan}


@pytest.fixture(scope="module")
def verdicts():
    reward = kernel_reward(0, 61450)
    try:
        names = list(CASES)
        whole = reward([CASES[n][1] for n in names], [ROW] * len(names))
        alone = past_the_vocabulary(reward, [CASES[n][1] for n in names], ROW)
        return dict(zip(names, whole, strict=True)), dict(zip(names, alone, strict=True))
    finally:
        reward.close()


@pytest.mark.parametrize("name", list(CASES))
def test_the_vocabulary_refuses_every_case(verdicts, name):
    verdict = verdicts[0][name]
    assert verdict.status == Status.VIOLATION and verdict.reward == 0.0, verdict.details
    assert verdict.details["reason"].startswith("outside the kernel vocabulary")


def test_precomputed_answers_fail_at_the_default_secret_seed():
    reward = kernel_reward(None, 61480)
    try:
        honest, precomputed = past_the_vocabulary(reward, [PROBLEM.solution, PRECOMPUTED], ROW)
    finally:
        reward.close()
    assert reward.seed not in (0, 1000, 2000)
    assert honest.status == Status.PASS, honest.details
    assert precomputed.status == Status.FAIL and precomputed.components["correct"] == 0.0, precomputed.details


@pytest.mark.parametrize("name", list(CASES))
def test_forged_records_earn_no_correctness_past_the_vocabulary(verdicts, name):
    verdict = verdicts[1][name]
    assert verdict.status == CASES[name][0], verdict.details
    if verdict.status == Status.VIOLATION:  # refused by the tripwire, not by a check the forgery happened to fail
        assert verdict.details["reason"].startswith("blocked "), verdict.details
    if verdict.status != Status.PASS:
        assert verdict.components["correct"] == 0.0 and verdict.reward == 0.0
    else:
        assert verdict.components["correct"] == 1.0
