"""Bundled KernelBench-level-1-style problems, each with a reference Triton solution (see problems.py)."""
