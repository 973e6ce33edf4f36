"""The learning interface: what the agent is shown, separate from what the tools do.

Three channels, each a level per scope (level 0 is the canonical text):

- ``affordance`` (scope: a tool name): 1 adds the official SEAL schema hints (``[required]``
  and ``Allowed values: ...``), 2 adds types and example values per parameter, 3 adds an
  example call to the tool description.
- ``constraint`` (scope: a tool name): 1 appends the tool's policy rules to its description,
  2 also lists them up front in the system prompt.
- ``recovery`` (scope: an event kind such as ``schema_violation``): 1 explains what was
  expected, 2 adds a concrete fix.

A surface may also carry a named, static *preset* (``PRESETS``) applied under the channels:
``observation_lite`` is the environment side of the paper's run, word for word: ``[required]``
and ``Allowed values: a, b`` appended to parameter descriptions and one system note. It is a
training-time surface like any other (evaluation envs hold the canonical one), and the evolver
can start from it: patches raise channels on top of the preset.

A surface is an immutable value: applying a patch returns a new surface with a higher version
and the patch appended to its history. Rendering reads only the canonical specs and the
structured :class:`~seal_envs.core.types.CallEvent`, so no surface can change semantics.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, replace
from typing import Any, Mapping

from .call_formats import CALL_FORMATS
from .types import CallEvent, ToolSpec, text_json

MAX_LEVEL = {"affordance": 3, "constraint": 2, "recovery": 2}
CHANNELS = tuple(MAX_LEVEL)

#: The official observation-lite system note (SEAL's BFCL env, ``observation_lite`` default).
OBSERVATION_LITE_NOTE = ("Observation note: parameters marked [required] must be provided exactly when calling a "
                         "tool; do not invent tools outside the current schema.")
PRESETS = ("canonical", "observation_lite")


class FrozenSurfaceError(RuntimeError):
    """Raised when something tries to patch an evaluation (frozen) surface."""


@dataclass(frozen=True)
class SurfacePatch:
    channel: str
    scope: str
    level: int
    reason: str = ""

    def __post_init__(self):
        if self.channel not in MAX_LEVEL:
            raise ValueError(f"channel must be one of {CHANNELS}, got {self.channel!r}")
        if not 0 <= self.level <= MAX_LEVEL[self.channel]:
            raise ValueError(f"{self.channel} level must be in 0..{MAX_LEVEL[self.channel]}, got {self.level}")

    def to_dict(self) -> dict:
        return vars(self).copy()


@dataclass(frozen=True)
class Surface:
    levels: tuple[tuple[str, str, int], ...] = ()  # sorted (channel, scope, level), level > 0 only
    version: int = 0
    history: tuple[SurfacePatch, ...] = ()
    frozen: bool = False
    preset: str = ""  # "" (canonical) or a name in PRESETS

    def __post_init__(self):
        if self.preset not in ("", *PRESETS[1:]):
            raise ValueError(f"preset must be one of {PRESETS}, got {self.preset!r}")

    # -- value semantics -----------------------------------------------------------------
    @property
    def shows_hints(self) -> bool:
        """Whether the agent sees anything the canonical surface does not (a raised channel or a preset)."""
        return bool(self.levels or self.preset)

    def level(self, channel: str, scope: str) -> int:
        for c, s, lv in self.levels:
            if c == channel and s == scope:
                return lv
        return 0

    def as_dict(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {c: {} for c in CHANNELS}
        for c, s, lv in self.levels:
            out[c][s] = lv
        return out

    def apply(self, patch: SurfacePatch) -> "Surface":
        if not isinstance(patch, SurfacePatch):  # None used to fail deep inside as "no attribute 'level'"
            raise TypeError(f"a patch is a seal_envs.core.surface.SurfacePatch, got {type(patch).__name__}")
        if self.frozen:
            raise FrozenSurfaceError("this surface is frozen (evaluation or canonical): patches are not allowed")
        kept = [(c, s, lv) for c, s, lv in self.levels if (c, s) != (patch.channel, patch.scope)]
        if patch.level > 0:
            kept.append((patch.channel, patch.scope, patch.level))
        return replace(self, levels=tuple(sorted(kept)), version=self.version + 1, history=self.history + (patch,))

    def apply_all(self, patches) -> "Surface":
        surface = self
        for p in patches:
            surface = surface.apply(p)
        return surface

    def freeze(self) -> "Surface":
        return replace(self, frozen=True)

    def diff(self, other: "Surface") -> list[tuple[str, str, int, int]]:
        """(channel, scope, level here, level there) for every scope that differs."""
        a, b = self.as_dict(), other.as_dict()
        return sorted((c, s, a[c].get(s, 0), b[c].get(s, 0))
                      for c in CHANNELS for s in set(a[c]) | set(b[c]) if a[c].get(s, 0) != b[c].get(s, 0))

    def to_json(self) -> str:
        return json.dumps({"format": SURFACE_FORMAT, "format_version": SURFACE_FORMAT_VERSION,
                           "version": self.version, "frozen": self.frozen, "preset": self.preset,
                           "levels": [list(x) for x in self.levels],
                           "history": [p.to_dict() for p in self.history]}, sort_keys=True)

    @staticmethod
    def from_json(text: str, source: str = "surface") -> "Surface":
        """Rebuild a saved surface; a level outside its channel's range, an unknown channel or
        preset, or a field of the wrong type is a ``StateFileError`` naming ``source`` and the
        field (a hand-edited level 7 used to load, and render as the maximum)."""
        from . import statefile

        d = statefile.check(statefile.parse_json(text, source), _surface_schema(), source,
                            SURFACE_FORMAT, SURFACE_FORMAT_VERSION)
        for i, (channel, scope, level) in enumerate(d["levels"]):
            if not 1 <= level <= MAX_LEVEL[channel]:
                raise statefile.StateFileError(f"{source}: field 'levels/{i}' sets {channel} {scope!r} to {level}; "
                                               f"levels run 1..{MAX_LEVEL[channel]}")
        try:
            return Surface(levels=tuple(sorted(tuple(x) for x in d["levels"])), version=d["version"],
                           history=tuple(SurfacePatch(**p) for p in d["history"]), frozen=d["frozen"],
                           preset=d.get("preset", ""))
        except (TypeError, ValueError) as e:
            raise statefile.StateFileError(f"{source}: field 'history' or 'preset' is invalid: {e}") from None

    # -- rendering -----------------------------------------------------------------------
    def tool_view(self, name: str) -> tuple[str, int, int]:
        """All that :meth:`render_tool` reads of this surface for tool ``name``: (preset,
        affordance level, constraint level). Surfaces with equal views render the tool alike, so
        a render can be reused across surface versions (the env keys its cache by it)."""
        return self.preset, self.level("affordance", name), self.level("constraint", name)

    def render_tool(self, spec: ToolSpec, policies: Mapping[str, str]) -> dict:
        preset, level, constraint = self.tool_view(spec.name)
        params = json.loads(json.dumps(dict(spec.parameters)))
        required = set(params.get("required", []))
        for name, prop in params.get("properties", {}).items():
            if preset == "observation_lite":
                prop["description"] = observation_lite_description(prop, name in required)
            prop["description"] = _param_description(name, prop, name in required, level)
        description = spec.description
        if level >= 3:
            description += " Example: " + json.dumps({"name": spec.name, "arguments": example_arguments(spec)})
        if constraint >= 1 and spec.policies:
            description += " Policy: " + " ".join(policies[r] for r in spec.policies)
        return spec.to_openai(description, params)

    def render_tools(self, specs: Mapping[str, ToolSpec], available, policies: Mapping[str, str]) -> list[dict]:
        return [self.render_tool(specs[n], policies) for n in sorted(available)]

    def render_system_notes(self, specs: Mapping[str, ToolSpec], available, policies: Mapping[str, str]) -> str:
        rules: list[str] = []
        disclosed = {s for c, s, lv in self.levels if c == "constraint" and lv >= 2}  # most surfaces: none
        for name in sorted(disclosed.intersection(available)):
            rules.extend(policies[r] for r in specs[name].policies if policies[r] not in rules)
        notes = [OBSERVATION_LITE_NOTE] if self.preset == "observation_lite" else []
        if rules:
            notes.append("Policies you must follow:\n" + "\n".join(f"- {r}" for r in rules))
        return "\n\n".join(notes)

    def render_event(self, event: CallEvent, specs: Mapping[str, ToolSpec], policies: Mapping[str, str],
                     available=(), call_example: str = CALL_FORMATS["hermes"].example) -> str:
        """``call_example``: how the format-error feedback says to write a call, in the format the
        system prompt asks for (:data:`~seal_envs.core.call_formats.CALL_FORMATS`)."""
        if event.ok:
            return event.result_json if event.result_json is not None else text_json(event.result)
        level = self.level("recovery", event.kind)
        text = f"Error ({event.kind}): {event.message}"
        if level >= 1:
            text += " " + (call_example if event.kind == "format_error" else _explain(event, specs, policies, available))
        if level >= 2:
            fix = _fix(event, specs, available)
            if fix:
                text += " Fix: " + fix
        return text


CANONICAL = Surface()
SURFACE_FORMAT, SURFACE_FORMAT_VERSION = "seal-surface", 1


def _surface_schema() -> dict:
    level = {"type": "array", "prefixItems": [{"enum": list(CHANNELS)}, {"type": "string"}, {"type": "integer"}],
             "minItems": 3, "maxItems": 3}
    patch = {"type": "object", "required": ["channel", "scope", "level"], "additionalProperties": False,
             "properties": {"channel": {"enum": list(CHANNELS)}, "scope": {"type": "string"},
                            "level": {"type": "integer"}, "reason": {"type": "string"}}}
    return {"type": "object", "required": ["version", "frozen", "levels", "history"],
            "properties": {"version": {"type": "integer", "minimum": 0}, "frozen": {"type": "boolean"},
                           "preset": {"type": "string"}, "levels": {"type": "array", "items": level},
                           "history": {"type": "array", "items": patch}}}


def surface_preset(name: str) -> Surface:
    """The version-0 surface of a named preset (``canonical`` or ``observation_lite``)."""
    if name not in PRESETS:
        raise ValueError(f"surface preset must be one of {PRESETS}, got {name!r}")
    return CANONICAL if name == "canonical" else Surface(preset=name)


# -- rendering helpers (pure) ------------------------------------------------------------
def observation_lite_description(prop: Mapping[str, Any], required: bool) -> str:
    """A parameter description as the official observation-lite shows it: ``[required]`` for a
    required parameter and ``Allowed values: a, b`` for an enum, appended, each only once."""
    text = str(prop.get("description", "") or "")
    additions = []
    if required and "[required]" not in text:
        additions.append("[required]")
    if prop.get("enum") and "Allowed values:" not in text:
        additions.append("Allowed values: " + ", ".join(str(v) for v in prop["enum"]))
    return f"{text} {' '.join(additions)}".strip() if additions else text


def _param_description(name: str, prop: dict, required: bool, level: int) -> str:
    text = prop.get("description", "")
    if level >= 1:  # each hint once: a preset may have added it already
        if required and "[required]" not in text:
            text = "[required] " + text
        if "enum" in prop and "Allowed values:" not in text:
            text += " Allowed values: " + ", ".join(map(str, prop["enum"])) + "."
    if level >= 2:
        text += f" Type: {prop.get('type', 'any')}. e.g. {json.dumps(example_value(name, prop))}."
    return text.strip()


def example_value(name: str, prop: Mapping[str, Any]) -> Any:
    if "examples" in prop:
        return prop["examples"][0]
    if "enum" in prop:
        return prop["enum"][0]
    return {"integer": 1, "number": 10.0, "boolean": True, "array": [], "object": {}}.get(prop.get("type"), f"<{name}>")


def example_arguments(spec: ToolSpec) -> dict:
    props = spec.parameters.get("properties", {})
    return {n: example_value(n, props[n]) for n in spec.parameters.get("required", [])}


def _explain(event: CallEvent, specs: Mapping[str, ToolSpec], policies: Mapping[str, str], available) -> str:
    spec = specs.get(event.tool or "")
    if event.kind in ("unknown_tool", "unavailable_tool"):
        return "Available tools: " + ", ".join(sorted(available)) + "."
    if event.kind == "schema_violation" and spec is not None:
        params = spec.parameters
        if event.param in params.get("properties", {}):
            return f"Parameter '{event.param}' expects {json.dumps(params['properties'][event.param])}."
        return f"Required parameters: {params.get('required', [])}."
    if event.kind == "policy_violation" and event.rule:
        return "Rule: " + policies.get(event.rule, event.rule)
    return "Check the arguments against the tool description and the state you have seen."


def _fix(event: CallEvent, specs: Mapping[str, ToolSpec], available=()) -> str:
    if event.kind == "unknown_tool":  # suggest from what is available now, never from the event's
        close = difflib.get_close_matches(event.tool or "", sorted(available), n=1)  # hint: no hidden tool
        return f"did you mean '{close[0]}'?" if close else ""
    spec = specs.get(event.tool or "")
    if spec is None:
        return ""
    if event.kind == "schema_violation":
        return "call it like " + json.dumps({"name": spec.name, "arguments": example_arguments(spec)})
    if event.kind == "policy_violation":
        return "do what the rule requires first, or tell the user it cannot be done."
    if event.kind == "tool_error":
        return f"look the value of '{event.param}' up with another tool before retrying." if event.param else ""
    return ""
