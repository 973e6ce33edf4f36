"""Every BFCL episode owns what it can mutate: nothing one episode does reaches the next one,
bfcl-eval's module-level data, or the cached reference states."""

import copy
import sys

import pytest

pytest.importorskip("bfcl_eval")

from seal_envs.agents import OracleAgent, run_episode
from seal_envs.bfcl import loader
from seal_envs.bfcl.backend import BFCLBackend
from seal_envs.bfcl.compare import format_call, ground_truth_trajectory
from seal_envs.bfcl.source import build_task
from seal_envs.registration import make_bfcl_env as make_env


def _entry_per_class(category: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in loader.entries(category):
        for cls in entry["involved_classes"]:
            out.setdefault(cls, entry["id"])
    return out


def _module_data() -> dict:
    """The module-level containers of bfcl-eval's API modules (where the leak lived)."""
    names = {loader.backend_class(c).__module__ for c in _entry_per_class("base")}
    names.add("bfcl_eval.eval_checker.multi_turn_eval.func_source_code.long_context")
    return {(m, k): copy.deepcopy(v) for m in sorted(names) for k, v in vars(sys.modules[m]).items()
            if not k.startswith("_") and isinstance(v, (dict, list, set))}


ENTRIES = sorted({(cls, eid) for cat in ("base", "long_context") for cls, eid in _entry_per_class(cat).items()})


@pytest.mark.parametrize("cls, entry_id", ENTRIES, ids=[f"{c}-{e.rsplit('_', 2)[-2]}" for c, e in ENTRIES])
def test_a_mutating_episode_leaves_the_next_one_pristine(cls, entry_id):
    task = build_task(entry_id)
    pristine = BFCLBackend(task.initial_state).comparable_state()
    module_data = _module_data()
    env = make_env(split="all").unwrapped
    env.reset(options={"task_id": entry_id})
    for calls in ground_truth_trajectory(task):  # the ground truth writes: it is the mutating play
        for call in calls:
            env.step(format_call(call))
        if not env.done:
            env.step("Done.")
    assert env.backend.comparable_state() != pristine or not any(t.plan for t in task.turns)
    env.reset(options={"task_id": entry_id})
    assert env.backend.comparable_state() == pristine, f"{cls}: the next episode of {entry_id} starts changed"
    assert _module_data() == module_data, f"{cls}: an episode changed bfcl-eval's module-level data"
    reward, info, _ = run_episode(make_env(split="all"), OracleAgent(), options={"task_id": entry_id})
    assert reward == 1.0, info["verdict"]


def test_cancelling_a_long_context_booking_does_not_leak():
    """The reported case: long_context TravelAPI instances held CREDIT_CARD_EXTENSION's dicts."""
    entry = "multi_turn_long_context_150"
    env = make_env(split="all").unwrapped
    env.reset(options={"task_id": entry})
    travel = env.backend.instances["TravelAPI"]
    card = "1234567812345678"
    before = travel.credit_card_list[card]["balance"]
    booking = next(b for b, r in travel.booking_record.items() if r.get("card_id") == card)
    env.step(f"cancel_booking(access_token='{travel.access_token}', booking_id='{booking}')")
    assert travel.credit_card_list[card]["balance"] != before, "the cancellation must refund the card"
    fresh = make_env(split="all").unwrapped
    fresh.reset(options={"task_id": entry})
    assert fresh.backend.instances["TravelAPI"].credit_card_list[card]["balance"] == before
    reward, info, _ = run_episode(make_env(split="all"), OracleAgent(), options={"task_id": entry})
    assert reward == 1.0, info["verdict"]


def _scribble(value, seen: set) -> None:
    """Change every dict and list reachable from ``value`` in place, as any tool could."""
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, dict):
        for v in list(value.values()):
            _scribble(v, seen)
        value["__scribbled__"] = True
    elif isinstance(value, list):
        for v in list(value):
            _scribble(v, seen)
        value.append("__scribbled__")
    elif hasattr(value, "__dict__") and type(value).__module__.startswith("bfcl_eval"):
        _scribble(vars(value), seen)


@pytest.mark.parametrize("cls, entry_id", ENTRIES, ids=[f"{c}-{e.rsplit('_', 2)[-2]}" for c, e in ENTRIES])
def test_no_instance_shares_data_with_another_episode(cls, entry_id):
    """Whatever an instance holds is its own: scribbling over all of it changes no other episode."""
    task = build_task(entry_id)
    pristine = BFCLBackend(task.initial_state).comparable_state()
    module_data = _module_data()
    _scribble(vars(BFCLBackend(task.initial_state).instances[cls]), set())
    assert BFCLBackend(task.initial_state).comparable_state() == pristine
    assert _module_data() == module_data
    assert loader.entry_index()[entry_id]["initial_config"] == task.initial_state["initial_config"]


