"""The sandbox's record types: what a producer emits parses back to the same record, and anything without a
record's shape (a candidate can write to the record pipe too) parses to None instead of raising."""

from __future__ import annotations

import pytest

from rlx.rewards.sandbox.records import CallOutcome, Event, events
from rlx.rewards.sandbox.values import encode


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
