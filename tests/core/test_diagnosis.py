"""Every label from a crafted trajectory, in two domains; the oracle only ever gets ``ok``."""

import json

import gymnasium as gym
import pytest

from seal_envs.agents import OracleAgent, run_episode
from seal_envs.core.calls import format_calls_hermes
from seal_envs.core.diagnosis import LABELS
from seal_envs.core.official import OFFICIAL_TAG_OF_LABEL, official_tag_of_step
from seal_envs.core.types import ToolCall, StepLabel
from seal_envs.tasks import TaskSet

DOMAINS = ("bank", "smarthome")


def tasks(domain):
    ts = TaskSet((domain,), "train")
    return [ts[i] for i in range(120)]


def first(domain, pred):
    return next(t for t in tasks(domain) if pred(t))


def finish(env, actions, info=None):
    """Take the crafted actions, then end every remaining turn; return the final info."""
    for a in actions:
        *_, terminated, truncated, info = env.step(a)
        if terminated or truncated:
            return info
    while True:
        *_, terminated, truncated, info = env.step("That is all I can do.")
        if terminated or truncated:
            return info


def run(domain, task, actions, patch=None):
    env = gym.make("seal/ToolUse-v0", domains=(domain,)).unwrapped
    env.reset(options={"task": task})
    if patch:
        patch(env)
    return finish(env, [format_calls_hermes([a]) if isinstance(a, ToolCall) else a for a in actions])


def single_turn(t):
    return len(t.turns) == 1 and t.turns[0].withheld is None and not t.hidden_tools


def numeric_write(t):
    return single_turn(t) and any(
        isinstance(v, int) and not isinstance(v, bool) and c.name not in ("authenticate",) for c in t.turns[0].plan[-1:]
        for v in c.arguments.values())


def bump(call):
    k = next(k for k, v in call.arguments.items() if isinstance(v, int) and not isinstance(v, bool))
    return ToolCall(call.name, {**call.arguments, k: call.arguments[k] + 1})


def read_task(domain):
    return first(domain, lambda t: t.difficulty == 1 and single_turn(t) and t.turns[0].required_outputs)


def missing_arg(call):
    return ToolCall(call.name, dict(list(call.arguments.items())[1:]))


def bad_id(call):
    k = next(k for k, v in call.arguments.items() if isinstance(v, str))
    return ToolCall(call.name, {**call.arguments, k: "X-0000"})


CONSTRAINT = {
    "bank": lambda t: ToolCall("transfer", {"from_account": "ACC-1001", "to_account": "ACC-1002", "amount": 5}),
    "smarthome": lambda t: ToolCall("set_thermostat", {"device_id": next(
        d for d, v in sorted(t.initial_state["devices"].items()) if v["kind"] == "thermostat"), "mode": "heat", "target": 45}),
}
AUTH = {"bank": "verify_identity", "smarthome": "authenticate"}


def crafted(domain):
    """label -> (task, actions, index of the step that must carry the label)."""
    rt = read_task(domain)
    plan0 = rt.turns[0].plan
    multi = first(domain, lambda t: single_turn(t) and len(t.turns[0].plan) >= 2)
    nw = first(domain, numeric_write)
    auth = first(domain, lambda t: single_turn(t) and [c.name for c in t.turns[0].plan][:1] == [AUTH[domain]])
    hidden = first(domain, lambda t: t.hidden_tools)
    late_call = next(c for turn in hidden.turns for c in turn.plan if c.name in hidden.hidden_tools)
    return {
        "format_error": (rt, ['{"name": "x", "arguments": {'], 0),
        "unknown_tool": (rt, [ToolCall("teleport", {})], 0),
        "schema_violation": (rt, [missing_arg(plan0[0])], 0),
        "arg_mismatch": (nw, list(nw.turns[0].plan[:-1]) + [bump(nw.turns[0].plan[-1])], len(nw.turns[0].plan) - 1),
        "constraint_violation": (rt, [CONSTRAINT[domain](rt)], 0),
        "missing_call": (multi, list(multi.turns[0].plan[:-1]) + ["Done."], len(multi.turns[0].plan) - 1),
        "spurious_call": (hidden, [late_call], 0),
        "wrong_order": (auth, [auth.turns[0].plan[1], auth.turns[0].plan[0]], 0),
        "redundant_call": (rt, [plan0[0], plan0[0]], 1),
        "recovery_failure": (rt, [bad_id(plan0[0]), bad_id(plan0[0])], 1),
        "response_mismatch": (rt, list(plan0) + ["Done."], len(plan0)),
        "premature_end": (rt, ["Okay."], 0),
    }


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("label", [lb for lb in LABELS if lb not in ("ok", "env_error")])
def test_crafted_trajectory_gets_its_label(domain, label):
    task, actions, at = crafted(domain)[label]
    info = run(domain, task, actions)
    got = info["step_labels"][at]
    assert got["label"] == label, (task.task_id, info["step_labels"])
    assert not info["verdict"]["passed"] or label == "redundant_call"


