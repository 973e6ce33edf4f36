"""Fresh tasks: generated RL tasks outside every split and outside the warm start's data."""

import pytest

from seal_envs.tasks import FRESH_SEED, SEED_OFFSET, default_task_set, fresh_tasks, held_out_requests, task_from_id


def test_fresh_tasks_cycle_domains_and_difficulties_from_their_own_seeds():
    tasks = fresh_tasks(12, ("bank", "shop"), (2, 3))
    seeds = [t.seed for t in tasks]
    assert seeds == sorted(seeds) and seeds[0] >= FRESH_SEED and len(set(seeds)) == len(seeds)
    # domain k % 2, difficulty (k // 2) % 2, exactly as a split lays out its indices
    for t in tasks:
        k = t.seed - FRESH_SEED
        assert t.domain == ("bank", "shop")[k % 2] and t.difficulty == (2, 3)[(k // 2) % 2]
    assert all(task_from_id(t.task_id).to_dict() == t.to_dict() for t in tasks)  # ids round-trip


def test_fresh_seeds_stay_clear_of_every_split():
    top = max(SEED_OFFSET[s] + len(default_task_set(s)) for s in SEED_OFFSET)
    assert FRESH_SEED >= top


def test_no_fresh_task_repeats_a_held_out_request():
    held = held_out_requests(("bank",))
    assert len(held) > 300  # the test and ood requests of bank
    tasks = fresh_tasks(200, ("bank",), (2,))
    assert tasks and all(t.turns[0].message not in held for t in tasks)
    # some generated requests do repeat held-out ones; those are the ones left out
    kept = {t.seed for t in tasks}
    dropped = [s for s in range(FRESH_SEED, FRESH_SEED + 200) if s not in kept]
    assert len(tasks) + len(dropped) == 200
    for s in dropped:
        assert task_from_id(f"bank/train/d2/{s}").turns[0].message in held


def test_fresh_tasks_are_deterministic_and_reject_bad_arguments():
    assert [t.to_dict() for t in fresh_tasks(5, ("bank",))] == [t.to_dict() for t in fresh_tasks(5, ("bank",))]
    with pytest.raises(ValueError, match="difficulties"):
        fresh_tasks(3, ("bank",), (5,))
    with pytest.raises(ValueError, match="count"):
        fresh_tasks(-1, ("bank",))
