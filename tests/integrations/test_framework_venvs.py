"""verl and verifiers pin what the test venv cannot share (verl: transformers < 5.11; verifiers:
mcp==2.0.0, which OpenEnv refuses), so .ci/run builds each its own venv beside the test venv
(``.ci-venv-verl``, ``.ci-venv-vf``; or point ``SEAL_VERL_PYTHON`` / ``SEAL_VERIFIERS_PYTHON`` at an
interpreter) and their tests run there, from this suite. Where no such venv is built, skipped."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENVS = {
    "verl": ("SEAL_VERL_PYTHON", ".ci-venv-verl", "tests/integrations/test_verl.py"),
    "verifiers": ("SEAL_VERIFIERS_PYTHON", ".ci-venv-vf", "tests/integrations/test_verifiers.py"),
}


@pytest.mark.parametrize("framework", sorted(VENVS))
def test_the_frameworks_tests_pass_in_its_own_venv(framework):
    variable, folder, tests = VENVS[framework]
    python = Path(os.environ.get(variable) or ROOT / folder / "bin" / "python")
    if not python.exists():
        pytest.skip(f"no {framework} venv here (.ci/run builds {folder}; or set {variable})")
    out = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", tests], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=900)
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) > 0 and "skipped" not in summary, summary  # ran, not skipped
