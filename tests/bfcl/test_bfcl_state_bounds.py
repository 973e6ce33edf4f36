"""BFCL tool state is bounded (issue 30): bfcl-eval's file system shares directories between
``cp`` and ``mv``, so a few dozen calls doubled the tree every walk sees, and ``cp d d`` made a
directory that contains itself. Every call past ``STATE_LIMITS`` is a ``tool_error`` with the
class's state put back, and every step of any sequence of valid calls takes bounded time."""

import itertools
import pickle
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

pytest.importorskip("bfcl_eval")

from seal_envs.bfcl import backend as bfcl_backend
from seal_envs.bfcl.backend import (MAX_STATE_CHARS, MAX_STATE_DEPTH, MAX_STATE_VALUES, BFCLBackend, state_problem,
                                    state_size)
from seal_envs.bfcl.source import BFCLTaskSet
from seal_envs.registration import make_bfcl_env

STEP_SECONDS = 2.0  # per step, generous for a loaded CI machine; a step of 64 calls at the bound takes ~0.4 s
FS_TASK = "multi_turn_base_0"  # the file system and the Twitter API


def fs_env(max_steps: int = 60):
    env = make_bfcl_env(split="all", max_steps=max_steps)
    env.reset(options={"task_id": FS_TASK})
    return env


def fs(env):
    return env.unwrapped.backend.instances["GorillaFileSystem"]


def timed_step(env, action):
    start = time.perf_counter()
    out = env.step(action)
    elapsed = time.perf_counter() - start
    assert elapsed < STEP_SECONDS, f"a step took {elapsed:.2f} s: {action[:120]!r}"
    return out


@pytest.mark.timeout(120)  # without the bounds a walk of the state recursed without end
def test_a_directory_copied_into_itself_is_refused_and_the_episode_goes_on():
    env = fs_env()
    timed_step(env, "[mkdir(dir_name='rtdir')]")
    before = env.unwrapped.backend.comparable_state()
    _, _, _, _, info = timed_step(env, "[cp(source='rtdir', destination='rtdir')]")
    event = info["events"][0]
    assert event["kind"] == "tool_error" and f"deeper than {MAX_STATE_DEPTH} levels" in event["message"]
    after = env.unwrapped.backend.comparable_state()
    assert {k: v for k, v in after.items() if k != "_responses"} == {k: v for k, v in before.items() if k != "_responses"}
    assert after["_responses"][-1].startswith("Error during execution: cp was not carried out")
    timed_step(env, "Done.")  # the turn-closing step walks the state: it used to raise RecursionError
    _, info = env.unwrapped.force_end()
    assert "verdict" in info


@pytest.mark.slow
@pytest.mark.timeout(120)  # without the bounds the turn-closing step walked 2^100 directories
def test_cp_and_mv_doubling_stops_at_the_bound_and_every_step_stays_fast():
    env = fs_env()
    timed_step(env, "[mkdir(dir_name='d')]")
    refused = 0
    for s in range(12):  # 64 calls a step, each doubling what a walk sees, far past the bound
        calls = [c for i in range(32) for c in (f"cp(source='d', destination='c{s}_{i}')",
                                                f"mv(source='c{s}_{i}', destination='d')")]
        _, _, _, _, info = timed_step(env, "[" + ", ".join(calls) + "]")
        refused += sum("more than 10000 values" in e.get("message", "") for e in info["events"])
        assert state_problem(fs(env)) is None
    assert refused > 0 and state_size(fs(env))[0] <= MAX_STATE_VALUES
    timed_step(env, "[find(path='/'), du(human_readable=True)]")
    timed_step(env, "Done.")


def test_a_directory_only_cd_dotdot_reaches_is_counted():
    """``cp a c`` shares ``a``'s child ``x`` (whose parent is still ``a``); ``rm a`` leaves ``a``
    reachable only as ``x``'s parent. Its subtree is walked from there."""
    env = fs_env()
    timed_step(env, "[cd(folder='/'), mkdir(dir_name='a'), cd(folder='a'), mkdir(dir_name='x')]")
    timed_step(env, "[" + ", ".join(f"touch(file_name='f{i}')" for i in range(20)) + "]")
    timed_step(env, "[cd(folder='..'), cp(source='a', destination='c'), rm(file_name='a'), cd(folder='c'), "
                    "cd(folder='x')]")
    a = fs(env)._current_dir.parent
    assert a.name == "a" and "a" not in fs(env).root.contents
    with_a = state_size(fs(env), 10**9)[0]
    a.contents.clear()
    assert state_size(fs(env), 10**9)[0] <= with_a - 40  # the 20 files (name and object each) were counted


