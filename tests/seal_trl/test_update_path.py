"""docs/architecture.md's "One GRPO update, in three files" stays true (issue 27 item 2)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()


def update_block() -> dict[str, list[str]]:
    section = DOC.split("## One GRPO update, in three files", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.S).group(1)
    files = {}
    for line in block.strip().splitlines():
        path, names = line.split(None, 1)
        files[path] = [n.strip() for n in names.split(",")]
    return files


def defined(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{m.name}" for m in node.body if isinstance(m, ast.FunctionDef)}
        if isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def calls_in(tree: ast.AST, name: str) -> int:
    return sum(isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == name
               for n in ast.walk(tree))


def function(tree: ast.Module, qualified: str) -> ast.AST:
    parts = qualified.split(".")
    body = tree.body
    for part in parts:
        node = next(n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part)
        body = node.body
    return node


def test_the_update_is_three_files_whose_names_exist():
    files = update_block()
    assert len(files) <= 3
    for path, names in files.items():
        have = defined(ast.parse((ROOT / path).read_text()))
        assert set(names) <= have, (path, set(names) - have)


def test_one_gather_per_step_and_no_results_on_the_trainer():
    trainer = ast.parse((ROOT / "seal_trl" / "training" / "trainer.py").read_text())
    assert calls_in(trainer, "gather_object") == 1 and calls_in(trainer, "gather") == 0
    assert calls_in(function(trainer, "SEALGRPOTrainer._generate_and_score_completions"), "_seal_gather") == 1
    attributes = {n.attr for n in ast.walk(trainer) if isinstance(n, ast.Attribute)}
    assert "_seal_results" not in attributes


def test_both_trainers_play_through_play_batch():
    trainer = ast.parse((ROOT / "seal_trl" / "training" / "trainer.py").read_text())
    data = ast.parse((ROOT / "seal_trl" / "play" / "data.py").read_text())
    assert calls_in(function(trainer, "SEALGRPOTrainer.seal_play"), "play_batch") == 1
    assert calls_in(function(data, "make_rollout_func"), "play_batch") == 1
    assert calls_in(trainer, "run") == 0 and calls_in(function(data, "make_rollout_func"), "run") == 0  # no other way in
