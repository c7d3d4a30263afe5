"""Episodes with environment feedback: the protocol (rlx.envs.protocol) and the built-in environments."""