def test_every_initial_state_is_far_inside_the_bounds():
    tasks = BFCLTaskSet("all")
    largest = [0, 0, 0]
    for i in range(len(tasks)):
        for instance in BFCLBackend(tasks[i].initial_state).instances.values():
            largest = [max(a, b) for a, b in zip(largest, state_size(instance, 10**9))]
    values, chars, depth = largest
    assert values * 5 <= MAX_STATE_VALUES and chars * 10 <= MAX_STATE_CHARS and depth * 4 <= MAX_STATE_DEPTH


def test_text_past_the_character_bound_is_refused(monkeypatch):
    monkeypatch.setattr(bfcl_backend, "MAX_STATE_CHARS", state_size(fs(fs_env()), 10**9)[1] + 5000)
    env = fs_env()
    write = "[touch(file_name='{0}'), echo(content='%s', file_name='{0}')]" % ("x" * 4000)
    _, _, _, _, info = timed_step(env, write.format("big.txt"))
    assert [e["kind"] for e in info["events"]] == ["ok", "ok"]
    _, _, _, _, info = timed_step(env, write.format("big2.txt"))
    assert info["events"][1]["kind"] == "tool_error" and "characters" in info["events"][1]["message"]
    assert fs(env)._current_dir.contents["big2.txt"].content == ""  # put back as it was before the call


# -- random sequences of valid file-system calls ---------------------------------------------
NAMES = st.sampled_from(["d", "e", "f.txt", "g.txt", "rtdir"])
FOLDERS = NAMES | st.sampled_from(["..", ".", "/", "d/e", "../d"])
TEXT = st.text(alphabet="ab \n", max_size=30)
CALLS = st.one_of(
    st.builds(lambda n: f"mkdir(dir_name='{n}')", NAMES),
    st.builds(lambda n: f"touch(file_name='{n}')", NAMES),
    st.builds(lambda n: f"cd(folder='{n}')", FOLDERS),
    st.builds(lambda a, b: f"cp(source='{a}', destination='{b}')", NAMES, NAMES),
    st.builds(lambda a, b: f"mv(source='{a}', destination='{b}')", NAMES, NAMES),
    st.builds(lambda n: f"rm(file_name='{n}')", NAMES),
    st.builds(lambda n: f"rmdir(dir_name='{n}')", NAMES),
    st.builds(lambda t, n: f"echo(content={t!r}, file_name='{n}')", TEXT, NAMES),
    st.builds(lambda n: f"cat(file_name='{n}')", NAMES),
    st.builds(lambda p: f"find(path='{p}')", FOLDERS),
    st.builds(lambda a, b: f"diff(file_name1='{a}', file_name2='{b}')", NAMES, NAMES),
    st.sampled_from(["ls(a=True)", "pwd()", "du(human_readable=False)"]),
    st.builds(lambda n: f"tail(file_name='{n}', lines=2)", NAMES),
    st.builds(lambda n: f"wc(file_name='{n}', mode='w')", NAMES),
    st.builds(lambda n: f"grep(file_name='{n}', pattern='a')", NAMES),
    st.builds(lambda n: f"sort(file_name='{n}')", NAMES),
)
# one doubling move (a copy of a directory moved into it) and its tree-walking reads, weighted
# so that most sequences grow the tree to the bound: each one doubles what a walk sees
DOUBLE = st.sampled_from(["d", "e", "rtdir"]).map(lambda a: ("double", a))  # a fresh name for the copy each time
CALL_LIST = st.lists(st.one_of(CALLS, DOUBLE, DOUBLE, DOUBLE), min_size=8, max_size=32)
STEP = st.one_of(CALL_LIST, CALL_LIST, CALL_LIST, CALL_LIST, st.just("Done."))  # a turn ends now and then
SETUP = ("[mkdir(dir_name='d'), mkdir(dir_name='e'), mkdir(dir_name='rtdir'), touch(file_name='f.txt'), "
         "echo(content='a b\\na', file_name='f.txt'), cp(source='f.txt', destination='d')]")


def _flatten(step, fresh) -> str:
    if step == "Done.":
        return step
    calls = []
    for item in step:
        if isinstance(item, tuple):
            name = f"t{next(fresh)}"
            calls += [f"cp(source='{item[1]}', destination='{name}')", f"mv(source='{name}', destination='{item[1]}')"]
        else:
            calls.append(item)
    return "[" + ", ".join(calls) + "]"


