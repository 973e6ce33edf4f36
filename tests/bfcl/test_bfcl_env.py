"""BFCL tasks behind the env API: ids, splits, miss_func reveal, checks, labels, determinism."""

import json
import pathlib

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

bfcl_eval = pytest.importorskip("bfcl_eval")

import seal_envs
from seal_envs import official_tag_of_step
from seal_envs.agents import OracleAgent, run_episode
from seal_envs.bfcl import loader
from seal_envs.bfcl.compare import format_call, ground_truth_trajectory
from seal_envs.bfcl.source import REVEAL_PROMPT, BFCLTaskSet, build_task
from seal_envs.registration import make_bfcl_env as make_env
from seal_envs.core.types import ToolCall, StepLabel
from seal_envs.testing import check_contract, check_determinism, check_surface_invariance

IDS = ["seal/BFCL-MultiTurn-v0", "seal/BFCL-MultiTurn-Base-v0", "seal/BFCL-MultiTurn-MissFunc-v0",
       "seal/BFCL-MultiTurn-MissParam-v0", "seal/BFCL-MultiTurn-LongContext-v0"]


def test_ids_registered_and_sized():
    assert set(IDS) <= set(seal_envs.registered_ids())
    sizes = {i: len(gym.make(i).unwrapped.task_set) for i in IDS}
    assert sizes == {IDS[0]: 400, **{i: 100 for i in IDS[1:]}}
    assert len(gym.make(IDS[0], split="test").unwrapped.task_set) == 400
    assert len(gym.make(IDS[1], split="all").unwrapped.task_set) == 200


def test_splits_are_the_papers():
    paper = json.loads((pathlib.Path(__file__).parents[2] / "seal_envs/bfcl/bfcl_400_split.json").read_text())
    for split in ("train", "test"):
        ts = BFCLTaskSet(split)
        assert set(ts.ids) == set(paper[split])
        assert {ts[i].split for i in range(0, 400, 37)} == {split}
    assert not set(BFCLTaskSet("train").ids) & set(BFCLTaskSet("test").ids)
    with pytest.raises(ValueError, match="split must be one of"):
        BFCLTaskSet("ood")
    with pytest.raises(ValueError, match="categories"):
        BFCLTaskSet("train", ("nope",))


def test_task_fields_and_sampling():
    ts = BFCLTaskSet("all")
    task = ts.task_from_id("multi_turn_long_context_7")
    assert (task.domain, task.seed, task.template) == ("bfcl_long_context", 7, "long_context")
    assert task.initial_state["long_context"] is True
    assert {ts.slot(i).difficulty for i in range(len(ts))} == {1, 2, 3, 4}
    assert all(ts[i].domain == "bfcl_miss_param" for i in ts.indices("miss_param"))
    env = make_env(split="train")
    _, info = env.reset(seed=3, options={"domain": "bfcl_base", "difficulty": 2})
    assert info["domain"] == "bfcl_base" and info["difficulty"] == 2
    with pytest.raises(ValueError, match="no BFCL"):
        ts.task_from_id("multi_turn_base_999")


def test_miss_func_hides_the_function_until_its_turn():
    task = build_task("multi_turn_miss_func_0")
    assert task.hidden_tools == ("sort",) and task.turns[3].new_tools == ("sort",)
    env = make_env(split="all")
    _, info = env.reset(options={"task": task})
    assert "sort" not in {t["function"]["name"] for t in info["tools"]}
    for calls in ground_truth_trajectory(task)[:2]:
        for call in calls:
            env.step(format_call(call))
        env.step("Done.")
    _, _, _, _, info = env.step("[sort(file_name='final_report.pdf')]")  # turn 2: not there yet
    assert info["events"][0]["kind"] == "unavailable_tool" and info["step_label"]["label"] == "spurious_call"
    obs, _, _, _, info = env.step("I cannot sort files with the tools I have.")
    assert "sort" in {t["function"]["name"] for t in info["tools"]}
    assert REVEAL_PROMPT in obs and '"name": "sort"' in obs


