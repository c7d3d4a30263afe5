"""reward=triton: KernelBench-format kernel tasks scored in the sandbox (see reward.py)."""
