"""Code datasets as they are published: assert lines (MBPP), check(candidate) programs (HumanEval, EvalPlus) and
stdin/stdout pairs (APPS, CodeContests, LiveCodeBench), scored in the sandbox with the comparison outside the
candidate's process. See docs/code_datasets.md.
"""
