"""Task ids: every id names one task and round-trips exactly (issue 20)."""

import pytest

import seal_envs
from seal_envs.tasks import SPLIT_SIZES, default_task_set, task_from_id


@pytest.mark.parametrize("split", list(SPLIT_SIZES))
def test_every_id_of_a_split_round_trips(split):
    ts = default_task_set(split)
    for i in range(0, len(ts), 37):
        task = ts[i]
        assert task_from_id(task.task_id).task_id == task.task_id
        assert task_from_id(task.task_id).to_dict() == task.to_dict()


@pytest.mark.parametrize("spelling, canonical", [
    ("bank/train/3/2", "bank/train/d3/2"),          # the short form once shown as bank/train/d3/2
    ("bank/train/d03/02", "bank/train/d3/2"),
    (" bank/train/d3/2", "bank/train/d3/2"),
    ("bank/train/d3/+2", "bank/train/d3/2"),
    ("bank/train/d3/2 ", "bank/train/d3/2"),
])
def test_other_spellings_are_refused_with_the_exact_id(spelling, canonical):
    with pytest.raises(ValueError, match=f"did you mean {canonical}\\?"):
        task_from_id(spelling)
    assert task_from_id(canonical).task_id == canonical


@pytest.mark.parametrize("bad, fragment", [
    ("x", "not a task id"), ("bank/train/d3", "not a task id"), ("bank/train/dx/2", "not a task id"),
    ("nope/train/d1/1", "unknown domain 'nope'"), ("bank/dev/d1/1", "unknown split 'dev'"),
    ("bank/train/d9/1", "not one of d1, d2, d3, d4"), ("bank/train/d0/1", "not one of"),
])
def test_malformed_ids_say_what_is_wrong(bad, fragment):
    with pytest.raises(ValueError, match=fragment):
        seal_envs.task_from_id(bad)


def test_the_native_task_set_is_a_task_source():
    """The contract the env, the trainer and the CLI call, with no probing (issue 17)."""
    from seal_envs.core.source import Slot, TaskSource, ToolBackend

    ts = default_task_set("ood")
    assert isinstance(ts, TaskSource) and ts.generated is True
    assert ts.held_out == ("smarthome",) and "smarthome" not in ts.domains
    assert isinstance(ts.slot(0), Slot) and ts.slot(0).seed == ts[0].seed
    backend = ts.backend_for(ts[0])(ts[0].initial_state)
    assert isinstance(backend, ToolBackend)
    assert "parse_action" not in backend.tool_specs()  # part of the contract, never a tool
