"""Generated KernelBench-level-1-style problems with reference Triton answers (generator.py) and the task that
holds some out (task.py)."""