def _play(env, task, trajectory):
    env.reset(options={"task": task})
    for calls in trajectory:
        for call in calls:
            _, reward, terminated, truncated, info = env.step(format_call(call))
        _, reward, terminated, truncated, info = env.step("Done.")
    assert terminated
    return reward, info


def _tags(info):
    return {(lb["turn"], official_tag_of_step(StepLabel.from_dict(lb))) for lb in info["step_labels"]}


def test_checks_labels_and_official_tags():
    env = make_env(split="all", reward_mode="progress")
    task = build_task("multi_turn_miss_func_0")
    gt = ground_truth_trajectory(task)
    reward, info = _play(env, task, gt)
    assert reward == 1.0 and (2, "correct_abstention") in _tags(info)
    names = [c["name"] for c in info["verdict"]["checks"]]
    assert "irrelevance_turn_2" in names and "state_turn_2" not in names and "response_turn_4" in names

    calls_in_missing_turn = [list(t) for t in gt]
    calls_in_missing_turn[2] = [ToolCall("ls", {})]
    reward, info = _play(env, task, calls_in_missing_turn)
    assert reward == 0.8 and (2, "spurious_tool_call") in _tags(info)

    empty_turn = [list(t) for t in gt]
    empty_turn[1] = []
    _, info = _play(env, task, empty_turn)
    failed = {c["name"]: c["detail"] for c in info["verdict"]["checks"] if not c["passed"]}
    assert failed["state_turn_1"].startswith("empty_turn_model_response")
    assert (1, "empty_turn_model_response") in _tags(info)

    wrong_arg = [list(t) for t in gt]
    wrong_arg[0][1] = ToolCall("mkdir", {"dir_name": "tmp"})
    _, info = _play(env, task, wrong_arg)
    failed = {c["name"]: c["detail"] for c in info["verdict"]["checks"] if not c["passed"]}
    assert failed["state_turn_0"].startswith("GorillaFileSystem.root/contents/document/contents/temp")
    assert (0, "instance_mismatch") in _tags(info)


def test_response_check_needs_every_ground_truth_result():
    env = make_env(split="all")
    task = build_task("multi_turn_base_0")
    gt = ground_truth_trajectory(task)
    no_grep = [list(t) for t in gt]
    no_grep[1] = [c for c in no_grep[1] if c.name != "grep"]  # grep reads only: the state still matches
    _, info = _play(env, task, no_grep)
    failed = [c["name"] for c in info["verdict"]["checks"] if not c["passed"]]
    assert failed == ["response_turn_1"]
    early = [list(t) for t in gt]
    early[0] = early[0] + [ToolCall("cd", {"folder": "temp"}), ToolCall("grep", {"file_name": "final_report.pdf", "pattern": "budget analysis"}), ToolCall("cd", {"folder": ".."})]
    early[1] = [ToolCall("cd", {"folder": "temp"})]  # the grep result from turn 0 counts (results so far)
    reward, info = _play(env, task, early)
    assert reward == 1.0, [c for c in info["verdict"]["checks"] if not c["passed"]]


def test_truncated_episode_fails_unreached_turns():
    env = make_env(split="all", max_steps=2, reward_mode="progress")
    env.reset(options={"task_id": "multi_turn_base_0"})
    env.step("cd(folder='document')")
    _, reward, terminated, truncated, info = env.step("mkdir(dir_name='temp')")
    assert truncated and reward == 0.0
    assert [c["detail"] for c in info["verdict"]["checks"]][-1] == "turn not reached"


