"""Benchmarks and studies, run from the repository root (``python -m benchmarks.recipe``); not installed
with the package. Their own tests sit beside them (``benchmarks/efficacy/test_smoke.py``).
"""
