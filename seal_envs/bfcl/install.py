"""Install bfcl-eval the light way: ``python -m seal_envs.bfcl.install``.

bfcl-eval's own dependency list is long (model SDKs, an old numpy pin...). The multi-turn
backends and checker import only the standard library and ``mpmath`` (``MathAPI``), so this
runs ``pip install --no-deps bfcl-eval==2026.3.23`` and ``pip install mpmath``, then checks that
every backend class loads. ``--check`` only checks.
"""

from __future__ import annotations

import subprocess
import sys

BFCL_EVAL = "bfcl-eval==2026.3.23"
EXTRA = ("mpmath>=1.3",)


def check() -> list[str]:
    """The backend classes that fail to import (empty when all load)."""
    from . import loader

    if not loader.available():
        return ["bfcl_eval"]
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    failed = []
    for name in CLASS_FILE_PATH_MAPPING:
        if name.startswith(("Memory", "WebSearch")):  # not used by the multi-turn categories
            continue
        try:
            loader.backend_class(name)
        except ImportError as e:
            failed.append(f"{name}: {e}")
    return failed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--check" not in argv:
        pip = [sys.executable, "-m", "pip", "install", "-q"]
        subprocess.run(pip + ["--no-deps", BFCL_EVAL], check=True)
        subprocess.run(pip + list(EXTRA), check=True)
    failed = check()
    print("bfcl-eval multi-turn backends: " + ("all load" if not failed else "missing " + ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
