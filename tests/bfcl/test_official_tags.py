"""Official per-user-turn tags on BFCL: every tag on a hand-built trajectory, and agreement with
the official rules run on bfcl-eval's own executor and checkers over perturbed ground truths of
every category (truncated episodes included)."""

import dataclasses
import itertools
import random

import pytest

pytest.importorskip("bfcl_eval")

from seal_envs.bfcl import checker as bfcl_checker
from seal_envs.bfcl import loader
from seal_envs.bfcl.backend import BFCLBackend
from seal_envs.bfcl.compare import divergence_reason, format_call, ground_truth_trajectory, perturbations
from seal_envs.bfcl.source import BFCLTaskSet, build_task
from seal_envs.registration import make_bfcl_env as make_env
from seal_envs.core.verifier import EpisodeRecord

_RUNS = itertools.count()


def play(env, task, trajectory, turns=None):
    """One call per step, ``Done.`` after each turn; stop after ``turns`` turns (force_end)."""
    env.reset(options={"task": task})
    info = {}
    for t, calls in enumerate(trajectory):
        if turns is not None and t == turns:
            return env.force_end()[1]
        for call in calls:
            _, _, terminated, truncated, info = env.step(format_call(call))
            if terminated or truncated:
                return info
        _, _, terminated, truncated, info = env.step("Done.")
        if terminated or truncated:
            return info
    raise AssertionError("the episode did not end")


