"""Read an offline W&B run directory back (the `.wandb` file), without the network and without wandb-core.

The `.wandb` file is W&B's datastore: a 7-byte header (`:W&B`, magic 0xBEE1, version 0) followed by LevelDB
log records (32 KiB blocks; each record: crc32c 4 B, length 2 B little-endian, type 1 B: 1 full, 2 first,
3 middle, 4 last) whose payloads are `wandb_internal_pb2.Record` protobufs.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

BLOCK = 32768
HEADER = 7


def records(path: Path):
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B datastore file"
    pos, pending = HEADER, b""
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:  # block trailer: zero padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:  # zero padding / preallocated tail
            pos += left
            continue
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            payload, pending = chunk, b""
        elif kind == 2:
            pending = chunk
            continue
        elif kind == 3:
            pending += chunk
            continue
        else:
            payload, pending = pending + chunk, b""
        rec = pb.Record()
        rec.ParseFromString(payload)
        yield rec


def read_run(run_dir: Path) -> dict:
    """{"group", "name", "config": {key: value}, "history": [{key: value}], "history_keys": set}."""
    (wandb_file,) = Path(run_dir).glob("run-*.wandb")
    out: dict = {"group": None, "name": None, "config": {}, "history": [], "history_keys": set()}
    for rec in records(wandb_file):
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            out["group"], out["name"] = rec.run.run_group, rec.run.display_name
            for item in rec.run.config.update:
                out["config"][item.key] = json.loads(item.value_json)
        elif kind == "config":
            for item in rec.config.update:
                out["config"][item.key] = json.loads(item.value_json)
        elif kind == "history":
            row = {}
            for item in rec.history.item:
                key = item.key or "/".join(item.nested_key)
                row[key] = json.loads(item.value_json)
            out["history"].append(row)
            out["history_keys"] |= set(row)
    return out
