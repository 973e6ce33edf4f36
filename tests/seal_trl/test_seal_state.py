"""Resuming reads seal_state.json strictly: a missing, truncated, foreign or invalid file is an
error that names the file and the field, unless resuming without SEAL state is asked for."""

import json

import pytest

pytest.importorskip("trl")

from seal_envs.core.evolver import Evolver  # noqa: E402
from seal_envs.core.statefile import StateFileError  # noqa: E402
from seal_envs.core.surface import CANONICAL, SurfacePatch  # noqa: E402
from seal_envs import CoEvolution  # noqa: E402
from seal_trl.weighting.token_weigher import TokenWeigher  # noqa: E402
from seal_envs.run_folder import SEAL_STATE_FILE  # noqa: E402
from seal_trl.training.trainer import read_seal_state  # noqa: E402
from seal_trl.weighting.advantage_weights import EMATagWeights, OfficialDynamicTagWeights  # noqa: E402


def _weigher(kind):
    return TokenWeigher("trajectory", **{kind: EMATagWeights(alpha=0.5) if kind == "ema" else OfficialDynamicTagWeights()})


def _weigher_state(kind="dynamic"):
    """A weigher that has seen two batches (so every table holds entries), as saved."""
    weigher = _weigher(kind)
    for epoch in (0, 1):
        weigher.observe({"empty_turn_model_response": 3, "pass": 1}, {"empty_turn_model_response": 1.0}, epoch=epoch)
    return json.loads(json.dumps(weigher.state_dict()))


def _state(kind="dynamic"):
    surface = CANONICAL.apply(SurfacePatch("affordance", "transfer", 2))
    return {"format": 1, "coevolution": {"evolver": Evolver().state_dict(), "surface": surface.to_json()},
            "weigher": _weigher_state(kind)}


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


def _wrong(value):
    """A value of another JSON type than ``value``."""
    return "x" if value is None or isinstance(value, (int, float, list)) and not isinstance(value, bool) else 3


def _weigher_cases():
    """(kind, path inside the weigher state, corruption): every field, and one entry of every table."""
    cases = [("dynamic", (key,), how) for key in ("format", "format_version", "ema") for how in ("wrong", "drop")]
    cases.append(("ema", ("dynamic",), "wrong"))
    cases.append(("ema", ("dynamic",), "drop"))
    for kind in ("ema", "dynamic"):
        for key, value in _weigher_state(kind)[kind].items():
            cases += [(kind, (kind, key), "wrong"), (kind, (kind, key), "drop")]
            if isinstance(value, dict) and value:
                cases.append((kind, (kind, key, sorted(value)[0]), "wrong"))
    return cases


@pytest.mark.parametrize("kind, path, how", _weigher_cases(), ids=lambda v: "/".join(v) if isinstance(v, tuple) else v)
def test_a_corrupt_weigher_field_names_the_file_and_the_field(tmp_path, kind, path, how):
    state = _state(kind)
    parent = state["weigher"]
    for key in path[:-1]:
        parent = parent[key]
    if how == "drop":
        del parent[path[-1]]
    else:
        parent[path[-1]] = _wrong(parent[path[-1]])
    file = tmp_path / SEAL_STATE_FILE
    file.write_text(json.dumps(state))
    legacy_version = how == "drop" and path[-1] in ("format", "format_version")  # absent: read as version 1
    if legacy_version:
        assert read_seal_state(str(file))["weigher"] == state["weigher"]
        return
    # a missing field is reported on its parent, with the missing name in the message
    field = "/".join(("weigher",) + (path[:-1] if how == "drop" else path))
    with pytest.raises(StateFileError) as err:
        read_seal_state(str(file))
    message = str(err.value)
    assert str(file) in message and f"field '{field}'" in message, message
    if how == "drop":
        assert f"'{path[-1]}' is a required property" in message, message
    weigher = _weigher(kind)
    before = weigher.state_dict()
    with pytest.raises(StateFileError) as err:  # the weigher refuses it too, before changing anything
        weigher.load_state_dict(state["weigher"], f"SEAL state file {file}", "weigher/")
    assert str(err.value) == message
    assert weigher.state_dict() == before


def test_a_weigher_part_that_is_not_an_object_names_the_field(tmp_path):
    file = tmp_path / SEAL_STATE_FILE
    file.write_text(json.dumps(_state() | {"weigher": {"ema": None, "dynamic": []}}))
    with pytest.raises(StateFileError, match="field 'weigher/dynamic' is invalid") as err:
        read_seal_state(str(file))
    assert str(file) in str(err.value)


@pytest.mark.parametrize("kind", ["ema", "dynamic"])
def test_a_valid_weigher_state_round_trips_and_a_legacy_one_still_loads(tmp_path, kind):
    saved = _weigher_state(kind)
    file = tmp_path / SEAL_STATE_FILE
    legacy = {k: v for k, v in saved.items() if k not in ("format", "format_version")}
    for weigher_state in (saved, legacy):
        file.write_text(json.dumps(_state(kind) | {"weigher": weigher_state}))
        loaded = read_seal_state(str(file))
        restored = _weigher(kind)
        restored.load_state_dict(loaded["weigher"], str(file), "weigher/")
        assert json.loads(json.dumps(restored.state_dict())) == saved