def test_episodes_get_fresh_instances():
    a, b = make_env(split="all").unwrapped, make_env(split="all").unwrapped
    a.reset(options={"task_id": "multi_turn_base_0"})
    b.reset(options={"task_id": "multi_turn_base_0"})
    a.step("[cd(folder='document'), mkdir(dir_name='new')]")
    assert a.backend.comparable_state()["GorillaFileSystem"] != b.backend.comparable_state()["GorillaFileSystem"]
    assert {id(x) for x in a.backend.instances.values()}.isdisjoint(id(x) for x in b.backend.instances.values())


def test_long_context_results_are_copies():
    env = make_env(split="all").unwrapped
    env.reset(options={"task_id": "multi_turn_long_context_3"})
    if "get_outside_temperature_from_google" not in env.specs:
        env.reset(options={"task_id": next(i for i in BFCLTaskSet("all", ("long_context",)).ids
                                           if "VehicleControlAPI" in build_task(i).initial_state["involved_classes"])})
    _, _, _, _, first = env.step("get_outside_temperature_from_google()")
    _, _, _, _, second = env.step("get_outside_temperature_from_google()")
    assert first["tool_results"][0] is not second["tool_results"][0]
    assert first["tool_results"][0]["outsideTemperature"] != second["tool_results"][0]["outsideTemperature"]


@pytest.mark.slow
def test_contract_and_determinism():
    check_contract("seal/BFCL-MultiTurn-Base-v0", seeds=(0, 1))
    check_determinism("seal/BFCL-MultiTurn-v0", seeds=range(3))


def test_loading_creates_no_folders_in_site_packages():
    root = pathlib.Path(bfcl_eval.__file__).parent
    before = sorted(p.name for p in root.iterdir())
    run_episode(make_env(split="all"), OracleAgent(), options={"task_id": "multi_turn_long_context_0"})
    assert sorted(p.name for p in root.iterdir()) == before
    assert len(loader.entries("base")) == 200


def test_surfaces_and_evolver_work_on_bfcl():
    env = make_env(split="train").unwrapped
    task = build_task("multi_turn_base_0")
    infos = []
    for _ in range(8):
        env.reset(options={"task": task})
        env.step("cd(dir='document')")  # schema violation: cd takes 'folder'
        for calls in ground_truth_trajectory(task):
            for call in calls:
                env.step(format_call(call))
            _, _, terminated, _, info = env.step("Done.")
        assert terminated and info["verdict"]["passed"]
        infos.append(info)
    co = seal_envs.CoEvolution()
    patches = co.evolve(infos)
    co.apply(env)
    assert ("affordance", "cd") in {(p.channel, p.scope) for p in patches}
    _, info = env.reset(options={"task": task})
    cd = next(t for t in info["tools"] if t["function"]["name"] == "cd")
    assert cd["function"]["parameters"]["properties"]["folder"]["description"].startswith("[required]")
    assert info["surface_version"] > 0
    frozen = make_env(split="test").unwrapped
    co.apply(frozen)  # evaluation keeps the canonical surface
    assert frozen.surface.version == 0
    with pytest.raises(seal_envs.FrozenSurfaceError):
        frozen.set_surface(co.surface)


def test_bfcl_task_set_is_a_task_source():
    """Same contract as the native TaskSet (issue 17): a fixed list, so nothing fresh to draw."""
    from seal_envs.core.source import Slot, TaskSource, ToolBackend

    ts = BFCLTaskSet("train")
    assert isinstance(ts, TaskSource) and ts.generated is False and ts.held_out == ()
    assert isinstance(ts.slot(0), Slot) and ts.slot(0).seed == ts[0].seed
    backend = ts.backend_for(ts[0])(ts[0].initial_state)
    assert isinstance(backend, ToolBackend)
    from seal_envs.core.backend import Backend

    assert not isinstance(backend, Backend)  # the protocol, not a native Backend with most of it overridden


@pytest.mark.parametrize("env_id", [i for i in seal_envs.registered_ids() if "BFCL" in i])
def test_bfcl_surface_changes_only_what_is_shown(env_id):
    assert check_surface_invariance(env_id, seeds=range(3)) > 0


