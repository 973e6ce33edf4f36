import json

import pytest

from seal_envs.core.surface import CANONICAL, FrozenSurfaceError, Surface, SurfacePatch
from seal_envs.core.types import CallEvent
from seal_envs.domains.bank import BankBackend

SPECS = BankBackend.tool_specs()
POLICIES = BankBackend.POLICIES


def desc(surface, tool, param):
    return surface.render_tool(SPECS[tool], POLICIES)["function"]["parameters"]["properties"][param]["description"]


def test_canonical_renders_the_spec_unchanged():
    assert CANONICAL.render_tool(SPECS["set_alert"], POLICIES) == SPECS["set_alert"].to_openai()


def test_affordance_levels_add_official_hints_types_and_example():
    s1 = CANONICAL.apply(SurfacePatch("affordance", "set_alert", 1))
    assert desc(s1, "set_alert", "channel").startswith("[required]")
    assert "Allowed values: email, sms, push." in desc(s1, "set_alert", "channel")
    s2 = s1.apply(SurfacePatch("affordance", "set_alert", 2))
    assert "Type: integer" in desc(s2, "set_alert", "threshold")
    s3 = s2.apply(SurfacePatch("affordance", "set_alert", 3))
    assert "Example: " in s3.render_tool(SPECS["set_alert"], POLICIES)["function"]["description"]
    assert desc(s3, "transfer", "amount") == desc(CANONICAL, "transfer", "amount")  # other tools untouched


def test_constraint_levels_disclose_rules():
    s = CANONICAL.apply(SurfacePatch("constraint", "transfer", 1))
    assert POLICIES["daily_limit"] in s.render_tool(SPECS["transfer"], POLICIES)["function"]["description"]
    assert s.render_system_notes(SPECS, SPECS, POLICIES) == ""
    s = s.apply(SurfacePatch("constraint", "transfer", 2))
    assert POLICIES["daily_limit"] in s.render_system_notes(SPECS, SPECS, POLICIES)


def test_recovery_levels_explain_and_fix():
    ev = CallEvent("schema_violation", "set_alert", "channel", "parameter 'channel' must be one of [...]")
    base = CANONICAL.render_event(ev, SPECS, POLICIES)
    s1 = CANONICAL.apply(SurfacePatch("recovery", "schema_violation", 1))
    s2 = s1.apply(SurfacePatch("recovery", "schema_violation", 2))
    assert base.startswith("Error (schema_violation)") and "expects" not in base
    assert "expects" in s1.render_event(ev, SPECS, POLICIES) and "Fix:" not in s1.render_event(ev, SPECS, POLICIES)
    assert "Fix: call it like" in s2.render_event(ev, SPECS, POLICIES)


def test_value_semantics_history_diff_json():
    s = CANONICAL.apply(SurfacePatch("affordance", "transfer", 2, "why")).apply(SurfacePatch("recovery", "tool_error", 1))
    assert s.version == 2 and len(s.history) == 2 and CANONICAL.version == 0
    assert CANONICAL.diff(s) == [("affordance", "transfer", 0, 2), ("recovery", "tool_error", 0, 1)]
    assert Surface.from_json(s.to_json()) == s
    assert s.apply(SurfacePatch("affordance", "transfer", 0)).level("affordance", "transfer") == 0


def test_frozen_surface_refuses_patches():
    with pytest.raises(FrozenSurfaceError, match="frozen"):
        CANONICAL.freeze().apply(SurfacePatch("recovery", "tool_error", 1))


def test_patch_validation():
    with pytest.raises(ValueError, match="channel"):
        SurfacePatch("colour", "x", 1)
    with pytest.raises(ValueError, match="level"):
        SurfacePatch("recovery", "x", 3)


def test_saved_surfaces_are_versioned_and_validated():
    import json

    import pytest

    from seal_envs.core.statefile import StateFileError
    from seal_envs.core.surface import CANONICAL, Surface, SurfacePatch

    s = CANONICAL.apply(SurfacePatch("recovery", "schema_violation", 2))
    d = json.loads(s.to_json())
    assert (d["format"], d["format_version"]) == ("seal-surface", 1) and Surface.from_json(s.to_json()) == s
    legacy = {k: v for k, v in d.items() if not k.startswith("format")}
    assert Surface.from_json(json.dumps(legacy)) == s
    for change, fragment in [({"levels": [["recovery", "schema_violation", 3]]}, "levels/0.*1..2"),
                             ({"levels": [["recovery", "schema_violation", 0]]}, "levels/0"),
                             ({"levels": [["colour", "x", 1]]}, "field 'levels/0/0'"),
                             ({"version": -1}, "field 'version'"), ({"frozen": "no"}, "field 'frozen'"),
                             ({"history": [{"channel": "affordance", "scope": "x", "level": 9}]}, "history"),
                             ({"preset": "nope"}, "preset"), ({"format_version": 3}, "format_version")]:
        with pytest.raises(StateFileError, match=fragment) as err:
            Surface.from_json(json.dumps(d | change), "surface.json")
        assert "surface.json" in str(err.value)
    with pytest.raises(StateFileError, match="not valid JSON"):
        Surface.from_json(s.to_json()[:20], "surface.json")
