"""Diagnosis-guided advantage weighting on the torch side: token weights from step labels
(over seal_envs.core.weighting) and the trainer's weigher.
"""
