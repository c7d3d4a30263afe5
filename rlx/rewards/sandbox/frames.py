"""Wire formats of the sandbox (stdlib only: this file is copied into the jail).

A *message* is a JSON object plus raw byte blobs: `pack_message` makes its bytes (8-byte big-endian length of
the JSON, the JSON with a `"blobs": [sizes]` field, the blobs). A *frame* carries one message or control record
between two processes: one type byte, an 8-byte big-endian length, the body.

Between checker and zygote: S (start a session: JSON), M (a message for / from the candidate, opaque bytes
relayed as they are), C (close the session), H (hello: JSON), E (the session ended: JSON facts, `started` saying
whether the candidate's setup finished).
Between zygote and candidate: plain length-prefixed messages.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Sequence

HEADER = struct.Struct(">cQ")


class Malformed(ValueError):
    """Bytes that are not a well-formed message (too large, not JSON, too deeply nested, wrong shape)."""


def pack_message(message: dict, blobs: Sequence[bytes] = ()) -> bytes:
    body = json.dumps({**message, "blobs": [len(b) for b in blobs]}).encode()
    return struct.pack(">Q", len(body)) + body + b"".join(blobs)


def unpack_message(data: bytes) -> tuple[dict, list[bytes]]:
    """Parse a message from untrusted bytes; raises Malformed, never anything else."""
    try:
        if len(data) < 8:
            raise Malformed("message shorter than its header")
        size = struct.unpack(">Q", data[:8])[0]
        if size > len(data) - 8:
            raise Malformed("message shorter than its JSON length")
        message = json.loads(data[8 : 8 + size])
        sizes = message.pop("blobs", []) if isinstance(message, dict) else None
        if not isinstance(message, dict):
            raise Malformed("message is not a JSON object")
        if not (isinstance(sizes, list) and all(type(s) is int and s >= 0 for s in sizes)):
            raise Malformed("message's blob sizes are not a list of sizes")
        if 8 + size + sum(sizes) != len(data):
            raise Malformed("message's blobs do not add up to its length")
        blobs, offset = [], 8 + size
        for blob_size in sizes:
            blobs.append(data[offset : offset + blob_size])
            offset += blob_size
        return message, blobs
    except Malformed:
        raise
    except (ValueError, RecursionError, MemoryError, TypeError, OverflowError) as err:
        raise Malformed(f"message is not valid JSON ({type(err).__name__})") from None


def read_exact(fd: int, size: int) -> bytes | None:
    """`size` bytes from `fd`, or None at end of file."""
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_frame(fd: int, kind: bytes, body: bytes) -> None:
    write_all(fd, HEADER.pack(kind, len(body)) + body)


def read_frame(fd: int, cap: int) -> tuple[bytes, bytes] | None:
    """(type, body) of the next frame, or None at end of file; raises Malformed beyond `cap` bytes."""
    header = read_exact(fd, HEADER.size)
    if header is None:
        return None
    kind, size = HEADER.unpack(header)
    if size > cap:
        raise Malformed(f"frame of {size} bytes is over the {cap}-byte cap")
    body = read_exact(fd, size)
    return None if body is None else (kind, body)


def json_frame(fd: int, kind: bytes, record: dict) -> None:
    write_frame(fd, kind, json.dumps(record).encode())