_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=6),
                    st.sampled_from(["café", "a\\u00e9", "tab\t", "😀", "C:\\users"]))
_KEYS = st.one_of(st.text(max_size=4), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.tuples(inner, inner), st.frozensets(st.integers(), max_size=3),
    st.dictionaries(_KEYS, inner, max_size=3)), max_leaves=12)


@given(st.dictionaries(_KEYS, _VALUES, max_size=4))
@settings(max_examples=400, deadline=None)
def test_a_result_spelled_once_reads_as_spelling_its_value(result):
    """The observation reuses bfcl-eval's spelling of a dict result only where it is exactly
    ``text_json`` of the value the event carries: non-string keys, tuples, sets, non-ASCII text
    and NaN either spell alike or fall back to spelling the value."""
    from seal_envs.bfcl.backend import _spelled_alike, jsonable, result_text
    from seal_envs.core.types import text_json

    value = jsonable(result)
    reused = _spelled_alike(result, value, result_text(result))
    assert reused is None or reused == text_json(value)


def test_ground_truth_results_are_spelled_once_and_read_as_before():
    """On every long-context ground-truth call that returns a dict, the event carries
    bfcl-eval's text when it spells alike, and the tool message is that of the value."""
    from seal_envs.bfcl.backend import BFCLBackend
    from seal_envs.core.surface import CANONICAL
    from seal_envs.core.types import text_json

    reused = 0
    for entry in loader.entries("long_context")[:25]:
        task = build_task(entry["id"])
        backend = BFCLBackend(task.initial_state)
        for turn in task.turns:
            for call in turn.plan:
                event = backend.execute(call)
                if event.ok:
                    assert CANONICAL.render_event(event, backend.specs, {}) == text_json(event.result)
                    reused += event.result_json is not None
    assert reused > 50


def test_a_replay_without_result_copies_leaves_the_same_states_and_responses():
    """The reference replay asks ``execute`` for no copy of each result: every state and every
    response text is what the full execution leaves, and only the dropped events differ."""
    from seal_envs.bfcl.backend import BFCLBackend

    for entry in loader.entries("long_context")[:10] + loader.entries("base")[:10]:
        task = build_task(entry["id"])
        full, bare = BFCLBackend(task.initial_state), BFCLBackend(task.initial_state)
        for turn in task.turns:
            for call in turn.plan:
                kept, dropped = full.execute(call), bare.execute(call, copy_result=False)
                assert (dropped.kind, dropped.tool, dropped.message) == (kept.kind, kept.tool, kept.message)
                assert dropped.result is None and dropped.result_json is None
            assert bare.comparable_state() == full.comparable_state()


def test_turn_states_reuse_only_the_spellings_of_classes_no_call_reached():
    """comparable_state hands out a class's last spelling again only when no call ran on that
    class since; after every call (run, failed or refused) it equals spelling all afresh."""
    from seal_envs.bfcl.backend import RESPONSES_KEY, BFCLBackend, jsonable

    reused = 0
    for category in loader.CATEGORIES:
        for entry in loader.entries(category)[:6]:
            task = build_task(entry["id"])
            backend = BFCLBackend(task.initial_state)
            before = backend.comparable_state()
            calls = [c for t in task.turns for c in t.plan]
            for call in calls + [ToolCall(calls[0].name, {}), ToolCall("no_such_tool", {})] + calls[:3]:
                backend.execute(call)
                state = backend.comparable_state()
                fresh = {name: {k: jsonable(v) for k, v in vars(inst).items() if not k.startswith("_")}
                         for name, inst in backend.instances.items()}
                assert {k: v for k, v in state.items() if k != RESPONSES_KEY} == fresh
                assert state[RESPONSES_KEY] == backend.responses and state[RESPONSES_KEY] is not backend.responses
                owner = backend.owners.get(call.name)
                reused += sum(state[name] is before[name] for name in fresh if name != owner)
                before = state
    assert reused > 20
