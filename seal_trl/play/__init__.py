"""Playing episodes for training: the chat rendering, the generate-function contract and the
KV-cached engine, the batched multi-turn rollout, and the TRL data glue (datasets, play_batch,
rollout_func).
"""
