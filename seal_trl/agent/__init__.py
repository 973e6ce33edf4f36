"""The default agent: the tiny model and tokenizer, the supervised warm start that makes the
shipped checkpoint (checkpoints/default) and its provenance, the HF batch agent and greedy
policy evaluation.
"""
