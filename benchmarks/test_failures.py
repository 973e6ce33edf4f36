"""The failure tally: which reference arguments the agent's calls got wrong."""

import json

from benchmarks.failures import markdown, tally
from seal_envs.tasks import generate


def _transcript(calls):
    return [{"role": "assistant", "content": "", "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))}}]}
        for i, c in enumerate(calls)]


def test_tally_names_the_wrong_argument_and_what_was_written():
    task = next(t for t in (generate("bank", s, 2, "test") for s in range(100, 200))
                if any(c.name == "set_alert" for turn in t.turns for c in turn.plan))
    plan = [c for turn in task.turns for c in turn.plan]
    wrong = [type(c)(c.name, {**c.arguments, "channel": "pager"}) if c.name == "set_alert" else c for c in plan]
    episodes = [
        {"task_id": task.task_id, "passed": True, "transcript": _transcript(plan)},      # passing: not read
        {"task_id": task.task_id, "passed": False, "transcript": _transcript(wrong)},
        {"task_id": task.task_id, "passed": False, "transcript": _transcript(plan[:1])},  # the rest never made
    ]
    failing, per_arg, written = tally(episodes)
    assert failing == 2
    assert per_arg[("set_alert", "channel")] == 1 and written[("set_alert", "channel")]['"pager"'] == 1
    assert per_arg[("set_alert", "(never called)")] == 1
    assert not any(arg == "account_id" for _, arg in per_arg)  # the right values are not blamed
    assert "| set_alert | channel | 1 |" in markdown(failing, per_arg, written)