@pytest.mark.slow
@pytest.mark.timeout(120)
@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=st.lists(STEP, min_size=4, max_size=12))
@example(steps=[[("double", "d")] * 32] * 6 + ["Done."] + [["find(path='/')", "du(human_readable=True)"] * 16])
def test_random_valid_file_system_calls_take_bounded_time_per_step(steps):
    env = _ENV.setdefault("env", make_bfcl_env(split="all", max_steps=60))
    env.reset(options={"task_id": FS_TASK})
    timed_step(env, SETUP)
    fresh = itertools.count()
    for step in steps:
        _, _, terminated, truncated, info = timed_step(env, _flatten(step, fresh))
        assert all(e["kind"] != "env_error" for e in info["events"])
        assert state_problem(fs(env)) is None
        if terminated or truncated:
            break
    env.unwrapped.backend.comparable_state()


_ENV: dict = {}


# -- calls that cannot grow the state skip the snapshot and the walk -----------------------------
# one strategy per method that execute() trusts to leave the file system no larger
SIZE_KEEPING_CALLS = {
    "cd": st.builds(lambda n: f"cd(folder='{n}')", FOLDERS),
    "cat": st.builds(lambda n: f"cat(file_name='{n}')", NAMES),
    "find": st.builds(lambda p, n: f"find(path='{p}', name='{n}')", FOLDERS, NAMES),
    "diff": st.builds(lambda a, b: f"diff(file_name1='{a}', file_name2='{b}')", NAMES, NAMES),
    "ls": st.sampled_from(["ls(a=True)", "ls(a=False)"]),
    "pwd": st.just("pwd()"),
    "du": st.sampled_from(["du(human_readable=True)", "du(human_readable=False)"]),
    "tail": st.builds(lambda n, k: f"tail(file_name='{n}', lines={k})", NAMES, st.integers(0, 5)),
    "wc": st.builds(lambda n, m: f"wc(file_name='{n}', mode='{m}')", NAMES, st.sampled_from("lwc")),
    "grep": st.builds(lambda n, t: f"grep(file_name='{n}', pattern={t!r})", NAMES, TEXT),
    "sort": st.builds(lambda n: f"sort(file_name='{n}')", NAMES),
    "rm": st.builds(lambda n: f"rm(file_name='{n}')", NAMES),
    "rmdir": st.builds(lambda n: f"rmdir(dir_name='{n}')", NAMES),
}
CHANGING = {"cd", "rm", "rmdir"}  # the others change nothing at all


def test_every_size_keeping_method_is_a_file_system_method_with_a_strategy_here():
    keeping = bfcl_backend._SIZE_KEEPING["GorillaFileSystem"]
    assert set(SIZE_KEEPING_CALLS) == keeping and keeping <= set(bfcl_backend.class_specs("GorillaFileSystem"))
    assert set(bfcl_backend._SIZE_KEEPING) <= set(BFCLBackend({"involved_classes": ["GorillaFileSystem"]}).bounded)


def _assert_kept_size(backend, call):
    """Executing ``call`` leaves every bound's measure no larger; a read changes nothing."""
    instance = backend.instances["GorillaFileSystem"]
    size, state = state_size(instance, 10**9), pickle.dumps(instance.__dict__)
    backend.execute(call)
    assert all(a <= b for a, b in zip(state_size(instance, 10**9), size)), call
    if call.name not in CHANGING:
        assert pickle.dumps(instance.__dict__) == state, call


@pytest.mark.timeout(120)
@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(setup=st.lists(st.one_of(CALLS, DOUBLE), max_size=16),
       reads=st.lists(st.sampled_from(sorted(SIZE_KEEPING_CALLS)).flatmap(lambda m: SIZE_KEEPING_CALLS[m]), min_size=1,
                      max_size=12))
def test_size_keeping_calls_leave_random_file_systems_no_larger(setup, reads):
    env = _ENV.setdefault("env", make_bfcl_env(split="all", max_steps=60))
    env.reset(options={"task_id": FS_TASK})
    env.step(SETUP)
    env.step(_flatten(setup, itertools.count()))
    backend = env.unwrapped.backend
    for read in reads:
        [call] = backend.parse_action(read).calls
        _assert_kept_size(backend, call)


def test_size_keeping_calls_of_the_ground_truth_leave_its_file_systems_no_larger():
    tasks, checked, file_system_calls = BFCLTaskSet("all"), 0, 0
    keeping = bfcl_backend._SIZE_KEEPING["GorillaFileSystem"]
    methods = set(bfcl_backend.class_specs("GorillaFileSystem"))
    for i in range(len(tasks)):
        task = tasks[i]
        if "GorillaFileSystem" not in task.initial_state["involved_classes"]:
            continue
        backend = BFCLBackend(task.initial_state)
        for call in (c for turn in task.turns for c in turn.plan):
            file_system_calls += call.name in methods
            if call.name in keeping:
                _assert_kept_size(backend, call)
                checked += 1
            else:
                backend.execute(call)
    assert round(100 * checked / file_system_calls) == 67  # the share backend.py and docs/benchmarks.md state
