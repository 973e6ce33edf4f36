"""The Python examples in the README and docs run as written (a page's blocks share one namespace)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
         if "```python" in p.read_text()]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_doc_examples_run(page, tmp_path, monkeypatch):
    if page.name == "bfcl.md":
        pytest.importorskip("bfcl_eval")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__doc_example__"}
    for i, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)):
        exec(compile(code, f"{page.name}[{i}]", "exec"), namespace)


def test_readme_has_examples():
    assert any(p.name == "README.md" for p in PAGES)
