"""seal/MCP-v0: an MCP server and a task file behind ToolUseEnv (the example ticketing server,
and a wire-level server that misbehaves on request)."""

import gc
import json
import os
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

pytest.importorskip("mcp")

import seal_envs  # noqa: E402
from seal_envs.agents import OracleAgent, run_episode  # noqa: E402
from seal_envs.core.validation import validate_arguments  # noqa: E402
from seal_envs.mcp import MCPServerError, TaskFileError, load_task_file  # noqa: E402
from seal_envs.mcp.client import marked_pids  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mcp_tickets"
SERVER = [sys.executable, str(EXAMPLE / "server.py")]
TASKS = str(EXAMPLE / "tasks.jsonl")
HERE = Path(__file__).parent
FAULTY_TASKS = str(HERE / "faulty_tasks.jsonl")


def faulty(fault: str) -> list[str]:
    return [sys.executable, str(HERE / "fault_server.py"), fault]


def children() -> set[int]:
    """Live child processes of this one (the process table: /proc), zombies left out."""
    me, found = os.getpid(), set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == me and fields[0] != "Z":
                found.add(int(name))
    return found


@pytest.fixture(scope="module")
def tickets():
    """One env over the example server for the module (its reset tool isolates the episodes)."""
    env = gym.make("seal/MCP-v0", server=SERVER, tasks=TASKS)
    yield env
    env.close()


def test_the_example_has_twenty_tasks_and_the_oracle_solves_every_one(tickets):
    source = tickets.unwrapped.task_set
    sizes = {split: len(source.with_split(split)) for split in ("train", "test", "ood")}
    assert sum(sizes.values()) >= 20 and all(sizes.values()), sizes
    tags = set()
    for split, n in sizes.items():
        for index in range(n):
            reward, info, _ = run_episode(tickets, OracleAgent(), options={"split": split, "index": index})
            labels = {lb["label"] for lb in info["step_labels"]}
            assert reward == 1.0 and labels == {"ok"}, (info["task_id"], info["verdict"])
            tags |= set(info["official_turn_tags"])
    assert tags == {"pass", "correct_abstention"}
    assert source.servers.starts == 2  # the episode server and the replay server, reset between uses


def test_doing_nothing_fails_every_task_that_needs_work(tickets):
    source = tickets.unwrapped.task_set
    for index in range(len(source)):
        tickets.reset(options={"index": index})
        _, reward, terminated, _, info = tickets.step("OK, done.")
        while not terminated:
            _, reward, terminated, _, info = tickets.step("OK, done.")
        assert reward == 0.0, info["task_id"]


def test_the_source_and_backend_meet_the_contracts(tickets):
    from seal_envs.core.source import TaskSource, ToolBackend

    env = tickets.unwrapped
    env.reset(seed=0)
    assert isinstance(env.task_set, TaskSource) and isinstance(env.backend, ToolBackend)
    assert env.task_set.generated is False and env.task_set.domains == ("tickets",)
    task = env.task_set.task_from_id("two-turn-triage")
    view = env.task_set.with_split(task.split)
    assert any(view[i] is task for i in view.indices()) and view.slot(0).domain == "tickets"
    with pytest.raises(ValueError, match="no task 'nope'"):
        env.task_set.task_from_id("nope")


def test_tools_are_validated_and_labelled_as_native_tools_are(tickets):
    env = tickets.unwrapped
    tickets.reset(options={"task_id": "close-typo-fixed"})
    assert {"reset", "dump_state"}.isdisjoint(env.specs)  # the state and reset tools are the env's, not the agent's
    assert {t["function"]["name"] for t in tickets.unwrapped.tools} == set(env.specs)
    bad = {"ticket_id": "T-101", "resolution": "solved"}
    _, _, _, _, info = tickets.step({"name": "close_ticket", "arguments": bad})
    expected = validate_arguments("close_ticket", env.specs["close_ticket"].parameters, bad)
    assert info["step_label"]["label"] == "schema_violation" and info["events"][0]["param"] == expected.param
    assert info["events"][0]["message"] == expected.message
    _, _, _, _, info = tickets.step({"name": "close_tickets", "arguments": {}})
    assert info["step_label"]["label"] == "unknown_tool" and "close_ticket" in info["events"][0]["hint"]
    _, _, _, _, info = tickets.step({"name": "reset", "arguments": {}})
    assert info["step_label"]["label"] == "unknown_tool"
    _, _, _, _, info = tickets.step({"name": "close_ticket", "arguments": {"ticket_id": "T-999", "resolution": "fixed"}})
    assert info["events"][0]["kind"] == "tool_error" and "T-999 not found" in info["events"][0]["message"]
    _, _, _, _, info = tickets.step({"name": "get_ticket", "arguments": {"ticket_id": "T-101"}})
    assert info["tool_results"][0]["title"] == "Login page times out"
    _, reward, terminated, _, info = tickets.step({"name": "close_ticket", "arguments": {"ticket_id": "T-101", "resolution": "fixed"}})
    _, reward, terminated, _, info = tickets.step("Closed.")
    assert terminated and reward == 1.0  # the refused calls changed nothing


