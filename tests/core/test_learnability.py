"""The learnability curriculum: per-task pass counts on the canonical and a hinted surface, the
weights they give, and the envs and co-evolution that produce them."""

from __future__ import annotations

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401
from seal_envs import CoEvolution
from seal_envs.agents import OracleAgent, run_episode
from seal_envs.core.evolver import Count, EpisodeDiagnosis, Evolver, count_diagnoses
from seal_envs.core.learnability import PassCounts, learnability, learnability_weights
from seal_envs.core.statefile import StateFileError
from seal_envs.core.surface import CANONICAL, Surface, SurfacePatch, surface_preset


def test_learnability_is_hinted_minus_canonical_success_once_both_were_played():
    assert learnability(PassCounts(4, 1, 2, 2)) == pytest.approx(0.75)
    assert learnability(PassCounts(2, 2, 2, 0)) == pytest.approx(-1.0)
    assert learnability(PassCounts(0, 0, 3, 3)) is None and learnability(PassCounts(3, 0, 0, 0)) is None


def test_weights_use_the_task_then_its_bucket_then_explore():
    tasks = [("a", "bank", 1), ("b", "bank", 1), ("c", "bank", 2), ("d", "bank", 1)]
    counts = {"a": PassCounts(2, 0, 2, 2),  # the hint turns failure into success: L = 1
              "b": PassCounts(2, 2, 2, 0),  # the hint hurts: clipped to the floor
              "d": PassCounts(0, 0, 1, 1)}  # hinted only: its bucket's L, 3/5 hinted - 2/4 canonical
    assert learnability_weights(tasks, counts, floor=0.1) == pytest.approx([1.1, 0.1, 1.0, 0.2])


def diagnosis(task_id: str, passed: bool, canonical: bool) -> EpisodeDiagnosis:
    return EpisodeDiagnosis(task_id, "bank", 2, passed, (), canonical)


def test_counts_keep_each_task_per_surface_and_spell_any_task_id():
    counts = count_diagnoses([diagnosis("x|y/z", True, False), diagnosis("x|y/z", False, True)])
    assert counts[Count("task_n", "bank", 2, "hinted", "x|y/z")] == 1
    assert counts[Count("task_pass", "bank", 2, "hinted", "x|y/z")] == 1
    assert counts[Count("task_pass", "bank", 2, "canonical", "x|y/z")] == 0
    for key in counts:
        assert Count.parse(key.spelled()) == key
    with pytest.raises(ValueError, match="not an evolver statistic"):
        Count.parse("task_n|bank|2|sideways|t")


def test_the_evolver_keeps_task_counts_beyond_its_window_and_saves_them(tmp_path):
    ev = Evolver(window=1, curriculum=True, curriculum_mode="learnability")
    for passed in (False, True, True):  # three batches: the window keeps one, the task counts all
        ev.observe([diagnosis("bank/train/d2/7", passed, canonical=not passed)])
        ev.update()
    assert ev.pass_counts() == {"bank/train/d2/7": PassCounts(1, 0, 2, 2)}
    path = tmp_path / "evolver.json"
    ev.save(path)
    assert Evolver.load(path).pass_counts() == ev.pass_counts()
    state = ev.state_dict()
    state["task_counts"] = {"episodes|bank": 3}
    with pytest.raises(StateFileError, match="task_counts"):
        Evolver.from_state_dict(state)
    with pytest.raises(ValueError, match="curriculum_mode must be one of"):
        Evolver(curriculum_mode="hardest")


def test_learnability_weights_cover_every_task_of_a_real_split():
    task_set = gym.make("seal/ToolUse-Bank-v0").unwrapped.task_set
    assert all(task_set.task_id(i) == task_set[i].task_id for i in range(0, len(task_set), 41))
    ev = Evolver(curriculum=True, curriculum_mode="learnability")
    ev.observe([diagnosis(task_set.task_id(5), True, False), diagnosis(task_set.task_id(5), False, True)])
    ev.update()
    weights = ev.curriculum_weights(task_set)
    assert len(weights) == len(task_set) and weights[5] == pytest.approx(1.1)
    same_bucket = [i for i in task_set.indices(difficulty=task_set.slot(5).difficulty) if i != 5]
    assert [weights[i] for i in same_bucket] == pytest.approx([1.1] * len(same_bucket))  # the bucket's
    others = set(range(len(task_set))) - set(same_bucket) - {5}
    assert {weights[i] for i in others} == {1.0}  # nothing known: tried first


def final_info(env, seed=3):
    return run_episode(env, OracleAgent(), seed=seed)[1]


def test_the_final_info_says_whether_any_hint_was_shown():
    env = gym.make("seal/ToolUse-Bank-v0")
    assert final_info(env)["surface_canonical"] is True
    env.unwrapped.set_surface(surface_preset("observation_lite"))
    assert final_info(env)["surface_canonical"] is False
    env.unwrapped.set_surface(CANONICAL)
    _, info = env.reset(seed=3)
    env.unwrapped.set_surface(CANONICAL.apply(SurfacePatch("recovery", "format", 1, "test")))  # mid-episode
    agent, done = OracleAgent(), False
    while not done:
        _, _, term, trunc, info = env.step(agent.act(env, info))
        done = term or trunc
    assert info["surface_canonical"] is False


def test_learnability_mode_plays_every_other_env_on_the_canonical_surface():
    hinted = Surface().apply(SurfacePatch("recovery", "format", 1, "test"))
    co = CoEvolution({"curriculum": True, "curriculum_mode": "learnability"}, curriculum=True, surface=hinted)
    envs = [gym.make("seal/ToolUse-Bank-v0") for _ in range(4)]
    co.apply(envs)
    assert [e.unwrapped.surface for e in envs] == [hinted, CANONICAL, hinted, CANONICAL]
    vec = gym.vector.SyncVectorEnv([lambda: gym.make("seal/ToolUse-Bank-v0") for _ in range(4)])
    co.apply(vec)
    assert list(vec.get_attr("surface")) == [hinted, CANONICAL, hinted, CANONICAL]
    bucket = CoEvolution({"curriculum": True}, curriculum=True, surface=hinted)
    bucket.apply(envs)
    assert all(e.unwrapped.surface == hinted for e in envs)
