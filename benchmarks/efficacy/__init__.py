"""Efficacy study (issue 7, part 4): stock GRPO vs. SEAL's reweighting, evolution and curriculum
on a tiny Llama trained from scratch on CPU. Entry point: ``python -m benchmarks.efficacy.run``."""
