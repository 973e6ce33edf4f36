"""The smart home domain: its tools, its house rules, rollback on failure and the generator's promises."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401  (registers the env)
from seal_envs.agents import OracleAgent, run_episode
from seal_envs.core.generator import rng_for
from seal_envs.core.types import ToolCall
from seal_envs.domains.smarthome import GENERATOR, SmartHomeBackend
from seal_envs.domains.smarthome.backend import MIN_CLIMATE_CHARGE
from seal_envs.domains.smarthome.generator import PHRASES

SEEDS = range(40)


@pytest.fixture
def state() -> dict:
    return GENERATOR.initial_state(rng_for("smarthome", "train", 7))


def device(state: dict, kind: str) -> str:
    return next(d for d, v in sorted(state["devices"].items()) if v["kind"] == kind)


def car(state: dict, charged: bool) -> str:
    return next(c for c, v in sorted(state["cars"].items()) if (v["charge"] >= MIN_CLIMATE_CHARGE) == charged)


def call(backend: SmartHomeBackend, name: str, **arguments):
    return backend.execute(ToolCall(name, arguments))


# -- tools -----------------------------------------------------------------------------------
def test_specs_are_complete():
    specs = SmartHomeBackend.tool_specs()
    assert 7 <= len(specs) <= 12
    enums = 0
    for spec in specs.values():
        assert spec.description
        for name, prop in spec.parameters["properties"].items():
            assert prop["description"], f"{spec.name}.{name} is undocumented"
            enums += "enum" in prop
    assert enums >= 2
    assert {s.name for s in specs.values() if s.writes} == {
        "set_light", "set_thermostat", "set_lock", "set_car_climate", "set_car_doors", "activate_scene"}


def test_every_tool_works_on_a_generated_state(state):
    be = SmartHomeBackend(state)
    light, thermostat, lock = device(state, "light"), device(state, "thermostat"), device(state, "lock")
    cid, room, scene = car(state, charged=True), state["rooms"][0], sorted(state["scenes"])[0]
    calls = [
        ("authenticate", {"pin": state["home"]["pin"]}),
        ("list_devices", {}),
        ("list_devices", {"room": room.upper()}),
        ("get_device", {"device_id": light}),
        ("set_light", {"device_id": light, "brightness": 0, "color": "blue"}),
        ("set_thermostat", {"device_id": thermostat, "mode": "heat", "target": 22}),
        ("set_lock", {"device_id": lock, "action": "unlock"}),
        ("get_car", {"car_id": cid}),
        ("set_car_climate", {"car_id": cid, "action": "start", "temperature": 20}),
        ("set_car_doors", {"car_id": cid, "action": "unlock"}),
        ("list_scenes", {}),
        ("get_energy_usage", {"period": "week"}),
        ("get_energy_usage", {"period": "today", "room": room}),
    ]
    events = {f"{n}:{json.dumps(a)}": call(be, n, **a) for n, a in calls}
    assert all(e.ok for e in events.values()), {k: e.message for k, e in events.items() if not e.ok}
    assert {n for n, _ in calls} | {"activate_scene"} == set(SmartHomeBackend.tool_specs())

    assert (be.state["devices"][light]["brightness"], be.state["devices"][light]["color"]) == (0, "blue")
    assert (be.state["devices"][thermostat]["mode"], be.state["devices"][thermostat]["target"]) == ("heat", 22)
    assert be.state["devices"][lock]["locked"] is False
    assert be.state["cars"][cid]["climate"] == {"on": True, "temperature": 20}
    assert be.state["cars"][cid]["locked"] is False
    listed = events[f"list_devices:{json.dumps({'room': room.upper()})}"].result
    assert listed and {d["room"] for d in listed} == {room}
    week = events[f"get_energy_usage:{json.dumps({'period': 'week'})}"].result["kwh"]
    assert week == round(sum(r["week"] for r in state["energy"].values()), 1)

    settings = state["scenes"][scene]["settings"]
    assert call(be, "activate_scene", scene_id=scene).ok
    assert be.state["active_scene"] == scene
    for setting in settings:
        dev = be.state["devices"][setting["device_id"]]
        assert all(dev[k] == v for k, v in setting.items() if k != "device_id")
    assert call(be, "set_car_climate", car_id=cid, action="stop").result["climate"]["on"] is False


def test_locking_needs_no_pin(state):
    be = SmartHomeBackend(state)
    assert call(be, "set_lock", device_id=device(state, "lock"), action="lock").ok
    assert call(be, "set_car_doors", car_id=car(state, True), action="lock").ok


# -- policies ------------------------------------------------------------------------------------
POLICY_CASES = [
    ("owner_pin", lambda s: ("set_lock", {"device_id": device(s, "lock"), "action": "unlock"})),
    ("owner_pin", lambda s: ("set_car_doors", {"car_id": car(s, True), "action": "unlock"})),
    ("thermostat_range", lambda s: ("set_thermostat", {"device_id": device(s, "thermostat"), "mode": "heat", "target": 31})),
    ("thermostat_range", lambda s: ("set_thermostat", {"device_id": device(s, "thermostat"), "mode": "cool", "target": 9})),
    ("climate_charge", lambda s: ("set_car_climate", {"car_id": car(s, False), "action": "start", "temperature": 20})),
]


@pytest.mark.parametrize("rule,make", POLICY_CASES)
def test_policy_refuses_and_names_its_rule(state, rule, make):
    be = SmartHomeBackend(state)
    before = copy.deepcopy(be.state)
    name, arguments = make(state)
    event = call(be, name, **arguments)
    assert (event.kind, event.rule) == ("policy_violation", rule)
    assert rule in SmartHomeBackend.POLICIES and rule in SmartHomeBackend.tool_specs()[name].policies
    assert be.state == before


def test_policies_allow_the_edges(state):
    be = SmartHomeBackend(state)
    thermostat = device(state, "thermostat")
    assert call(be, "set_thermostat", device_id=thermostat, mode="cool", target=10).ok
    assert call(be, "set_thermostat", device_id=thermostat, mode="heat", target=30).ok
    assert call(be, "set_car_climate", car_id=car(state, False), action="stop").ok
    assert call(be, "authenticate", pin=state["home"]["pin"]).ok
    assert call(be, "set_lock", device_id=device(state, "lock"), action="unlock").ok


# -- failures leave no trace -------------------------------------------------------------------
def test_failed_calls_leave_state_unchanged(state):
    be = SmartHomeBackend(state)
    wrong_pin = "0000" if state["home"]["pin"] != "0000" else "1111"
    cases = [
        ("authenticate", {"pin": wrong_pin}, "pin"),
        ("get_device", {"device_id": "DEV-1"}, "device_id"),
        ("set_light", {"device_id": device(state, "lock"), "brightness": 50}, "device_id"),
        ("list_devices", {"room": "attic"}, "room"),
        ("get_car", {"car_id": "CAR-1"}, "car_id"),
        ("activate_scene", {"scene_id": "SCN-1"}, "scene_id"),
    ]
    for name, arguments, param in cases:
        before = copy.deepcopy(be.state)
        event = call(be, name, **arguments)
        assert (event.kind, event.param) == ("tool_error", param), name
        assert be.state == before
    assert not be.session.get("authenticated")


def test_half_applied_scene_is_rolled_back(state):
    """A scene naming a removed device fails after changing others; none of it may stick."""
    scene = sorted(state["scenes"])[0]
    state["scenes"][scene]["settings"].append({"device_id": "DEV-1", "brightness": 5})
    be = SmartHomeBackend(state)
    before = copy.deepcopy(be.state)
    assert call(be, "activate_scene", scene_id=scene).kind == "tool_error"
    assert be.state == before


# -- generator ---------------------------------------------------------------------------------
def test_generator_is_deterministic_and_varies():
    for d in (1, 2, 3, 4):
        a = [GENERATOR.generate(s, d, "train").to_dict() for s in range(5)]
        assert a == [type(GENERATOR)().generate(s, d, "train").to_dict() for s in range(5)]
        assert len({json.dumps(t, sort_keys=True) for t in a}) == 5


def test_generator_ignores_hash_seed():
    """Nothing may depend on set order, which changes with PYTHONHASHSEED between processes."""
    code = ("import json; from seal_envs.domains.smarthome import GENERATOR as G; "
            "print(json.dumps([G.generate(s, d, 'ood').to_dict() for s in range(3) for d in (1, 2, 3, 4)], sort_keys=True))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env=os.environ | {"PYTHONHASHSEED": "12345"}).stdout
    here = [GENERATOR.generate(s, d, "ood").to_dict() for s in range(3) for d in (1, 2, 3, 4)]
    assert json.loads(other) == here


def _tasks(difficulty: int, split: str = "train"):
    return [GENERATOR.generate(s, difficulty, split) for s in SEEDS]


def test_difficulty_features():
    for t in _tasks(1):
        assert len(t.turns) == 1 and len(t.plan) == 1
    for t in _tasks(2):
        assert len(t.turns) <= 2 and 2 <= len(t.plan) <= 3
    for t in _tasks(3):
        assert 2 <= len(t.turns) <= 3 and len(t.plan) <= 5
        assert any(u.withheld for u in t.turns) or "trap" in t.template
        assert not t.hidden_tools
    calls = []
    for t in _tasks(4):
        assert 3 <= len(t.turns) <= 4 and len(t.plan) <= 8
        assert any(u.withheld for u in t.turns)
        (hidden,) = t.hidden_tools
        reveal = next(i for i, u in enumerate(t.turns) if hidden in u.new_tools)
        assert reveal > 0 and not t.turns[reveal - 1].plan
        assert all(c.name != hidden for u in t.turns[:reveal] for c in u.plan)
        calls.append(len(t.plan))
    assert sum(calls) / len(calls) >= 4


def test_reads_require_outputs_and_withheld_values_stay_out_of_the_message():
    specs = SmartHomeBackend.tool_specs()
    for d in (1, 2, 3, 4):
        for t in _tasks(d) + _tasks(d, "ood"):
            for u in t.turns:
                if u.plan and not any(specs[c.name].writes for c in u.plan):
                    assert u.required_outputs, (t.task_id, u.message)
                if u.withheld:
                    assert not re.search(rf"\b{u.withheld.value}\b", u.message), (t.task_id, u.message)
                for call_ in u.plan:
                    assert all(str(v).strip() for v in call_.arguments.values())


def test_phrasebook():
    for intent, pool in PHRASES.train.items():
        assert len(pool) >= 3, intent
    assert set(PHRASES.ood) <= set(PHRASES.train)
    assert len(PHRASES.ood) >= 0.75 * len(PHRASES.train)


def test_oracle_solves_a_sample():
    env = gym.make("seal/ToolUse-v0", domains=("smarthome",)).unwrapped
    for split in ("train", "ood"):
        for index in range(0, 200, 13):
            reward, info, _ = run_episode(env, OracleAgent(), options={"index": index, "split": split})
            assert reward == 1.0, info["task_id"]
            assert {lb["label"] for lb in info["step_labels"]} == {"ok"}