@pytest.mark.parametrize("cls, entry_id", ENTRIES, ids=[f"{c}-{e.rsplit('_', 2)[-2]}" for c, e in ENTRIES])
def test_an_instance_unpickled_from_the_load_cache_is_a_fresh_load(cls, entry_id, monkeypatch):
    """The second episode of an entry unpickles what the first one loaded: the same attributes,
    object for object, as loading again, and none of them shared with another episode."""
    import pickle

    from seal_envs.bfcl import backend as bfcl_backend

    state = build_task(entry_id).initial_state
    with monkeypatch.context() as m:
        m.setattr(bfcl_backend, "MAX_LOADED", 0)  # no cache: every backend loads
        loaded = BFCLBackend(state).instances[cls]
    bfcl_backend._LOADED.clear()
    BFCLBackend(state)  # loads and keeps the bytes
    first, second = BFCLBackend(state).instances[cls], BFCLBackend(state).instances[cls]
    assert any(k[0] == cls for k in bfcl_backend._LOADED) != loader.stateless(cls)  # nothing to load: nothing kept
    assert pickle.dumps(vars(first)) == pickle.dumps(vars(second))
    # a load stamps bfcl-eval's files with the clock (File._last_modified): all else is the same
    assert _shape(first) == _shape(loaded)
    shared = {id(v) for v in vars(first).values() if isinstance(v, (dict, list, set)) or hasattr(v, "__dict__")}
    assert not shared & {id(v) for v in vars(second).values()}, "two episodes share an attribute"


@pytest.mark.parametrize("cls, entry_id", ENTRIES, ids=[f"{c}-{e.rsplit('_', 2)[-2]}" for c, e in ENTRIES])
def test_a_random_generator_unpickled_from_the_load_cache_draws_as_a_fresh_load(cls, entry_id, monkeypatch):
    """The message, trading and travel APIs hold a ``random.Random`` (new ids, card numbers): the
    cache writes it as its state's words, and each episode's copy is a generator of its own in
    exactly the state a load leaves (``_shape`` does not see a generator's state)."""
    import random

    from seal_envs.bfcl import backend as bfcl_backend

    state = build_task(entry_id).initial_state
    with monkeypatch.context() as m:
        m.setattr(bfcl_backend, "MAX_LOADED", 0)
        loaded = BFCLBackend(state).instances[cls]
    generators = sorted(k for k, v in vars(loaded).items() if isinstance(v, random.Random))
    if not generators:
        pytest.skip(f"{cls} holds no random generator")
    bfcl_backend._LOADED.clear()
    BFCLBackend(state)  # loads and keeps the bytes
    first, second = BFCLBackend(state).instances[cls], BFCLBackend(state).instances[cls]
    for name in generators:
        a, b, fresh = getattr(first, name), getattr(second, name), getattr(loaded, name)
        assert type(a) is random.Random and a is not b
        assert a.getstate() == b.getstate() == fresh.getstate()
        draws = [a.randint(0, 10**12) for _ in range(5)]
        assert draws == [fresh.randint(0, 10**12) for _ in range(5)]
        assert b.getstate() != a.getstate()  # drawing from one episode's generator moved no other


def _shape(value, seen=None):
    """An object graph as nested plain values, object for object, clock readings left out."""
    import datetime

    seen = set() if seen is None else seen
    if id(value) in seen:
        return "<seen>"
    if isinstance(value, datetime.datetime):
        return "<clock>"
    if hasattr(value, "__dict__") and not callable(value):
        seen.add(id(value))
        return (type(value).__name__, {k: _shape(v, seen) for k, v in vars(value).items()})
    if isinstance(value, dict):
        seen.add(id(value))
        return {k: _shape(v, seen) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_shape(v, seen) for v in (sorted(value, key=repr) if isinstance(value, set) else value)]
    return value


class _Token:
    """An attribute pickle writes but cannot read back (its __new__ needs an argument)."""

    def __new__(cls, token):
        obj = super().__new__(cls)
        obj.token = token
        return obj

    def __deepcopy__(self, memo):
        return _Token(self.token)


class _Unreadable:
    def _load_scenario(self, config, long_context=False):
        self.value, self.token = dict(config), _Token(1)


def test_attributes_that_do_not_unpickle_are_loaded_every_time_and_not_kept(monkeypatch):
    from seal_envs.bfcl import backend as bfcl_backend

    monkeypatch.setattr(bfcl_backend.loader, "backend_class", lambda name: _Unreadable)
    monkeypatch.setattr(bfcl_backend.loader, "stateless", lambda name: False)
    bfcl_backend._LOADED.clear()
    first = bfcl_backend._fresh_instance("Unreadable", {"a": [1]}, False)
    second = bfcl_backend._fresh_instance("Unreadable", {"a": [1]}, False)
    assert first.value == second.value == {"a": [1]} and first.value is not second.value
    assert first.token.token == 1 and not bfcl_backend._LOADED
