"""Resuming reads seal_state.json strictly: a missing, truncated, foreign or invalid file is an
error that names the file and the field, unless resuming without SEAL state is asked for."""

import json

import pytest

pytest.importorskip("trl")

from seal_envs.core.evolver import Evolver  # noqa: E402
from seal_envs.core.statefile import StateFileError  # noqa: E402
from seal_envs.core.surface import CANONICAL, SurfacePatch  # noqa: E402
from seal_trl.coevolution import CoEvolution  # noqa: E402
from seal_trl.trainer import SEAL_STATE_FILE, read_seal_state  # noqa: E402


def _state():
    surface = CANONICAL.apply(SurfacePatch("affordance", "transfer", 2))
    return {"format": 1, "coevolution": {"evolver": Evolver().state_dict(), "surface": surface.to_json()},
            "weigher": {}}


def test_a_missing_state_file_is_an_error_unless_asked(tmp_path):
    path = str(tmp_path / SEAL_STATE_FILE)
    with pytest.raises(StateFileError, match=f"{path} is missing.*resume_without_seal_state"):
        read_seal_state(path)
    with pytest.warns(UserWarning, match="start afresh"):
        assert read_seal_state(path, allow_missing=True) is None


@pytest.mark.parametrize("text, fragment", [
    (json.dumps(_state())[:40], "not valid JSON"),
    (json.dumps(_state() | {"format": 2}), "field 'format' is 2"),
    (json.dumps({k: v for k, v in _state().items() if k != "weigher"}), "field 'weigher'"),
    (json.dumps(_state() | {"coevolution": {"surface": "{}"}}), "field 'coevolution/evolver'"),
    ("[]", "expected a JSON object"),
])
def test_a_bad_state_file_names_itself_and_the_field(tmp_path, text, fragment):
    path = tmp_path / SEAL_STATE_FILE
    path.write_text(text)
    with pytest.raises(StateFileError, match=fragment) as err:
        read_seal_state(str(path))
    assert str(path) in str(err.value)


@pytest.mark.parametrize("mutate, fragment", [
    (lambda s: s["coevolution"]["evolver"]["config"].pop("window"), "field 'config' is invalid.*'window'"),
    (lambda s: s["coevolution"]["evolver"].update(updates="3"), "field 'updates'"),
    (lambda s: s["coevolution"].update(surface=s["coevolution"]["surface"].replace('"transfer", 2', '"transfer", 7')),
     "levels/0"),
])
def test_the_parts_validate_with_the_file_and_field_named(tmp_path, mutate, fragment):
    path = tmp_path / SEAL_STATE_FILE
    state = _state()
    mutate(state)
    path.write_text(json.dumps(state))
    loaded = read_seal_state(str(path))
    co = CoEvolution({})
    with pytest.raises(StateFileError, match=fragment) as err:
        co.load_state_dict(loaded["coevolution"], f"SEAL state file {path}")
    assert str(path) in str(err.value)
    good = _state()
    co.load_state_dict(good["coevolution"])
    assert co.surface.level("affordance", "transfer") == 2
