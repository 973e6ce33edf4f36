"""The failure tally: which reference arguments the agent's calls got wrong."""

import json

import pytest

from benchmarks.failures import markdown, tally
from seal_envs.tasks import generate


def _transcript(calls):
    return [{"role": "assistant", "content": "", "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))}}]}
        for i, c in enumerate(calls)]


def test_tally_names_the_wrong_argument_and_what_was_written():
    task = next(t for t in (generate("bank", s, 2, "test") for s in range(100, 200))
                if any(c.name == "set_alert" for c in t.plan))
    plan = list(task.plan)
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


@pytest.mark.slow
def test_choice_scores_every_allowed_value_where_the_reference_writes_it():
    from benchmarks.failures import choice_markdown, choice_probabilities
    from seal_trl.agent.tiny import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer("default")
    rows = choice_probabilities(model.eval(), tokenizer, "seal/ToolUse-Bank-v0", "test", 24, "set_alert", "channel")
    assert rows and all(set(r["probabilities"]) == {"sms", "email", "push"} for r in rows)
    assert all(abs(sum(r["probabilities"].values()) - 1) < 1e-6 and r["right"] in r["probabilities"] for r in rows)
    assert f"{len(rows)} reference calls of set_alert" in choice_markdown(rows, "set_alert", "channel")
    import pytest

    with pytest.raises(ValueError, match="no enum"):
        choice_probabilities(model, tokenizer, "seal/ToolUse-Bank-v0", "test", 24, "set_alert", "account_id")