def test_every_episode_starts_from_the_initial_state(tickets):
    env = tickets.unwrapped
    tickets.reset(options={"task_id": "new-billing-ticket"})
    tickets.step({"name": "create_ticket", "arguments": {"title": "one more"}})
    assert len(env.backend.comparable_state()["tickets"]) == 7
    tickets.reset(options={"task_id": "new-billing-ticket"})
    assert len(env.backend.comparable_state()["tickets"]) == 6


def test_a_wrong_call_is_diagnosed_and_a_check_function_judges(tickets):
    wrong = OracleAgent(mutate=lambda planned, turn, task: [
        type(a)(a.name, {**a.arguments, "priority": "low"}) if hasattr(a, "arguments") else a for a in planned])
    reward, info, _ = run_episode(tickets, wrong, options={"task_id": "new-billing-ticket"})
    assert reward == 0.0 and info["official_turn_tags"] == ["state_mismatch"]
    assert "priority" in info["verdict"]["checks"][0]["detail"]
    reward, info, _ = run_episode(tickets, wrong, options={"task_id": "check-new-ticket"})
    assert reward == 1.0  # the check accepts any priority
    twice = OracleAgent(mutate=lambda planned, turn, task: planned[:1] + planned)
    reward, info, _ = run_episode(tickets, twice, options={"task_id": "check-new-ticket"})
    assert reward == 0.0 and "found 2" in info["verdict"]["checks"][0]["detail"]


def test_a_json_rpc_error_answer_is_a_tool_error_and_the_server_stays_up():
    env = gym.make("seal/MCP-v0", server=faulty("none"), tasks=FAULTY_TASKS)
    try:
        env.reset(options={"index": 0})
        _, _, _, _, info = env.step({"name": "work", "arguments": {"n": -1}})
        assert info["events"][0]["kind"] == "tool_error" and "must not be negative" in info["events"][0]["message"]
        _, _, _, _, info = env.step({"name": "work", "arguments": {"n": 2}})
        assert info["tool_results"] == [{"counter": 2}] and env.unwrapped.backend.fault is None
    finally:
        env.close()


def test_fresh_process_per_episode_without_a_reset_tool():
    env = gym.make("seal/MCP-v0", server=faulty("none"), tasks=FAULTY_TASKS)
    source = env.unwrapped.task_set
    try:
        for _ in range(2):
            reward, info, _ = run_episode(env, OracleAgent(), options={"index": 0})
            assert reward == 1.0
        assert source.servers.starts == 4  # make, then one per episode; one replay (cached after)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("fault, reason", [("crash", "exited"), ("hang", "did not answer within"),
                                           ("garbage", "did not answer within"), ("flood", "")])
def test_a_misbehaving_server_gives_labelled_turns_and_leaves_no_process(fault, reason):
    before = children()
    env = gym.make("seal/MCP-v0", server=faulty(fault), tasks=FAULTY_TASKS, call_timeout=1.0)
    env.reset(options={"index": 0})
    marker = env.unwrapped.backend.connection.marker
    start = time.monotonic()
    _, reward, terminated, truncated, info = env.step({"name": "work", "arguments": {"n": 2}})
    assert time.monotonic() - start < 15
    assert info["step_label"]["label"] == "env_error" and reason in info["events"][0]["message"]
    _, _, _, _, info = env.step({"name": "work", "arguments": {"n": 2}})  # the next call answers at once
    _, reward, terminated, _, info = env.step("Done.")
    assert terminated and reward == 0.0
    assert any("MCP server fault" in c["detail"] for c in info["verdict"]["checks"])
    env.close()
    assert marked_pids(marker) == [] and children() <= before


@pytest.mark.parametrize("fault, message", [("bad_schema", "not a valid JSON Schema"),
                                            ("exit_at_start", "cannot start: no config")])
def test_a_server_that_cannot_serve_is_a_clear_error_at_make(fault, message):
    before = children()
    with pytest.raises(MCPServerError, match=message):
        gym.make("seal/MCP-v0", server=faulty(fault), tasks=FAULTY_TASKS)
    assert children() <= before


def test_a_reference_server_that_cannot_start_fails_the_verdict_not_the_step(tmp_path):
    server = [*faulty("exit_from_start"), "3", str(tmp_path / "starts")]  # make, reset, then the replay dies
    env = gym.make("seal/MCP-v0", server=server, tasks=FAULTY_TASKS)
    try:
        reward, info, _ = run_episode(env, OracleAgent(), options={"index": 0})
        assert reward == 0.0 and info["official_turn_tags"] == ["gt_error"]
        assert "could not start" in info["verdict"]["checks"][0]["detail"]
    finally:
        env.close()


def test_close_and_garbage_collection_leave_no_child_process():
    before = children()
    env = gym.make("seal/MCP-v0", server=faulty("none"), tasks=FAULTY_TASKS)
    run_episode(env, OracleAgent(), options={"index": 0})
    assert len(children() - before) == 1  # the episode's server (a replay without a reset tool stops its own)
    env.close()
    env.close()  # twice is fine
    assert children() <= before
    env = gym.make("seal/MCP-v0", server=faulty("none"), tasks=FAULTY_TASKS)
    env.reset()
    del env
    gc.collect()
    assert children() <= before


