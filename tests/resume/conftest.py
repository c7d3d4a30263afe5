"""Every test here starts with rlx.cli.stop's state empty and leaves the process's signal handlers as it found
them (a test that installs rlx's handler must not leave SIGINT turned into a recorded flag for the next one)."""

from __future__ import annotations

import signal
import sys

import pytest

from rlx.cli import stop

HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)


@pytest.fixture(autouse=True)
def clean_stop_state():
    handlers = {signum: signal.getsignal(signum) for signum in HANDLED}
    hook = sys.unraisablehook
    stop.reset()
    yield
    sys.unraisablehook = hook
    stop.reset()
    stop.restore_all()
    for signum, handler in handlers.items():
        signal.signal(signum, handler)
