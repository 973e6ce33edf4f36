"""The evolver: habits raise exactly their channel, fading, determinism, merge, persistence."""

import json
import random

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seal_envs.agents import OracleAgent, RandomAgent, run_episode
from seal_envs.coevolution import CoEvolution
from seal_envs.core.evolver import EpisodeDiagnosis, Evolver
from seal_envs.core.surface import CANONICAL, MAX_LEVEL, SurfacePatch
from seal_envs.core.types import ToolCall
from seal_envs.tasks import TaskSet

BANK = TaskSet(("bank",), "train")
ALERT_TASKS = [BANK[i] for i in range(len(BANK)) if any(c.name == "set_alert" for c in BANK[i].plan)][:8]
BALANCE_TASKS = [BANK[i] for i in range(len(BANK)) if BANK[i].template == "balance"][:8]


def first_try(wrong):
    """A habit: the first attempt at set_alert is wrong in one way; the error makes it retry right."""
    def habit(actions, turn, task):
        out = []
        for a in actions:
            if isinstance(a, ToolCall) and a.name == "set_alert":
                out.append(wrong(a))
            out.append(a)
        return out
    return habit


omit_channel = first_try(lambda a: ToolCall(a.name, {k: v for k, v in a.arguments.items() if k != "channel"}))
ignore_enum = first_try(lambda a: ToolCall(a.name, {**a.arguments, "channel": "text message"}))


def repeat_failing(actions, turn, task):
    bad = ToolCall("get_balance", {"account_id": "ACC-9999"})
    return [bad, bad] + actions


def batch(env, tasks, habit):
    infos = [run_episode(env, OracleAgent(habit), options={"task": t})[1] for t in tasks]
    return [EpisodeDiagnosis.from_info(i) for i in infos]


@pytest.mark.parametrize("habit, tasks, expected", [
    (omit_channel, ALERT_TASKS, ("affordance", "set_alert")),
    (ignore_enum, ALERT_TASKS, ("affordance", "set_alert")),
    (repeat_failing, BALANCE_TASKS, ("recovery", "tool_error")),
])
def test_habit_raises_exactly_its_channel_then_fades(habit, tasks, expected):
    co = CoEvolution(Evolver(window=1, min_episodes=4, fade_patience=2))
    env = gym.make("seal/ToolUse-Bank-v0").unwrapped
    for _ in range(2):  # 2 batches of 8 episodes, each played on the surface the last one left
        co.evolve(batch(env, tasks, habit))
        co.apply(env)
    raised = {(c, s) for c, s, lv in env.surface.levels}
    assert raised == {expected} and env.surface.level(*expected) == 2
    for _ in range(4):  # the habit stops: fading lowers the channel again
        co.evolve(batch(env, tasks, None))
        co.apply(env)
    assert env.surface.level(*expected) == 0 and env.surface.version == 4


def random_diagnoses(n, seed=0):
    env = gym.make("seal/ToolUse-v0").unwrapped
    return [EpisodeDiagnosis.from_info(run_episode(env, RandomAgent(s), seed=s)[1]) for s in range(seed, seed + n)]


def test_order_and_split_over_ranks_do_not_matter():
    diags = random_diagnoses(24)
    a, b = Evolver(min_episodes=2), Evolver(min_episodes=2)
    rank0, rank1 = Evolver(min_episodes=2), Evolver(min_episodes=2)
    a.observe(diags)
    b.observe(list(reversed(diags)))
    rank0.observe(diags[::2])
    rank1.observe(diags[1::2])
    rank0.merge(rank1)
    patches = [e.update() for e in (a, b, rank0)]
    assert patches[0] == patches[1] == patches[2] and patches[0]
    assert a.state_dict() == b.state_dict() == rank0.state_dict()


def test_json_round_trip_and_corrupt_file(tmp_path):
    ev = Evolver(min_episodes=2, curriculum=True)
    ev.observe(random_diagnoses(10))
    ev.update()
    ev.observe(random_diagnoses(5, seed=50))
    path = tmp_path / "evolver.json"
    ev.save(path)
    again = Evolver.load(path)
    assert again.state_dict() == ev.state_dict()
    assert again.update() == ev.update()
    path.write_text(path.read_text()[:-20])
    with pytest.raises(ValueError, match=str(path)):
        Evolver.load(path)