@pytest.mark.parametrize("domain", DOMAINS)
def test_env_error_is_the_envs_fault(domain):
    task = read_task(domain)
    call = task.turns[0].plan[0]

    def broken(env):
        setattr(env.backend, call.name, lambda **kw: 1 / 0)

    info = run(domain, task, [call], patch=broken)
    assert info["step_labels"][0]["label"] == "env_error"
    assert official_tag_of_step(StepLabel.from_dict(info["step_labels"][0])) == "checker_error"


@pytest.mark.parametrize("domain", DOMAINS)
def test_oracle_only_gets_ok(domain):
    env = gym.make("seal/ToolUse-v0", domains=(domain,)).unwrapped
    for task in tasks(domain)[:60]:
        _, info, _ = run_episode(env, OracleAgent(), options={"task": task})
        assert {lb["label"] for lb in info["step_labels"]} == {"ok"}


def test_official_tags_cover_every_label_and_abstention():
    assert set(OFFICIAL_TAG_OF_LABEL) == set(LABELS)
    assert official_tag_of_step(StepLabel("ok", abstention=True)) == "correct_abstention"
    assert official_tag_of_step(StepLabel("spurious_call")) == "spurious_tool_call"


def test_pluggable_grader_replaces_rules():
    calls = []

    def grader(task, steps, verdict, specs):
        calls.append(len(steps))
        return [StepLabel("response_mismatch", turn=s.turn) for s in steps]

    env = gym.make("seal/ToolUse-Bank-v0", diagnoser=grader).unwrapped
    _, info, actions = run_episode(env, OracleAgent(), seed=0)
    assert calls == [len(actions)] and {lb["label"] for lb in info["step_labels"]} == {"response_mismatch"}


def test_a_turn_with_a_call_is_spurious_or_abstaining_never_both():
    """A user turn that needs no call: calling a tool is spurious_tool_call, and the step that
    ends the turn is then no correct_abstention; without the call it is."""
    from seal_envs.core.diagnosis import diagnose
    from seal_envs.core.types import CallEvent, Check, StepRecord, Task, UserTurn, Verdict

    task = Task("t", "bank", "train", 0, 1, {}, (UserTurn("Just say hi."),))
    verdict = Verdict((Check("state_turn_0", True, "", 0),), 1.0, (True,))
    call = ToolCall("get_balance", {"account_id": "A"})
    with_call = [StepRecord(0, "", (call,), (CallEvent("ok", "get_balance", result=1),)),
                 StepRecord(0, "Hi.", ends_turn=True)]
    tags = [official_tag_of_step(lb) for lb in diagnose(task, with_call, verdict, {})]
    assert "spurious_tool_call" in tags and "correct_abstention" not in tags
    tags = [official_tag_of_step(lb) for lb in diagnose(task, [StepRecord(0, "Hi.", ends_turn=True)], verdict, {})]
    assert tags == ["correct_abstention"]


@pytest.mark.parametrize("domain", DOMAINS)
def test_one_successful_call_is_labelled_as_the_general_rule_labels_it(domain):
    """``immediate_label`` takes a shortcut for a step of one successful call; over oracle
    episodes, and episodes that take every action twice (so calls repeat within a user turn and
    across turns), the shortcut gives exactly the general rule's label."""
    from seal_envs.core.diagnosis import _calls_label, _one_ok_call, immediate_label

    env = gym.make("seal/ToolUse-v0", domains=(domain,)).unwrapped
    compared, seen = 0, set()
    for seed in range(40):
        agent, done = OracleAgent(), False
        _, info = env.reset(seed=seed)
        while not done:
            action = agent.act(env, info)
            repeats = [action, action] if seed % 2 else [action]  # odd seeds call everything twice
            for a in repeats:
                *_, terminated, truncated, info = env.step(a)
                done = terminated or truncated
                if done:
                    break
        steps = env.unwrapped._episode.steps
        for i, step in enumerate(steps):
            if len(step.calls) == 1 and not step.guessed_withheld and step.events[0].ok:
                fast = _one_ok_call(step.calls[0], step.turn, steps[:i])
                assert fast == _calls_label(step, steps[:i]) == immediate_label(step, steps[:i])
                compared += 1
                seen.add(fast.label)
    assert compared > 50 and seen == {"ok", "redundant_call"}, (compared, seen)
