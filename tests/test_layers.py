"""Imports run one way: core <- domains, bfcl <- env <- seal_trl and the CLI."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"torch", "trl", "transformers", "seal_trl", "datasets", "accelerate", "peft"}


def imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted((ROOT / "seal_envs").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_seal_envs_stays_light(path):
    assert not {n.split(".")[0] for n in imports(path)} & HEAVY


@pytest.mark.parametrize("path", sorted((ROOT / "seal_envs" / "core").glob("*.py")), ids=lambda p: p.name)
def test_core_imports_no_upper_layer(path):
    upper = {n for n in imports(path) if n.startswith("seal_envs.") and not n.startswith("seal_envs.core")}
    assert not upper and "gymnasium" not in {n.split(".")[0] for n in imports(path)}


def test_import_seal_trl_and_cli_without_torch():
    code = ("import sys, seal_envs, seal_trl, seal_trl.cli; seal_trl.cli.build_parser(); "
            "print(sorted(m for m in ('torch', 'transformers', 'trl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
