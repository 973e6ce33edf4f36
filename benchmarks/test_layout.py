"""The benchmark scripts run as documented: ``python benchmarks/<script>.py`` puts ``benchmarks/``
first on ``sys.path``, so a module there named like a standard-library one (``signal.py`` once)
replaces it for everything the script imports (torch imports ``signal`` and failed)."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parent


def test_no_benchmark_module_shadows_the_standard_library():
    names = {p.stem for p in BENCHMARKS.glob("*.py")} | {p.name for p in BENCHMARKS.iterdir() if p.is_dir()}
    assert not names & set(sys.stdlib_module_names)


@pytest.mark.slow
def test_torch_imports_with_the_benchmarks_folder_first_on_the_path():
    """What ``python benchmarks/bench_trainer.py`` does before its first line runs."""
    code = f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import torch, multiprocessing.resource_tracker"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
