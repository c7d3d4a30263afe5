"""The sandbox's record types: what a producer emits parses back to the same record, and anything without a
record's shape (a candidate can write to the record pipe too) parses to None instead of raising."""

from __future__ import annotations

import dataclasses
import json

import pytest
from sandbox_helpers import clean_run

from rlx.rewards.base import Status
from rlx.rewards.sandbox.guard import _violation
from rlx.rewards.sandbox.records import CallOutcome, Event, RunResult, Timing, Trial, events, final_block
from rlx.rewards.sandbox.values import encode
from rlx.rewards.verdicts import run_status


@pytest.mark.parametrize(
    "record",
    [
        Event("done"),
        Event("load_error", error="ZeroDivisionError"),
        Event("violation", what="os.kill", detail="(1, 9)"),
        CallOutcome(0, value=encode((1, [2.0, "a"]))),
        CallOutcome(3, value=encode(None)),
        CallOutcome(1, error="Unencodable", detail="value has more than 20000 parts"),
    ],
)
def test_a_record_survives_its_wire_format(record):
    import json

    wire = json.loads(json.dumps(record.to_json()))  # what crosses the pipe
    assert type(record).parse(wire) == record


def test_the_wire_format_is_the_documented_one():
    assert Event("oom").to_json() == {"event": "oom"}
    assert Event("violation", what="socket.connect", detail="x").to_json() == {
        "event": "violation",
        "what": "socket.connect",
        "detail": "x",
    }
    assert CallOutcome(2, value=["int", "3"]).to_json() == {"test": 2, "value": ["int", "3"]}
    assert CallOutcome(2, error="KeyError").to_json() == {"test": 2, "error": "KeyError"}


@pytest.mark.parametrize("record", [{}, {"event": 3}, {"event": None}, {"test": "0"}, {"test": True}, {"x": 1}])
def test_a_record_of_the_wrong_shape_parses_to_none(record):
    assert Event.parse(record) is None
    assert CallOutcome.parse(record) is None


def test_fields_of_the_wrong_type_are_dropped_not_trusted():
    assert Event.parse({"event": "violation", "what": ["os.kill"], "detail": 5}) == Event("violation")
    assert CallOutcome.parse({"test": 0, "error": {"not": "a name"}}) == CallOutcome(0)


def test_events_keeps_the_well_formed_events_in_order():
    records = [{"event": "loaded"}, {"test": 0, "value": ["none"]}, {"event": 1}, {"event": "done", "ms": 2.0}]
    assert events(records) == [Event("loaded"), Event("done")]


def test_a_run_result_survives_the_servers_pipe_and_a_broken_reply_is_refused():
    result = clean_run([{"event": "loaded"}, {"test": 0, "value": ["int", "3"]}], bad_records=1)
    assert RunResult.from_json(json.loads(json.dumps(result.to_json()))) == result
    broken = RunResult.broken("mount failed", wall_s=0.2)
    assert RunResult.from_json(broken.to_json()) == broken and broken.infra == "mount failed"
    with pytest.raises(TypeError):  # what the pool turns into INFRA
        RunResult.from_json({**result.to_json(), "verdict": "PASS"})
    with pytest.raises((TypeError, KeyError)):
        RunResult.from_json({"records": []})


def test_kernel_trial_and_timing_records_round_trip_and_forgeries_are_dropped():
    trial = Trial(0, {"dtype": "torch.float32"}, None, 2, ({"B": 128},), (), True, True)
    assert Trial.parse(json.loads(json.dumps(trial.to_json()))) == trial
    failed = Trial(1, error="RuntimeError: boom")  # what raised: no output, counted launches default to none
    assert Trial.parse(failed.to_json()) == failed and "output" not in failed.to_json()
    for forged in (
        {"trial": True},
        {"trial": 0, "launches": "9"},
        {"trial": 0, "refused": "x"},
        {"trial": 0, "canaries_ok": 1},
        {"trial": 0, "blocks": [["B", 128]]},
        {"trial": 0, "output": 3},
    ):
        assert Trial.parse(forged) is None, forged
    timing = Timing(ms=0.25)
    assert timing.to_json() == {"event": "timing", "ms": 0.25, "refused": []}  # the harness's wire format
    assert Timing.parse(timing.to_json()) == timing
    assert Timing.parse({"event": "timing", "ms": float("nan"), "refused": []}) == Timing()  # no usable time
    assert Timing.parse({"event": "timing", "ms": True, "refused": []}) == Timing()
    assert Timing.parse({"event": "timing", "ms": 1.0, "refused": "relu"}) is None
    assert Timing.parse({"event": "done"}) is None


def test_the_tripwires_mark_is_a_violation_event():
    assert _violation("os.kill", "(1, 9)") == Event("violation", what="os.kill", detail="(1, 9)").to_json()


def test_only_the_one_block_with_the_runs_nonce_is_trusted():
    nonce, loaded, forged = "ab" * 16, {"event": "loaded"}, {"trial": 0, "launches": 9}
    violation = {"event": "violation", "what": "sys._getframe"}
    block = {"final": nonce, "records": [loaded]}
    # lines before and after the block, and a block under a guessed nonce, are stray
    lines = [forged, {"final": "0" * 32, "records": [forged]}, block, violation]
    assert final_block(lines, nonce) == ((loaded,), (forged, lines[1], violation))
    assert final_block([forged], nonce) == (None, (forged,))  # the harness never sealed
    assert final_block([block, block], nonce)[0] is None  # a second one means the nonce leaked: neither counts
    assert final_block([{"final": nonce, "records": [loaded, 3]}], nonce)[0] is None
    assert final_block([{"final": nonce, "records": "x"}], nonce)[0] is None


def test_a_stray_violation_accuses_the_run_and_a_missing_block_is_a_crash():
    loaded = {"event": "loaded"}
    accused = clean_run([loaded], stray=({"event": "violation", "what": "gc.get_objects"},))
    assert run_status(accused) == (Status.VIOLATION, "blocked gc.get_objects")
    assert run_status(clean_run([loaded], stray=({"event": "load_error", "error": "SyntaxError"},))) == (None, "")
    unsealed = dataclasses.replace(clean_run([]), sealed=False)
    assert run_status(unsealed)[0] == Status.CRASH
    assert run_status(dataclasses.replace(unsealed, timed_out=True))[0] == Status.TIMEOUT  # a cause wins


def test_a_record_nested_too_deep_is_a_bad_record_not_a_crash_of_the_supervisor():
    from rlx.rewards.sandbox.runner import _read_records

    deep = b"[" * 100_000 + b"]" * 100_000
    assert _read_records(deep + b'\n{"event": "loaded"}\n') == ([{"event": "loaded"}], 1)
