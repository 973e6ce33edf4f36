"""A Python domain from outside the package (examples/python_domain/notes_domain.py): a function
call or a ``seal_envs.domains`` entry point gives it ids, splits, task ids and CLI support."""

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import seal_envs
from seal_envs.testing import check_do_nothing_fails, check_oracle_solves_all, check_surface_invariance

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIR = ROOT / "examples" / "python_domain"


@pytest.fixture(scope="module")
def notes():
    sys.path.insert(0, str(PLUGIN_DIR))
    import notes_domain
    from seal_envs.domains import GENERATORS

    yield notes_domain
    sys.path.remove(str(PLUGIN_DIR))
    GENERATORS.pop("notes", None)  # other tests compare the registry with a fresh process's
    gym.registry.pop("seal/ToolUse-Notes-v0", None)


def test_a_function_call_registers_ids_splits_and_task_ids(notes):
    env_id = seal_envs.register_domain(notes.GENERATOR)
    assert env_id == "seal/ToolUse-Notes-v0" and env_id in seal_envs.registered_ids()
    assert seal_envs.register_domain(notes.GENERATOR) == env_id  # idempotent
    env = gym.make(env_id)
    sizes = {s: len(env.unwrapped.task_set.with_split(s)) for s in ("train", "test", "ood")}
    assert sizes == {"train": 400, "test": 200, "ood": 200}
    task = seal_envs.task_from_id("notes/test/d3/100002")
    assert task.domain == "notes" and task.turns[0].withheld is not None
    assert check_oracle_solves_all(env_id, splits=("test",)) == 200
    assert check_do_nothing_fails(env_id, splits=("test",)) == 200
    assert check_surface_invariance(env_id, seeds=(0, 1)) > 0
    assert "notes" not in gym.make("seal/ToolUse-v0").unwrapped.task_set.domains  # the mixture is unchanged


def test_bad_registrations_are_clear_errors(notes):
    with pytest.raises(TypeError, match="DomainGenerator"):
        seal_envs.register_domain(object())

    class Clash(notes.NotesGenerator):
        domain = "bank"

    with pytest.raises(ValueError, match="already registered"):
        seal_envs.register_domain(Clash())


@pytest.mark.slow
def test_an_entry_point_registers_the_domain_for_the_cli(tmp_path):
    dist = tmp_path / "notes_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: notes-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[seal_envs.domains]\nnotes = notes_domain:GENERATOR\n"
                                           "broken = no_such_module:GENERATOR\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(PLUGIN_DIR), str(ROOT)])}
    run = lambda *a: subprocess.run([sys.executable, "-m", "seal_cli", *a], capture_output=True, text=True,  # noqa: E731
                                    env=env, timeout=120)
    out = run("envs", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["id"]: r for r in json.loads(out.stdout)}
    assert rows["seal/ToolUse-Notes-v0"]["splits"] == {"train": 400, "test": 200, "ood": 200}
    assert "broken" in out.stderr  # a broken plugin is a warning, not a failed import
    out = run("show", "notes/test/d3/100002")
    assert out.returncode == 0 and "delete_note" in out.stdout, out.stderr
    out = run("play", "seal/ToolUse-Notes-v0", "--seed", "1")
    assert out.returncode == 1 and "notes/train" in out.stdout  # stdin ended before the episode did
