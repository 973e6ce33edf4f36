"""The files domain: every tool, every policy, atomic failures, and a seeded generator."""

from __future__ import annotations

import copy
import os
import subprocess
import sys

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401  (registers the env)
from seal_envs.agents import OracleAgent, run_episode
from seal_envs.core.generator import rng_for
from seal_envs.core.types import ToolCall
from seal_envs.domains.files import GENERATOR, FilesBackend
from seal_envs.domains.files.backend import children
from seal_envs.domains.files.generator import PHRASES

SEEDS = range(12)


@pytest.fixture
def backend() -> FilesBackend:
    return FilesBackend(GENERATOR.initial_state(rng_for("files", "train", 0)))


def call(backend: FilesBackend, name: str, **arguments):
    return backend.execute(ToolCall(name, arguments))


def home(b: FilesBackend) -> str:
    return next(d for d in b.state["dirs"] if d.startswith("/home/") and d.count("/") == 2)


def a_file(b: FilesBackend) -> str:
    return next(p for p in sorted(b.state["files"]) if p.startswith("/home/"))


def system_file(b: FilesBackend) -> str:
    return next(p for p in sorted(b.state["files"]) if p.startswith("/system/"))


def other_folder(b: FilesBackend, path: str) -> str:
    name = path.rsplit("/", 1)[1]
    return next(d for d in b.state["dirs"] if d.startswith(home(b) + "/") and d != path.rsplit("/", 1)[0]
                and f"{d}/{name}" not in b.state["files"])


# -- every tool ------------------------------------------------------------------------------
TOOL_CASES = {
    "list_directory": lambda b: {"path": home(b), "sort_by": "size"},
    "read_file": lambda b: {"path": a_file(b)},
    "file_info": lambda b: {"path": a_file(b)},
    "search": lambda b: {"query": "owner", "by": "content", "under": home(b)},
    "write_file": lambda b: {"path": home(b) + "/new_1.txt", "content": "hello there"},
    "append_to_file": lambda b: {"path": a_file(b), "line": "one more line"},
    "create_directory": lambda b: {"path": home(b) + "/a_1/b_2"},
    "move": lambda b: {"source": a_file(b), "destination": other_folder(b, a_file(b))},
    "copy": lambda b: {"source": system_file(b), "destination": "/tmp"},
    "delete": lambda b: {"path": a_file(b)},
}


def test_tool_cases_cover_every_tool():
    assert set(TOOL_CASES) == set(FilesBackend.tool_specs())
    assert 7 <= len(TOOL_CASES) <= 12


@pytest.mark.parametrize("name", sorted(TOOL_CASES))
def test_every_tool_works_on_a_generated_state(backend, name):
    event = call(backend, name, **TOOL_CASES[name](backend))
    assert event.kind == "ok", event.message


def test_tool_semantics(backend):
    src = a_file(backend)
    text = backend.state["files"][src]
    folder = other_folder(backend, src)
    assert call(backend, "move", source=src, destination=folder + "/").result["to"] == f"{folder}/{src.rsplit('/', 1)[1]}"
    moved = f"{folder}/{src.rsplit('/', 1)[1]}"
    call(backend, "append_to_file", path=moved, line="last line\n")
    assert backend.state["files"][moved] == text + "\nlast line"
    info = call(backend, "file_info", path=moved).result
    assert info["words"] == len(backend.state["files"][moved].split()) and info["lines"] == text.count("\n") + 2
    assert call(backend, "create_directory", path=home(backend) + "/x_1/y_2").result["created"] == [
        home(backend) + "/x_1", home(backend) + "/x_1/y_2"]
    by_name = call(backend, "search", query=moved.rsplit("/", 1)[1][:4].upper() + "*").result["matches"]
    assert moved in by_name
    listing = call(backend, "list_directory", path=home(backend), sort_by="size").result["entries"]
    sizes = [e["size"] for e in listing if e["type"] == "file"]
    assert sizes == sorted(sizes, reverse=True)


def test_enums_in_schema():
    specs = FilesBackend.tool_specs()
    assert specs["list_directory"].parameters["properties"]["sort_by"]["enum"] == ["name", "size"]
    assert specs["search"].parameters["properties"]["by"]["enum"] == ["name", "content"]
    assert all(s.parameters["properties"][p]["description"] for s in specs.values() for p in s.parameters["properties"])


# -- policies and failures ----------------------------------------------------------------------
POLICY_CASES = [
    ("protected_system", lambda b: ("delete", {"path": system_file(b)})),
    ("protected_system", lambda b: ("move", {"source": system_file(b), "destination": "/tmp"})),
    ("protected_system", lambda b: ("write_file", {"path": "/system/config/new_1.conf", "content": "x"})),
    ("protected_system", lambda b: ("append_to_file", {"path": system_file(b), "line": "x"})),
    ("protected_system", lambda b: ("create_directory", {"path": "/system/extra"})),
    ("empty_directory_only", lambda b: ("delete", {"path": home(b)})),
    ("no_overwrite", lambda b: ("write_file", {"path": a_file(b), "content": "x"})),
    ("no_overwrite", lambda b: ("copy", {"source": a_file(b), "destination": sorted(b.state["files"])[-1]})),
]


def test_policy_cases_cover_every_rule():
    assert {rule for rule, _ in POLICY_CASES} == set(FilesBackend.POLICIES)
    for spec in FilesBackend.tool_specs().values():
        assert spec.writes == bool(spec.policies)