def official_tags_by_bfcl_eval(task, trajectory):
    """The official rules (SEAL-OFFICIAL.md), each fact read from bfcl-eval's own executor and
    checkers on the decoded calls; unplayed turns are turns without calls."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils as utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import response_checker, state_checker

    entry = loader.entry_index()[task.task_id]
    ground_truth = loader.ground_truth(loader.category_of(task.task_id))[task.task_id]
    model = f"sealofficial{next(_RUNS)}"
    common = dict(initial_config=entry["initial_config"], involved_classes=entry["involved_classes"],
                  test_entry_id=entry["id"], long_context=task.template == "long_context", is_evaL_run=True)
    tags, so_far = [], []
    try:
        for i, gt in enumerate(ground_truth):
            calls = trajectory[i] if i < len(trajectory) else []
            instances, results = {}, []
            for call in calls:
                step, instances = utils.execute_multi_turn_func_call([format_call(call)], model_name=model, **common)
                results.extend(step)
            gt_results, gt_instances = utils.execute_multi_turn_func_call(gt, model_name=model + "_gt", **common)
            so_far.extend(results)
            if not gt:
                tags.append("spurious_tool_call" if calls else "correct_abstention")
            elif not calls:
                tags.append("empty_turn_model_response")
            elif set(instances) != set(gt_instances):
                tags.append("instance_mismatch")
            elif not state_checker(instances, gt_instances)["valid"]:
                tags.append("state_mismatch")
            elif not response_checker(so_far, gt_results, i)["valid"]:
                tags.append("response_mismatch")
            else:
                tags.append("pass")
    finally:
        for key in [k for k in vars(utils) if k.startswith(model)]:
            delattr(utils, key)
    return tags


def official_progress(tags):
    scorable = [t for t in tags if t not in ("spurious_tool_call", "correct_abstention")]
    return sum(t == "pass" for t in scorable) / len(scorable) if scorable else 0.0


@pytest.fixture(scope="module")
def env():
    return make_env(split="all").unwrapped


def _ids(per_category, seed):
    return [i for c in loader.CATEGORIES
            for i in sorted(random.Random(f"{seed}:{c}").sample(list(BFCLTaskSet("all", (c,)).ids), per_category))]


@pytest.mark.parametrize("category", loader.CATEGORIES)
def test_tags_agree_with_the_official_rules_on_bfcl_eval(env, category):
    ids = [i for i in _ids(4, seed=1) if loader.category_of(i) == category]
    seen, compared = set(), 0
    for entry_id in ids:
        task = build_task(entry_id)
        runs = [("none", ground_truth_trajectory(task)), *perturbations(task, seed=1)]
        for kind, trajectory in runs:
            if divergence_reason(task, trajectory) is not None:
                continue  # a documented design difference (docs/bfcl.md), not a tagging question
            for turns in (None, 1):
                info = play(env, task, trajectory, turns)
                played = trajectory if turns is None else trajectory[:turns]
                expected = official_tags_by_bfcl_eval(task, played)
                assert info["official_turn_tags"] == expected, (entry_id, kind, turns)
                assert info["official_progress"] == pytest.approx(official_progress(expected))
                seen.update(expected)
                compared += 1
    assert compared >= 20
    assert {"pass", "empty_turn_model_response", "state_mismatch"} <= seen  # perturbations break things
    if category == "miss_func":
        assert "correct_abstention" in seen


def _task(entry_id):
    return build_task(entry_id)


def test_pass_and_correct_abstention(env):
    task = _task("multi_turn_miss_func_0")
    info = play(env, task, ground_truth_trajectory(task))
    assert info["official_turn_tags"] == ["pass", "pass", "correct_abstention", "pass", "pass"]
    assert info["official_progress"] == 1.0


def test_spurious_tool_call_in_the_reveal_turn(env):
    task = _task("multi_turn_miss_func_0")
    trajectory = ground_truth_trajectory(task)
    trajectory[2] = [task.turns[0].plan[0]]
    info = play(env, task, trajectory)
    assert info["official_turn_tags"][2] == "spurious_tool_call"
    assert info["official_progress"] == official_progress(info["official_turn_tags"])


def test_unreached_turns_are_turns_without_calls(env):
    task = _task("multi_turn_miss_func_0")
    info = play(env, task, ground_truth_trajectory(task), turns=1)
    assert info["official_turn_tags"] == ["pass", "empty_turn_model_response", "correct_abstention",
                                     "empty_turn_model_response", "empty_turn_model_response"]
    assert info["official_progress"] == pytest.approx(1 / 4)


def test_state_and_response_mismatch(env):
    task = _task("multi_turn_base_0")  # turns: cd mkdir mv | cd grep | sort | cd mv cd diff
    no_mv = ground_truth_trajectory(task)
    no_mv[0] = no_mv[0][:2]  # the file system differs from turn 0 on
    assert play(env, task, no_mv)["official_turn_tags"][0] == "state_mismatch"
    no_sort = ground_truth_trajectory(task)
    no_sort[2] = [task.turns[1].plan[0]]  # cd instead of sort: sort only reads, so the state
    info = play(env, task, no_sort)       # still matches while its result is missing
    assert info["official_turn_tags"] == ["pass", "pass", "response_mismatch", "pass"]
    assert info["official_progress"] == 0.75


def test_instance_mismatch_checker_error_and_gt_error(monkeypatch):
    task = _task("multi_turn_base_0")
    ref = bfcl_checker.reference(task)
    backend = BFCLBackend(task.initial_state)
    for call in task.turns[0].plan:
        backend.execute(call)
    state = backend.comparable_state()
    missing_class = {k: v for k, v in state.items() if k != task.initial_state["involved_classes"][0]}
    record = EpisodeRecord(turn_states=[missing_class])
    verdict = bfcl_checker.check(task, record, ref, irrelevance=False)
    assert verdict.turn_facts[0].instances_match is False
    from seal_envs.core.official import official_score

    assert official_score(verdict.turn_facts).tags[0] == "instance_mismatch"

    def broken(*args, **kwargs):
        raise RuntimeError("checker broke")

    monkeypatch.setattr(bfcl_checker, "state_difference", broken)
    verdict = bfcl_checker.check(task, EpisodeRecord(turn_states=[state]), ref, irrelevance=False)
    assert official_score(verdict.turn_facts).tags[0] == "checker_error"
    assert not verdict.turns_passed[0] and "checker error: RuntimeError" in verdict.checks[0].detail
    monkeypatch.undo()

    calls = iter(range(1000))
    real = BFCLBackend.execute

    def fails_on_the_fourth_call(self, call, available=None, **kwargs):
        if next(calls) == 3:  # the first call of turn 1
            raise RuntimeError("ground truth broke")
        return real(self, call, available, **kwargs)

    monkeypatch.setattr(BFCLBackend, "execute", fails_on_the_fourth_call)
    broken_ref = bfcl_checker.reference(dataclasses.replace(task, seed=-1))
    monkeypatch.undo()
    assert broken_ref.errors[1].startswith("RuntimeError") and not broken_ref.errors[0]
    verdict = bfcl_checker.check(task, EpisodeRecord(turn_states=[state, state]), broken_ref, irrelevance=False)
    score = official_score(verdict.turn_facts)
    assert score.tags[:2] == ("pass", "gt_error")
    assert score.scorable_turns == 4 and score.passed_turns == 1  # gt_error stays scorable and failed


def test_trajectory_scale_is_the_official_one_where_per_step_tags_differ():
    """The two cases of issue 15: out of steps after turn 0, and a passing run with a repeated call."""
    from seal_envs import official_tag_of_step
    from seal_envs.core.types import StepLabel
    from seal_trl.weighting.advantage_weights import trajectory_scale

    def per_step_scale(info):
        return trajectory_scale(official_tag_of_step(StepLabel.from_dict(d)) for d in info["step_labels"])

    task = _task("multi_turn_base_0")  # 4 user turns; turn 0 is 3 calls and an answer
    short = make_env(split="all", max_steps=4).unwrapped
    info = play(short, task, ground_truth_trajectory(task))
    assert info["official_turn_tags"] == ["pass"] + ["empty_turn_model_response"] * 3
    assert trajectory_scale(info["official_turn_tags"]) == 1.375  # (1.0 + 3 x 1.5) / 4
    assert per_step_scale(info) == pytest.approx(1.125)  # 3 ok calls, the answer relabelled premature_end

    repeated = ground_truth_trajectory(task)
    repeated[1].append(repeated[1][-1])  # grep twice: a read, so the run still passes
    info = play(make_env(split="all").unwrapped, task, repeated)
    assert info["verdict"]["passed"] and info["official_turn_tags"] == ["pass"] * 4
    assert trajectory_scale(info["official_turn_tags"]) == 1.0
    steps = len(info["step_labels"])
    assert per_step_scale(info) == pytest.approx((steps - 1 + 2.0) / steps)  # one redundant call: 2.0
