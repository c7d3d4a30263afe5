"""The trainer's forward: the log-probabilities (and entropies, or a critic's values) that a model gives the
tokens of completions already sampled, a trimmed micro-batch at a time (rlx.forward.logprobs), with the
prompt shared by a group run once (rlx.forward.prefix) and the LM head fused with the log-softmax
(rlx.forward.head). rlx.update is its user; the rollout engines sample with their own decode (rlx.rollout).
"""
