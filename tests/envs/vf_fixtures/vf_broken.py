"""A verifiers 0.4 taskset whose reward exits the way verifiers' remote runtime does when it is not logged in
(`SystemExit`, a BaseException that `except Exception` misses): the adapter must label it INFRA, not crash."""

import verifiers.v1 as vf

__all__ = ["BrokenTaskset"]


class BrokenTask(vf.Task[vf.TaskData, vf.State, vf.TaskConfig]):
    @vf.reward
    async def exits(self, trace: vf.Trace) -> float:
        raise SystemExit("not authenticated with prime")


class BrokenTaskset(vf.Taskset[BrokenTask, vf.TasksetConfig]):
    def load(self):
        yield BrokenTask(vf.TaskData(prompt="1+1="), self.config.task)
