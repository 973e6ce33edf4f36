"""Every Python block of README.md and docs/*.md runs as a user would run it: pasted into a fresh
interpreter (a new process, in an empty folder). A block whose first line is
``# continues the block above`` runs after the block before it, in the same process; any other
block runs alone, so a block that silently needs the imports of an earlier one fails here.
A block that needs an optional package says so in a line ``# requires: gem, skyrl_gym`` (module
names) among its first lines; it is skipped where one of them cannot be imported."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))] if "```python" in p.read_text()]
CONTINUES = "# continues the block above"
REQUIRES = re.compile(r"^# requires: (.+)$", re.MULTILINE)
RUNNER = """import json, sys
ns = {"__name__": "__main__"}
for name, code in json.load(open(sys.argv[1])):
    exec(compile(code, name, "exec"), ns)
"""


def chains(page: Path) -> list[list[tuple[str, str]]]:
    """The page's Python blocks grouped as they must run: a new group at every block that does
    not continue the one above."""
    groups: list[list[tuple[str, str]]] = []
    for i, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)):
        block = (f"{page.name}[{i}]", code)
        if code.startswith(CONTINUES):
            assert groups, f"{page.name}[{i}] continues a block, but it is the first one"
            groups[-1].append(block)
        else:
            groups.append([block])
    return groups


CHAINS = [(page, chain) for page in PAGES for chain in chains(page)]


def _case(page: Path, chain: list[tuple[str, str]]):
    """A chain that loads ``seal_trl`` (torch, often a training step) belongs to the slow lane."""
    loads_torch = any("seal_trl" in code for _, code in chain)
    return pytest.param(page, chain, id="+".join(name for name, _ in chain),
                        marks=[pytest.mark.slow] if loads_torch else [])


@pytest.mark.parametrize("page, chain", [_case(page, chain) for page, chain in CHAINS])
def test_doc_blocks_run_as_pasted(page, chain, tmp_path):
    if page.name == "bfcl.md":
        pytest.importorskip("bfcl_eval")
    for _, code in chain:
        head = "\n".join(code.splitlines()[:3])
        for match in REQUIRES.finditer(head):
            for module in match.group(1).split(","):
                pytest.importorskip(module.strip(), exc_type=ImportError)
    (tmp_path / "blocks.json").write_text(json.dumps(chain))
    (tmp_path / "run.py").write_text(RUNNER)
    out = subprocess.run([sys.executable, "run.py", "blocks.json"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]


def test_readme_has_examples_and_a_lone_block_needing_an_earlier_one_fails(tmp_path):
    assert any(p.name == "README.md" for p in PAGES)
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 1\n```\n\n```python\nprint(x)\n```\n\n```python\n" + CONTINUES + "\nprint(x)\n```\n")
    assert [len(c) for c in chains(page)] == [1, 2]   # the second block does not say it continues; the third does
    lone = subprocess.run([sys.executable, "-c", chains(page)[1][0][1]], capture_output=True, text=True)
    assert lone.returncode != 0 and "NameError" in lone.stderr


DURATION = re.compile(r"#.*(\d+(\.\d+)? ?(s|min|minutes?|seconds?)\b|seconds|a second|as long as you type|the server's speed)")


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [line.strip() for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL)
            for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_every_readme_command_states_its_duration_or_carries_a_limit():
    """A newcomer knows before pressing enter how long a command takes (issue 20)."""
    commands = readme_commands()
    assert len(commands) >= 10
    for line in commands:
        assert "--limit" in line or DURATION.search(line), f"README command without a stated duration: {line}"


@pytest.mark.parametrize("line", [c for c in readme_commands() if c.startswith(("seal envs", "seal show"))
                                  or "--agent oracle" in c])
def test_quick_readme_commands_run_as_written(line, tmp_path):
    """The README's second-scale commands, pasted into a shell in a fresh folder: no traceback."""
    import shlex

    args = shlex.split(line, comments=True)
    assert args[0] == "seal"
    out = subprocess.run([sys.executable, "-m", "seal_cli", *args[1:]], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.stdout.strip()
