"""Benchmarks and studies, run from the repository root (``python -m benchmarks.sweep``); not installed
with the package. Their own tests sit beside them (``benchmarks/efficacy/test_smoke.py``).
"""
