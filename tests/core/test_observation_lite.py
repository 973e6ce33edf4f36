"""The observation-lite surface preset: the official texts word for word, training envs only,
serialisable, and a starting point the evolver patches on top of."""

import json

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401  (registers the ids)
from seal_envs.core.surface import (
    CANONICAL, OBSERVATION_LITE_NOTE, FrozenSurfaceError, Surface, SurfacePatch, surface_preset,
)
from seal_envs.core.types import ToolSpec

SPEC = ToolSpec("pay", "Pay a bill.", {
    "type": "object",
    "properties": {
        "bill_id": {"type": "string", "description": "The bill."},
        "method": {"type": "string", "description": "How to pay.", "enum": ["card", "cash"]},
        "note": {"type": "string", "description": "Optional note."},
        "speed": {"type": "string", "enum": ["slow", 2]},
        "account": {"type": "string", "description": "Already [required] here."},
    },
    "required": ["bill_id", "method", "account"],
})


def descriptions(surface):
    return {k: v["description"] for k, v in surface.render_tool(SPEC, {})["function"]["parameters"]["properties"].items()}


def test_official_texts_word_for_word():
    lite = surface_preset("observation_lite")
    assert descriptions(lite) == {
        "bill_id": "The bill. [required]",
        "method": "How to pay. [required] Allowed values: card, cash",
        "note": "Optional note.",  # optional parameters are kept, without hints
        "speed": "Allowed values: slow, 2",
        "account": "Already [required] here.",  # a hint is never added twice
    }
    assert OBSERVATION_LITE_NOTE == ("Observation note: parameters marked [required] must be provided exactly "
                                     "when calling a tool; do not invent tools outside the current schema.")
    assert lite.render_system_notes({"pay": SPEC}, ["pay"], {}) == OBSERVATION_LITE_NOTE
    assert descriptions(CANONICAL)["bill_id"] == "The bill."
    assert CANONICAL.render_system_notes({"pay": SPEC}, ["pay"], {}) == ""


def test_evolver_patches_on_top_without_repeating_hints():
    lite = surface_preset("observation_lite").apply(SurfacePatch("affordance", "pay", 2))
    assert lite.preset == "observation_lite" and lite.version == 1
    d = descriptions(lite)
    assert d["method"].startswith("How to pay. [required] Allowed values: card, cash Type: string.")
    assert d["method"].count("[required]") == 1 and d["method"].count("Allowed values") == 1
    restored = Surface.from_json(lite.to_json())
    assert restored == lite
    assert Surface.from_json(json.dumps({**json.loads(CANONICAL.to_json()), "preset": ""})) == CANONICAL
    with pytest.raises(ValueError, match="preset must be one of"):
        surface_preset("observation_full")


def test_training_env_shows_it_and_evaluation_envs_refuse_it():
    env = gym.make("seal/ToolUse-v0", surface="observation_lite").unwrapped
    _, info = env.reset(seed=0)
    assert info["new_messages"][0]["content"].endswith("\n\n" + OBSERVATION_LITE_NOTE)
    required = [p for t in info["tools"] for name, p in t["function"]["parameters"]["properties"].items()
                if name in t["function"]["parameters"].get("required", [])]
    assert required and all(p["description"].endswith("[required]") or "Allowed values" in p["description"]
                            for p in required)
    for kwargs in ({"split": "test"}, {"evaluation": True}):
        with pytest.raises(FrozenSurfaceError):
            gym.make("seal/ToolUse-v0", surface="observation_lite", **kwargs)
    canonical = gym.make("seal/ToolUse-v0", split="test").unwrapped
    _, info = canonical.reset(seed=0)
    assert OBSERVATION_LITE_NOTE not in info["new_messages"][0]["content"]


def test_bfcl_tool_description_word_for_word():
    pytest.importorskip("bfcl_eval")
    env = gym.make("seal/BFCL-MultiTurn-v0", surface="observation_lite").unwrapped
    _, info = env.reset(options={"task_id": "multi_turn_base_0"})
    cd = next(t for t in info["tools"] if t["function"]["name"] == "cd")
    # BFCL's own text ends with a space; the official code appends " [required]" to it as is
    assert cd["function"]["parameters"]["properties"]["folder"]["description"] == (
        "The folder of the directory to change to. You can only change one folder level at a time.  [required]")
