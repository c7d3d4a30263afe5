"""Sweep jobs that need the same warm start train it once: a second process waits on the recipe's lock and
then reuses the first one's model instead of training its own."""

from __future__ import annotations

import fcntl
import threading
import time

from rlx.models.tiny import TinyModel


class CountingTiny(TinyModel):
    """TinyModel whose build writes a marker config instead of training, and counts its calls."""

    builds = 0

    def build(self, task, target, lock):
        type(self).builds += 1
        time.sleep(0.3)  # long enough for the other caller to reach the lock
        target.mkdir(parents=True)
        (target / "config.json").write_text("{}")


def test_a_second_process_waits_for_the_first_warm_start_and_reuses_it(tmp_path, monkeypatch):
    monkeypatch.setattr("rlx.models.tiny.load_local", lambda target, *a: target)
    task = type("Task", (), {"conversational": False})()
    model = CountingTiny.__new__(CountingTiny)
    model.cache_dir, model.dtype, model.gradient_checkpointing, model.threads = tmp_path, "float32", False, None
    monkeypatch.setattr(CountingTiny, "cache_key", lambda self, task: "recipe")
    results = []
    threads = [threading.Thread(target=lambda: results.append(model(task))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert CountingTiny.builds == 1
    assert results == [tmp_path / "tiny" / "recipe"] * 2
    with open(tmp_path / "tiny" / ".recipe.lock") as lock:  # released: nobody holds it any more
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
