"""Read-only JSON values: shared by the env and every reader, equal to the plain data."""

import copy
import json
import pickle

import pytest

from seal_envs.core.frozen import FrozenDict, FrozenList, freeze, thaw

SCHEMA = {"type": "function", "function": {"name": "cd", "parameters": {
    "type": "object", "properties": {"folder": {"type": "string", "enum": ["a", "b"]}}, "required": ["folder"]}}}


def test_a_frozen_value_equals_its_plain_data_and_spells_the_same_json():
    frozen = freeze([SCHEMA, (1, 2)])
    assert frozen == [SCHEMA, [1, 2]] == thaw(frozen)
    assert json.dumps(frozen) == json.dumps([SCHEMA, [1, 2]])
    assert type(frozen) is FrozenList and type(frozen[0]["function"]["parameters"]["required"]) is FrozenList
    assert freeze(frozen) is frozen  # already frozen parts are kept


@pytest.mark.parametrize("mutate", [
    lambda v: v.append(1), lambda v: v.extend([1]), lambda v: v.insert(0, 1), lambda v: v.pop(),
    lambda v: v.remove(v[0]), lambda v: v.clear(), lambda v: v.sort(), lambda v: v.reverse(),
    lambda v: v.__setitem__(0, 1), lambda v: v.__delitem__(0), lambda v: v.__iadd__([1]), lambda v: v.__imul__(2),
    lambda v: v[0]["function"].update(name="x"), lambda v: v[0].pop("type"),
    lambda v: v[0]["function"]["parameters"]["required"].append("x"),
])
def test_no_mutator_changes_a_frozen_value(mutate):
    frozen = freeze([SCHEMA, SCHEMA])
    with pytest.raises(TypeError, match="read-only"):
        mutate(frozen)
    assert frozen == [SCHEMA, SCHEMA]


def test_copies_share_a_frozen_value_and_thaw_gives_a_plain_one():
    frozen = freeze([SCHEMA])
    assert copy.copy(frozen) is frozen and copy.deepcopy({"t": frozen})["t"] is frozen
    restored = pickle.loads(pickle.dumps(frozen))
    assert restored == frozen and type(restored) is FrozenList and type(restored[0]) is FrozenDict
    plain = thaw(frozen)
    plain[0]["function"]["parameters"]["required"].append("x")  # the thawed copy is the caller's
    assert type(plain) is list and type(plain[0]) is dict and frozen == [SCHEMA]
