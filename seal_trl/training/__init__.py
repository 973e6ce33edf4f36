"""The trainer and its entry points: SEALConfig, SEALGRPOTrainer, RL algorithms, task sampling,
the shared-prefix loss, `seal train` (train.py), recipes and progress bars.
"""