def task_line(**fields):
    task = {"id": "t", "split": "train", "turns": [{"user": "hi"}], "plan": [], "state_tool": "dump"}
    task.update(fields)
    return json.dumps({k: v for k, v in task.items() if v is not None})


@pytest.mark.parametrize("fields, field", [
    ({"split": "dev"}, "split"), ({"id": None}, "id"), ({"turns": []}, "turns"),
    ({"turns": [{"user": ""}]}, "turns[0].user"), ({"turns": [{"user": "a", "withheld": {"a": 1, "b": 2}}]}, "turns[0].withheld"),
    ({"plan": [{"name": "work", "arguments": [1]}]}, "plan[0].arguments"), ({"plan": [{"name": "work", "turn": 3}]}, "plan[0].turn"),
    ({"state_tool": None}, "state_tool"), ({"check": "no_such_module:f"}, "check"), ({"colour": 1}, "colour"),
    ({"difficulty": 9}, "difficulty"), ({"turns": [{"user": "a", "reply": "b"}]}, "turns[0].reply"),
])
def test_every_malformed_task_names_the_file_line_and_field(tmp_path, fields, field):
    path = tmp_path / "tasks.jsonl"
    path.write_text(task_line(id="ok") + "\n\n" + task_line(**fields) + "\n")
    with pytest.raises(TaskFileError) as e:
        load_task_file(path)
    assert str(e.value).startswith(f"{path}:3: field '{field}'"), str(e.value)


def test_task_file_errors_found_against_the_server_and_by_line(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(task_line(id="a") + "\n" + task_line(id="a") + "\n")
    with pytest.raises(TaskFileError, match=r":2: field 'id': 'a' is already the id of line 1"):
        load_task_file(path)
    path.write_text("{not json\n")
    with pytest.raises(TaskFileError, match=r":1: not a JSON object"):
        load_task_file(path)
    path.write_text(task_line(plan=[{"name": "wrok", "arguments": {"n": 1}}]) + "\n")
    with pytest.raises(TaskFileError, match=r":1: field 'plan\[0\].name': the server has no tool"):
        gym.make("seal/MCP-v0", server=faulty("none"), tasks=str(path))


def test_yaml_task_files_read_as_json_lines_do(tmp_path):
    yaml = pytest.importorskip("yaml")
    tasks = [json.loads(line) for line in Path(FAULTY_TASKS).read_text().splitlines()]
    path = tmp_path / "tasks.yaml"
    path.write_text(yaml.safe_dump(tasks))
    assert [t.turns for t in load_task_file(path).tasks] == [t.turns for t in load_task_file(FAULTY_TASKS).tasks]
    path.write_text(yaml.safe_dump(tasks[:1]) + "- id: x\n  split: nope\n  turns: [{user: hi}]\n  plan: []\n")
    with pytest.raises(TaskFileError, match=r"tasks.yaml:\d+: field 'split'"):
        load_task_file(path)


def test_the_id_needs_a_server_and_tasks_and_is_not_in_the_argument_free_ids():
    assert "seal/MCP-v0" in gym.registry and "seal/MCP-v0" not in seal_envs.registered_ids()
    with pytest.raises(ValueError, match="needs server="):
        gym.make("seal/MCP-v0")


def test_contract_and_surface_invariance_on_a_fast_server():
    from seal_envs.testing import check_contract, check_surface_invariance

    kwargs = {"server": faulty("none"), "tasks": FAULTY_TASKS}
    check_contract("seal/MCP-v0", seeds=(0,), **kwargs)
    assert check_surface_invariance("seal/MCP-v0", seeds=(0,), **kwargs) > 0


@pytest.mark.slow
def test_surface_invariance_on_the_example_server():
    from seal_envs.testing import check_surface_invariance

    assert check_surface_invariance("seal/MCP-v0", seeds=(0, 1), server=SERVER, tasks=TASKS) > 0


@pytest.mark.parametrize("kind", ["text", "dict"])
def test_any_action_is_a_labelled_turn_on_an_mcp_env(tickets, kind):
    """The fuzz suite of tests/test_fuzz.py (every registered id) on the example server."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    sys.path.insert(0, str(HERE.parent))
    try:
        from test_fuzz import check_step, dict_actions, text_actions
    finally:
        sys.path.remove(str(HERE.parent))
    env = tickets.unwrapped
    env.reset(seed=0)
    tools = sorted(env.specs)
    params = sorted({p for s in env.specs.values() for p in s.parameters.get("properties", {})})
    strategy = (text_actions if kind == "text" else dict_actions)(tools, params)

    @settings(max_examples=15, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(seed=st.integers(0, 20), action=strategy)
    def run(seed, action):
        check_step(env, seed, action)

    run()


@pytest.mark.slow
def test_same_seeds_same_episodes_in_another_process():
    from seal_envs.testing import check_determinism

    check_determinism("seal/MCP-v0", seeds=(0, 1), server=faulty("none"), tasks=FAULTY_TASKS)
