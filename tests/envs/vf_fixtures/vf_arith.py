"""A single-turn verifiers 0.4 taskset in the library's own idiom: typed task data, `@vf.reward` methods
(weighted), a `Taskset.load()` yielding tasks. Sums of two digits; the answer is the first integer in the
model's reply."""

import re

import verifiers.v1 as vf

__all__ = ["ArithTaskset"]


class ArithData(vf.TaskData):
    answer: int


class ArithTask(vf.Task[ArithData, vf.State, vf.TaskConfig]):
    @vf.reward(weight=1.0)
    async def correct(self, task: ArithData, trace: vf.Trace) -> float:
        reply = trace.assistant_messages[-1].content or "" if trace.assistant_messages else ""
        found = re.search(r"-?\d+", reply)
        return float(found is not None and int(found.group()) == task.answer)

    @vf.reward(weight=0.5)
    async def short(self, trace: vf.Trace) -> float:
        reply = trace.assistant_messages[-1].content or "" if trace.assistant_messages else ""
        return float(len(reply.strip()) <= 3)


class ArithTaskset(vf.Taskset[ArithTask, vf.TasksetConfig]):
    def load(self):
        for a, b in [(1, 2), (3, 4), (5, 5), (9, 8)]:
            yield ArithTask(ArithData(prompt=f"{a}+{b}=", answer=a + b), self.config.task)