@pytest.mark.parametrize("rule,make", POLICY_CASES)
def test_policy_raises_with_rule_and_leaves_state(backend, rule, make):
    name, arguments = make(backend)
    before = copy.deepcopy(backend.state)
    event = call(backend, name, **arguments)
    assert (event.kind, event.rule) == ("policy_violation", rule)
    assert backend.state == before


def test_overwrite_true_is_allowed(backend):
    path = a_file(backend)
    assert call(backend, "write_file", path=path, content="new", overwrite=True).ok
    assert backend.state["files"][path] == "new"


@pytest.mark.parametrize("name,make,param", [
    ("read_file", lambda b: {"path": "/home/nobody/x_1.txt"}, "path"),
    ("read_file", lambda b: {"path": "notes/x_1.txt"}, "path"),
    ("write_file", lambda b: {"path": home(b) + "/missing_1/x.txt", "content": "x"}, "path"),
    ("create_directory", lambda b: {"path": a_file(b) + "/inner"}, "path"),
    ("create_directory", lambda b: {"path": home(b)}, "path"),
    ("move", lambda b: {"source": a_file(b), "destination": a_file(b)}, "destination"),
    ("copy", lambda b: {"source": home(b), "destination": "/tmp"}, "source"),
    ("search", lambda b: {"query": "x", "under": "/nowhere"}, "under"),
])
def test_failed_call_names_param_and_leaves_state(backend, name, make, param):
    before = copy.deepcopy(backend.state)
    event = call(backend, name, **make(backend))
    assert (event.kind, event.param) == ("tool_error", param)
    assert backend.state == before


def test_empty_folder_can_be_deleted(backend):
    empty = next(d for d in backend.state["dirs"] if d.startswith("/home/") and children(backend.state, d) == ([], []))
    assert call(backend, "delete", path=empty).ok
    assert empty not in backend.state["dirs"]


# -- generator ---------------------------------------------------------------------------------
@pytest.mark.parametrize("difficulty", [1, 2, 3, 4])
def test_generator_is_deterministic_and_seed_sensitive(difficulty):
    assert GENERATOR.generate(7, difficulty).to_dict() == GENERATOR.generate(7, difficulty).to_dict()
    assert GENERATOR.generate(7, difficulty).to_dict() != GENERATOR.generate(8, difficulty).to_dict()


def test_difficulty_features():
    tasks = {d: [GENERATOR.generate(s, d) for s in range(40)] for d in (1, 2, 3, 4)}
    assert all(len(t.turns) == 1 and len(t.plan) == 1 for t in tasks[1])
    assert all(len(t.turns) <= 2 and 2 <= len(t.plan) <= 3 for t in tasks[2])
    assert all(2 <= len(t.turns) <= 3 and len(t.plan) <= 5 for t in tasks[3])
    assert any(u.withheld for t in tasks[3] for u in t.turns)
    assert all(3 <= len(t.turns) <= 4 and len(t.plan) <= 8 and t.hidden_tools for t in tasks[4])
    assert all(any(u.withheld for u in t.turns) for t in tasks[4])
    assert sum(len(t.plan) for t in tasks[4]) / len(tasks[4]) >= 4
    for t in tasks[1] + tasks[2]:
        reads = [u for u in t.turns if u.plan and u.plan[-1].name in ("read_file", "file_info", "search",
                                                                        "list_directory")]
        assert all(u.required_outputs for u in reads)


def test_trap_is_set():
    traps = [t for t in (GENERATOR.generate(s, 3) for s in range(40)) if "trap" in t.template]
    assert {t.template for t in traps} == {"listing+trap_system", "trap_nonempty+clear"}
    for t in traps:
        trapped = t.turns[0] if t.template.startswith("trap") else t.turns[-1]
        assert len(trapped.plan) == 1 and trapped.plan[0].name in ("file_info", "list_directory")
        assert trapped.required_outputs


def test_phrasebook_coverage():
    assert all(len(v) >= 3 for v in PHRASES.train.values())
    assert set(PHRASES.ood) <= set(PHRASES.train) and len(PHRASES.ood) > len(PHRASES.train) / 2
    held_out = [t.split("{")[0] for v in PHRASES.ood.values() for t in v if not t.startswith("{")]
    ood = [GENERATOR.generate(s, 1, "ood").turns[0].message for s in SEEDS]
    assert any(start in m for m in ood for start in held_out)


@pytest.mark.parametrize("difficulty", [1, 2, 3, 4])
def test_oracle_solves_generated_tasks(difficulty):
    env = gym.make("seal/ToolUse-v0", domains=("files",)).unwrapped
    for index in range(difficulty - 1, 40, 8):  # a files-only task set cycles difficulty 1..4
        reward, info, _ = run_episode(env, OracleAgent(), options={"index": index})
        assert reward == 1.0 and {lb["label"] for lb in info["step_labels"]} == {"ok"}, info["task_id"]


def test_generator_is_deterministic_across_processes():
    """Hash randomisation must not leak into tasks (set iteration order differs per process)."""
    code = ("import json; from seal_envs.domains.files import GENERATOR as G; "
            "print(json.dumps([G.generate(s, d).to_dict() for s in range(3) for d in (1, 2, 3, 4)], sort_keys=True))")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(runs) == 1
