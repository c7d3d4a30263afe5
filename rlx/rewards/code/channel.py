"""Length-prefixed JSON frames between the checker and the candidate's process (both inside one sandboxed run).

The checker reads what the candidate's process wrote as hostile bytes: each read has a deadline and a size
cap, and anything that is not a well-formed frame ends the candidate (`Broken`), never the checker.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time

HEADER = struct.Struct(">I")


class Broken(Exception):
    """The other end closed, stalled past the deadline, or wrote something that is not a frame."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind, self.detail = kind, detail


def send(fd: int, message: dict) -> None:
    body = json.dumps(message).encode()
    data = HEADER.pack(len(body)) + body
    while data:
        data = data[os.write(fd, data) :]


def read_exact(fd: int, size: int, deadline: float | None) -> bytes:
    data = bytearray()
    while len(data) < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise Broken("Timeout")
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            raise Broken("Exited", "the candidate's process ended")
        data += chunk
    return bytes(data)


def receive(fd: int, deadline: float | None, cap: int) -> dict:
    (size,) = HEADER.unpack(read_exact(fd, HEADER.size, deadline))
    if size > cap:
        raise Broken("TooLarge", f"a reply of {size} bytes (cap {cap})")
    try:
        message = json.loads(read_exact(fd, size, deadline))
    except ValueError:
        raise Broken("Garbled", "a reply that is not JSON") from None
    if not isinstance(message, dict):
        raise Broken("Garbled", "a reply that is not an object")
    return message