def test_curriculum_weights_favour_mixed_outcomes():
    ts = TaskSet(("bank",), "train")
    ev = Evolver(curriculum=True, curriculum_ema=0.0)
    solved = [EpisodeDiagnosis(f"t{i}", "bank", 1, True, ()) for i in range(4)]
    mixed = [EpisodeDiagnosis(f"u{i}", "bank", 2, i % 2 == 0, ()) for i in range(4)]
    ev.observe(solved + mixed)
    ev.update()
    w = ev.curriculum_weights(ts)
    by_diff = {ts.slot(i).difficulty: w[i] for i in range(len(ts))}
    assert by_diff[1] == pytest.approx(0.1) and by_diff[2] == pytest.approx(1.1) and by_diff[3] == 1.0


def test_thresholds_validated():
    with pytest.raises(ValueError, match="fade_threshold"):
        Evolver(raise_threshold=0.1, fade_threshold=0.2)


patches = st.lists(st.builds(SurfacePatch, st.sampled_from(sorted(MAX_LEVEL)),
                             st.sampled_from(["transfer", "set_alert", "get_balance", "verify_identity",
                                              "schema_violation", "tool_error", "policy_violation", "format_error",
                                              "unknown_tool", "unavailable_tool", "freeze_card"]),
                             st.integers(0, 2)), max_size=12)


@settings(max_examples=30, deadline=None)
@given(index=st.integers(0, 399), agent_seed=st.integers(0, 10**6), ps=patches)
def test_evolution_never_changes_semantics(index, agent_seed, ps):
    """The same actions against the canonical and an evolved surface: same states, same verdict."""
    task = BANK[index]
    canonical = gym.make("seal/ToolUse-Bank-v0").unwrapped
    _, info_c, actions = run_episode(canonical, RandomAgent(agent_seed, answer_prob=0.3), options={"task": task})
    evolved = gym.make("seal/ToolUse-Bank-v0").unwrapped
    for p in ps:
        evolved.apply_patch(p)
    evolved.reset(options={"task": task})
    for a in actions:
        *_, info_e = evolved.step(a)
    assert evolved.backend.state == canonical.backend.state
    assert info_e["verdict"] == info_c["verdict"]
    assert [lb["label"] for lb in info_e["step_labels"]] == [lb["label"] for lb in info_c["step_labels"]]
    _, oracle_c, _ = run_episode(canonical, OracleAgent(), options={"task": task})
    _, oracle_e, _ = run_episode(evolved, OracleAgent(), options={"task": task})
    assert oracle_c["verdict"] == oracle_e["verdict"] and oracle_e["verdict"]["passed"]


def test_state_is_versioned_and_validated_with_the_field_named(tmp_path):
    import json

    import pytest

    from seal_envs.core.statefile import StateFileError

    ev = Evolver(window=2)
    ev.observe([])
    ev.update()
    state = ev.state_dict()
    assert (state["format"], state["format_version"]) == ("seal-evolver", 1)
    assert Evolver.from_state_dict(json.loads(json.dumps(state))).state_dict() == state
    legacy = {k: v for k, v in state.items() if not k.startswith("format")}
    assert Evolver.from_state_dict(legacy).state_dict() == state  # written before versioning: version 1
    bad = [
        ({"format_version": 2}, "field 'format_version' is 2"),
        ({"format": "seal-surface"}, "field 'format' is 'seal-surface'"),
        ({"config": {k: v for k, v in state["config"].items() if k != "patience"}}, "field 'config'.*'patience'"),
        ({"config": state["config"] | {"typo": 1}}, "field 'config'.*typo"),
        ({"config": state["config"] | {"window": "4"}}, "field 'config/window'"),
        ({"levels": {"affordance|transfer": "2"}}, "field 'levels/affordance|transfer'"),
        ({"levels": {"affordance|transfer": 9}}, "above the affordance maximum"),
        ({"levels": {"colour|transfer": 1}}, "field 'levels'"),
        ({"pending": {"fail|bank": 1.5}}, "field 'pending/fail|bank'"),
        ({"history": {}}, "field 'history'"),
        ({"config": state["config"] | {"fade_threshold": 0.9}}, "field 'config' is invalid: need 0"),
    ]
    for change, fragment in bad:
        with pytest.raises(StateFileError, match=fragment):
            Evolver.from_state_dict(state | change, "x.json")
    path = tmp_path / "evolver.json"
    for text, fragment in ((ev.to_json()[:30], "not valid JSON"), ("[1]", "expected a JSON object")):
        path.write_text(text)
        with pytest.raises(StateFileError, match=fragment) as err:
            Evolver.load(path)
        assert str(path) in str(err.value)
    with pytest.raises(StateFileError, match="cannot be read"):
        Evolver.load(tmp_path / "absent.json")
