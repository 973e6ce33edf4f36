"""Imports run one way: core <- domains, bfcl, mcp <- env <- seal_trl <- seal_cli (the command line).

Every subpackage of ``seal_envs`` has a rule here (a new one fails until it gets one): which
``seal_envs`` packages it may import, relative imports and imports inside functions included.
"""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"torch", "trl", "transformers", "seal_trl", "datasets", "accelerate", "peft"}
# subpackage -> the seal_envs packages its modules may import (besides itself)
ALLOWED = {
    "core": (),
    "domains": ("seal_envs.core",),
    "bfcl": ("seal_envs.core",),
    "mcp": ("seal_envs.core",),

    "integrations": ("seal_envs",),  # the top of seal_envs: adapters over the env, for other frameworks
}
SUBPACKAGES = sorted(p.parent.name for p in (ROOT / "seal_envs").glob("*/__init__.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, package: str | None = None) -> set[str]:
    """Absolute names of every module ``path`` imports, relative imports resolved."""
    if package is None:
        package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                names.add(node.module)
                continue
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            if node.module:
                names.add(f"{base}.{node.module}")
            else:
                names |= {f"{base}.{a.name}" for a in node.names}
    return names


def outside(name: str, allowed: tuple[str, ...]) -> bool:
    return not any(name == a or name.startswith(a + ".") for a in allowed)


def test_every_subpackage_has_a_rule():
    assert SUBPACKAGES == sorted(ALLOWED), "give each seal_envs subpackage a layer rule in ALLOWED"


@pytest.mark.parametrize("path", sorted((ROOT / "seal_envs").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_seal_envs_stays_light(path):
    assert not {n.split(".")[0] for n in imports(path)} & HEAVY


@pytest.mark.parametrize("path", [p for sub in SUBPACKAGES for p in sorted((ROOT / "seal_envs" / sub).rglob("*.py"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_subpackage_imports_only_lower_layers(path):
    sub = path.relative_to(ROOT / "seal_envs").parts[0]
    allowed = (f"seal_envs.{sub}", *ALLOWED[sub])
    upper = sorted(n for n in imports(path) if n.split(".")[0] == "seal_envs" and outside(n, allowed))
    assert not upper, f"{path.relative_to(ROOT)} imports {upper}; seal_envs.{sub} may import only {allowed}"


@pytest.mark.parametrize("path", sorted((ROOT / "seal_envs" / "core").glob("*.py")), ids=lambda p: p.name)
def test_core_needs_no_gymnasium(path):
    assert "gymnasium" not in {n.split(".")[0] for n in imports(path)}


def test_the_rule_sees_relative_and_late_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from . import loader\nfrom ..core.types import Task\ndef f():\n    from seal_envs.env import E\n")
    assert imports(module, "seal_envs.bfcl") == {"seal_envs.bfcl.loader", "seal_envs.core.types", "seal_envs.env"}
    assert [n for n in imports(module, "seal_envs.bfcl") if outside(n, ("seal_envs.bfcl", "seal_envs.core"))] == ["seal_envs.env"]


@pytest.mark.parametrize("path", sorted([*(ROOT / "seal_envs").rglob("*.py"), *(ROOT / "seal_trl").rglob("*.py")]),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_cli_is_the_top_layer(path):
    """``seal_cli`` imports the libraries; nothing in them imports the command line."""
    assert not {n for n in imports(path) if n.split(".")[0] == "seal_cli"}


def test_env_commands_need_no_trainer():
    assert not {n for n in imports(ROOT / "seal_cli" / "env_commands.py") if n.split(".")[0] in HEAVY}


def test_import_seal_trl_and_cli_without_torch():
    code = ("import sys, seal_envs, seal_trl, seal_cli.main; seal_cli.main.build_parser(); "
            "print(sorted(m for m in ('torch', 'transformers', 'trl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_wheel_ships_no_notes():
    """Package data is what the code loads (split files, the default checkpoint); notes for
    developers such as docs/trl_internals.md live in docs/, outside the wheel (issue 17)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = {p for pkg in ("seal_envs", "seal_trl") for pattern in data.get("*", []) for p in (ROOT / pkg).rglob(pattern)}
    shipped |= {p for pkg, patterns in data.items() if pkg != "*" for pattern in patterns
                for p in (ROOT / pkg.replace(".", "/")).glob(pattern)}
    assert shipped and not sorted(str(p.relative_to(ROOT)) for p in shipped if p.suffix == ".md")
    assert not sorted((ROOT / "seal_trl").rglob("*.md")) and not sorted((ROOT / "seal_envs").rglob("*.md"))


# -- the surface is applied in one place (issue 17) ---------------------------------------------
SURFACE_RENDERERS = {"render_event", "render_system_notes", "render_tools", "render_tool", "_rendered_tools", "_rendered_tool"}
SHOWING_METHODS = {"_feedback", "_system_text", "_rendered"}


def test_the_env_applies_the_surface_in_its_showing_methods_only():
    """Every call that renders through the surface sits in ToolUseEnv._feedback, _system_text or
    _rendered: what the agent is shown, never what runs, is stored or is judged."""
    tree = ast.parse((ROOT / "seal_envs" / "env.py").read_text())
    env = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ToolUseEnv")
    found = {}
    for method in (n for n in env.body if isinstance(n, ast.FunctionDef)):
        for node in ast.walk(method):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in SURFACE_RENDERERS:
                    found.setdefault(method.name, set()).add(name)
    assert set(found) == SHOWING_METHODS, found


def _closure(module: str) -> set[str]:
    """The seal_envs modules ``module`` imports, directly or through others."""
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        path = ROOT / (name.replace(".", "/") + ".py")
        if name in seen or not path.is_file():
            path = ROOT / name.replace(".", "/") / "__init__.py"
            if name in seen or not path.is_file():
                continue
        seen.add(name)
        todo += [n for n in imports(path, name if path.name == "__init__.py" else name.rsplit(".", 1)[0])
                 if n.startswith("seal_envs")]
    return seen


JUDGES = ["seal_envs.core.backend", "seal_envs.core.verifier", "seal_envs.core.diagnosis", "seal_envs.core.official",
          "seal_envs.core.calls", "seal_envs.core.validation", "seal_envs.bfcl.backend", "seal_envs.bfcl.checker",
          "seal_envs.mcp.backend", "seal_envs.mcp.source", "seal_envs.mcp.client",
          *(f"seal_envs.domains.{p.parent.name}.backend" for p in sorted((ROOT / "seal_envs/domains").glob("*/backend.py")))]


@pytest.mark.parametrize("module", JUDGES)
def test_what_runs_and_judges_cannot_see_the_surface(module):
    """Tools, their state, parsing, validation, verification and diagnosis import nothing that
    holds a surface, so no patch can reach them."""
    assert "seal_envs.core.surface" not in _closure(module) and "seal_envs.env" not in _closure(module)


def import_graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (anywhere in the file), each name resolved to the
    longest module it names (``from seal_trl.play.rollout import X`` is ``seal_trl.play.rollout``)."""
    paths = {module_name(p): p for pkg in packages for p in (ROOT / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        edges = set()
        for target in imports(path):
            while target and target not in paths:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycles_finds_a_circle_and_only_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_anywhere():
    """Imports inside functions count: a circle broken only by a lazy import is still two modules
    a reader cannot understand one without the other (issue 27)."""
    graph = import_graph(("seal_envs", "seal_trl", "seal_cli", "seal_verifiers"))
    assert len(graph) > 100 and any("seal_trl.play.rollout" in e for e in graph.values())
    assert cycles(graph) == []
