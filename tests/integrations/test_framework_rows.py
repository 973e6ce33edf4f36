"""What every adapter shares: the task a dataset row asks for, the final-info record, chat messages."""

import json

import gymnasium as gym
import pytest

import seal_envs
from seal_envs import CoEvolution
from seal_envs.agents import OracleAgent, run_episode
from seal_envs.integrations import final_record, make_env, reset_arguments, task_row
from seal_envs.integrations.common import RECORD_KEYS, chat_messages


@pytest.mark.parametrize("row, expected", [
    ({"task_id": "bank/train/d2/5"}, (None, {"task_id": "bank/train/d2/5"})),
    ({"prompt": [], "extra_info": {"task_id": "bank/train/d2/5", "index": 3}}, (None, {"task_id": "bank/train/d2/5", "index": 3})),
    ({"seed": 7, "extras": {"seed": 9}}, (7, {})),                       # the top level wins
    ({"info": {"seed": "12", "split": "test", "domain": "shop", "difficulty": 2}},
     (12, {"split": "test", "domain": "shop", "difficulty": 2})),
    (None, (None, {})),
    ({"task_id": None, "extra_info": {"task_id": "shop/test/d1/3"}}, (None, {"task_id": "shop/test/d1/3"})),
    ({"reward_spec": {"ground_truth": "x"}}, (None, {})),
])
def test_rows_name_their_task(row, expected):
    assert reset_arguments(row) == expected


@pytest.mark.parametrize("row, field", [({"seed": -1}, "seed"), ({"seed": True}, "seed"), ({"index": 1.5}, "index"),
                                        ({"task_id": 5}, "task_id"), ({"extra_info": {"split": 1}}, "split")])
def test_a_bad_row_field_is_an_error_that_names_it(row, field):
    with pytest.raises(ValueError, match=repr(field)):
        reset_arguments(row)


def test_the_record_is_plain_json_and_co_evolution_counts_it():
    env = make_env("seal/ToolUse-Bank-v0")
    reward, info, _ = run_episode(env, OracleAgent(), seed=4)
    record = final_record(info, reward)
    assert set(record) == {*RECORD_KEYS, "reward"} and record["reward"] == 1.0
    assert json.loads(json.dumps(record)) == record
    assert record["verdict"]["passed"] and record["official_turn_tags"] and record["step_labels"]
    assert CoEvolution.count([record]) == CoEvolution.count([info])
    with pytest.raises(ValueError, match="last step"):
        final_record(env.reset(seed=0)[1])


def test_task_rows_replay_their_task_and_chat_messages_carry_the_tools():
    row = task_row("seal/ToolUse-Shop-v0", "shop/train/d2/7")
    assert row["env_class"] == "seal/ToolUse-Shop-v0" and row["extra_info"]["task_id"] == "shop/train/d2/7"
    assert row["prompt"][0]["role"] == "system" and '"type": "function"' in row["prompt"][0]["content"]
    seed, options = reset_arguments(row)
    _, info = gym.make("seal/ToolUse-Shop-v0").reset(seed=seed, options=options)
    assert info["task_id"] == "shop/train/d2/7" and row["prompt"][-1]["content"] == info["new_messages"][-1]["content"]
    messages = [{"role": "assistant", "content": "", "tool_calls": [{"id": "c", "type": "function", "function": {}}]},
                {"role": "tool", "tool_call_id": "c", "name": "f", "content": "1"}]
    assert chat_messages(messages) == [{"role": "tool", "content": "1", "name": "f", "tool_call_id": "c"}]
    assert chat_messages(messages, assistant=True)[0]["tool_calls"][0]["id"] == "c"


def test_importing_seal_envs_and_the_package_loads_no_framework():
    import subprocess
    import sys

    code = ("import sys, seal_envs, seal_envs.integrations; "
            "print(sorted(m for m in ('gem', 'skyrl_gym', 'openenv', 'fastapi', 'uvicorn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
