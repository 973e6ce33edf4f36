"""The episode state object: one made per reset, restored whole by a failed step."""

from dataclasses import fields

import gymnasium as gym

import seal_envs  # noqa: F401
from seal_envs.episode import Episode


def test_a_checkpoint_copies_every_container_of_the_episode():
    """A field added to Episode as a list or set is covered by checkpoint() or this fails."""
    env = gym.make("seal/ToolUse-Bank-v0").unwrapped
    env.reset(seed=0)
    env.step('{"name": "list_accounts", "arguments": {"customer_id": "C-1"}}')
    ep = env._episode
    saved = ep.checkpoint()
    containers = [f.name for f in fields(Episode) if isinstance(getattr(ep, f.name), (list, set))]
    assert {"steps", "messages", "available", "turn_texts", "turn_results", "immediate_labels"} <= set(containers)
    for name in containers:
        assert getattr(saved, name) == getattr(ep, name) and getattr(saved, name) is not getattr(ep, name), name
    for name in ("turn_states", "turn_answers", "turn_results", "violations", "guessed_withheld"):
        assert getattr(saved.record, name) is not getattr(ep.record, name), name


def test_each_reset_makes_a_new_episode():
    env = gym.make("seal/ToolUse-Bank-v0").unwrapped
    env.reset(seed=0)
    first = env._episode
    env.reset(seed=0)
    assert env._episode is not first and env._episode.messages is not first.messages
    assert env.messages == first.conversation()  # same seed, same conversation
