"""``ToolUseEnv``: a multi-turn tool-use task as a Gymnasium environment.

## Description
The agent serves a scripted user over one or more user turns by calling the tools of an
in-memory service. Every call is parsed, validated against the tool's JSON Schema and executed;
at the end an executable verifier compares the final state of each user turn with the state the
reference plan produces, and a diagnoser labels every assistant step.

## Action Space
``UnicodeText``: the assistant's text. Tool calls are ``<tool_call>{"name": ..., "arguments":
{...}}</tool_call>`` blocks, a JSON object or a JSON list. Text without a call ends the agent's
turn: an answer, or a question to the user. ``step`` also takes a call dict ``{"name": ...,
"arguments": {...}}``, a list of them, or an OpenAI-style assistant message dict; any other dict
or type is a ``format_error`` turn that names these shapes (:mod:`seal_envs.core.calls`).

## Observation Space
``UnicodeText``: the new messages since the last action, rendered (``[role] content`` lines).
The first observation holds the system prompt, the tools and the first user message.

## Rewards
At the episode end, 1.0 if every check of the verifier passed, else 0.0
(``reward_mode="progress"``: the fraction of user turns passed). 0.0 on every other step.

## Episode End
Terminated after the agent ends the last user turn. Truncated after ``max_steps`` actions; the
verifier and the diagnoser still run, so the reward is never missing.

## Information
Every step says what changed: ``new_messages`` (the messages this step added: the action, tool
results, the user's reply; at reset the system prompt and the first user message),
``user_turn``, ``tool_calls``, ``tool_results``, ``events``, ``step_label`` (``{}`` until the
first action: a dict at every step, so Gymnasium's vector envs can merge the infos of copies
that are out of phase), ``surface_version``, ``task_id``, ``domain``, ``difficulty``; and
``tools`` only when the tool list shown changed (at reset, when a user turn brings new tools,
under a new surface). The final info carries the whole episode: ``verdict``, ``step_labels``
(one per action taken), ``official_turn_tags`` (the official SEAL tag of every user turn, see
:mod:`seal_envs.core.official`), ``official_progress``, ``surface_canonical`` (True when every
observation of the episode came from the canonical surface: the curriculum's learnability compares
the two), ``messages`` (the whole conversation) and ``tools``. Every info is fresh plain data,
the caller's to keep or change, but for the tools themselves: ``info["tools"]`` is a fresh list
of the shared, read-only tool schemas (``FrozenDict``: a ``dict`` whose mutators raise;
``thaw`` gives a copy to edit), since a schema is only ever read and a deep copy of each, in the
infos that carry them, was 5-15% of a whole BFCL episode's instructions. At any step ``env.unwrapped.messages``
and ``env.unwrapped.tools`` are the conversation and the tools so far as shared, read-only
values (:mod:`seal_envs.core.frozen`): reading them copies nothing, and no reader can change
what another sees.

## Arguments
``domains`` (default: the training mixture), ``split`` (train, test, ood), ``evaluation`` (freeze
the canonical surface; implied by test and ood), ``max_steps``, ``reward_mode``, ``surface`` (a
``Surface`` or a preset name such as ``"observation_lite"``),
``diagnoser``, ``call_format`` (the tool-call format the system prompt and the format-error
feedback ask for: ``"hermes"``, the default, ``"qwen3_coder"``, ``"llama3"``, ``"mistral"``,
``"function_tag"`` or ``"chat_template"``; every format is parsed whichever is asked for, see
:mod:`seal_envs.core.call_formats`), ``prompt_format`` (``"seal"``, the default, or
``"qwen_fc"``: BFCL's Qwen function-calling prompt, with no system line of the env's own, so a
Qwen chat template given ``info["tools"]``, or :func:`seal_envs.bfcl.prompt.qwen_fc_prompt`,
renders exactly BFCL's prompt), ``render_mode`` ("ansi" or "human").

## Version History
- v0: initial release.
"""

from __future__ import annotations

import json
import numbers
from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np

from seal_envs.core.calls import MAX_ACTION_CHARS, FormatError, action_text, plain_action
from seal_envs.core.datacopy import deep_copy
from seal_envs.core.frozen import FrozenDict, FrozenList, freeze
from seal_envs.core.diagnosis import Diagnoser, diagnose, immediate_label
from seal_envs.core.official import official_score
from seal_envs.core.call_formats import call_format as call_format_named
from seal_envs.core.surface import CANONICAL, FrozenSurfaceError, Surface, SurfacePatch, surface_preset
from seal_envs.core.types import CallEvent, StepRecord, Task, canonical_json, text_json
from seal_envs.core.verifier import EpisodeRecord
from seal_envs.episode import Episode, message, plain_messages
from seal_envs.spaces import UnicodeText, sanitize
from seal_envs.tasks import default_task_set

#: ``seal``: the env's system line asks for the call format; ``qwen_fc``: BFCL's Qwen
#: function-calling prompt (no line of the env's own; see :func:`seal_envs.bfcl.prompt.qwen_fc_prompt`).
PROMPT_FORMATS = ("seal", "qwen_fc")
#: ``binary``: 1 when every check passed; ``progress``: the fraction of user turns passed.
REWARD_MODES = ("binary", "progress")

#: Every info: what this step changed and where the episode stands.
INFO_KEYS = ("new_messages", "user_turn", "tool_calls", "tool_results", "events", "step_label",
             "surface_version", "task_id", "domain", "difficulty")
#: Only when the tool list shown changed (at reset, when a user turn brings tools, after a new surface).
CHANGED_INFO_KEYS = ("tools",)
#: The final info: the whole episode.
END_INFO_KEYS = ("verdict", "step_labels", "official_turn_tags", "official_progress", "surface_canonical", "messages",
                 "tools")

SYSTEM_PROMPT = (
    "You are a careful {domain} assistant. Use the tools to do what the user asks. "
    "{call_instruction}"
    "When the request is done, or you need something from the user, reply in plain text."
)


def render_messages(messages: Sequence[Mapping[str, Any]]) -> str:
    lines = []
    for m in messages:
        role = m["role"] if m["role"] != "tool" else f"tool:{m.get('name', '')}"
        lines.append(f"[{role}] {m.get('content') or ''}")
    return "\n".join(lines)


def _mentions(arguments: Any, value: Any) -> bool:
    """Whether ``value`` occurs anywhere in ``arguments``; iterative, so no nesting can overflow."""
    target, text = canonical_json(value), str(value)
    stack = [arguments]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif canonical_json(item) == target or (isinstance(item, str) and item == text):
            return True
    return False


class _RenderedTool:
    """One tool as a surface view shows it: its JSON line and the shared read-only value.
    Immutable; the spec and policies it was rendered from are kept alive with it, so the ids in
    its cache key cannot be reused."""

    __slots__ = ("line", "data", "keep")

    def __init__(self, tool: dict, keep: tuple):
        plain = json.loads(json.dumps(tool))
        self.line = text_json(plain)
        self.data = freeze(plain)
        self.keep = keep


_TOOL_RENDERS: dict[tuple, _RenderedTool] = {}


def _rendered_tool(surface: Surface, spec: Any, policies: Mapping[str, str]) -> _RenderedTool:
    """Render a tool once per (surface view of it, spec, policies) in a process: a BFCL entry's
    tool set is new to the process more often than its tools are (issue 27: rendering whole sets
    afresh was 6% of a BFCL episode), and a surface patch changes the view of one tool only."""
    key = (surface.tool_view(spec.name), id(spec), id(policies))
    entry = _TOOL_RENDERS.get(key)
    if entry is None or entry.keep[0] is not spec or entry.keep[1] is not policies:
        if len(_TOOL_RENDERS) >= 16384:
            _TOOL_RENDERS.clear()
        entry = _TOOL_RENDERS[key] = _RenderedTool(surface.render_tool(spec, policies), (spec, policies))
    return entry


class _RenderedTools:
    """The tools one surface shows for one set of tool specs: the JSON lines of the first
    observation and the read-only list that ``env.tools`` is. Immutable, so envs and episodes
    share it."""

    __slots__ = ("lines", "data", "keep")

    def __init__(self, tools: list[_RenderedTool], keep: tuple):
        self.lines = "\n".join(t.line for t in tools)
        self.data = FrozenList(t.data for t in tools)  # frozen JSON values, shared read-only
        self.keep = keep  # the specs and policies the key names by id, kept alive with it

    def listed(self) -> list:
        """What an ``info["tools"]`` holds: a fresh list, the caller's, of the shared read-only
        tools. A deep copy of every schema (BFCL: 400-500 objects a list) in the two or three
        infos of an episode that carry the tools was 5-15% of a whole BFCL episode (issue 27),
        and a schema is only ever read (by a chat template, a prompt, an API body)."""
        return list(self.data)


_RENDERED: dict[tuple, _RenderedTools] = {}


def _rendered_tools(surface: Surface, specs: Mapping[str, Any], available, policies: Mapping[str, str]) -> _RenderedTools:
    """Assemble once per (surface, tool specs, available tools, policies) in a process.

    Before issue 16 the key held ``id()`` of a dict made afresh at every reset, so every reset
    rendered again, and every step paid a JSON round trip. Specs and policies are named by
    identity (they live with their backend class or BFCL's class cache) and kept alive by the
    entry, so an id in a key cannot be reused while the entry exists."""
    names = tuple(sorted(available))
    chosen = tuple(specs[n] for n in names)
    key = (surface, names, tuple(map(id, chosen)), id(policies))
    entry = _RENDERED.get(key)
    if entry is None or entry.keep[1] is not policies or any(a is not b for a, b in zip(entry.keep[0], chosen)):
        if len(_RENDERED) >= 4096:
            _RENDERED.clear()
        entry = _RenderedTools([_rendered_tool(surface, spec, policies) for spec in chosen], (chosen, policies))
        _RENDERED[key] = entry
    return entry


#: What ``reset(options=...)`` reads, and the types each option takes (``domain`` and
#: ``difficulty`` may be None: any).
RESET_OPTIONS: dict[str, tuple[type, ...]] = {
    "task_id": (str,), "task": (Task,), "index": (numbers.Integral,), "split": (str,),
    "domain": (str, type(None)), "difficulty": (numbers.Integral, type(None))}


def check_reset_options(options: Any) -> Mapping[str, Any]:
    """``options`` if ``reset`` can read it, else one ``ValueError`` that says what was wrong: a
    task id given as ``task`` or a string as the options used to fail as an ``AttributeError``
    deep inside, and an unknown key was ignored."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"reset options must be a dict with keys among {sorted(RESET_OPTIONS)}, "
                         f"got {type(options).__name__}")
    unknown = sorted(map(str, set(options) - set(RESET_OPTIONS)))
    if unknown:
        raise ValueError(f"unknown reset option(s) {unknown[:8]}; the options are {sorted(RESET_OPTIONS)}")
    for key, value in options.items():
        kinds = RESET_OPTIONS[key]
        if not isinstance(value, kinds) or isinstance(value, bool):
            hint = " (a task id goes in 'task_id')" if key == "task" and isinstance(value, str) else ""
            names = " or ".join("None" if k is type(None) else "an integer" if k is numbers.Integral else k.__name__
                                for k in kinds)
            raise ValueError(f"reset option {key!r} must be {names}, got {type(value).__name__}{hint}")
    return options


def _transcript_text(action: Any) -> str:
    """What the transcript keeps of an action that was refused before it parsed: bounded, so a
    5 MB action does not ride along in every later ``info["messages"]``."""
    if isinstance(action, str):
        if len(action) <= MAX_ACTION_CHARS:
            return action
        return action[:MAX_ACTION_CHARS] + f"\u2026 [cut: {len(action)} characters]"
    return f"<{type(action).__name__} action, not shown>"


class ToolUseEnv(gym.Env):
    metadata = {"render_modes": ["ansi", "human"]}
    MAX_OBS = 1 << 16

    def __init__(self, domains: Sequence[str] | None = None, split: str = "train", *, task_set=None,
                 evaluation: bool = False,
                 max_steps: int = 24, reward_mode: str = "binary", surface: Surface | str | None = None,
                 diagnoser: Diagnoser | None = None, call_format: str = "hermes", prompt_format: str = "seal",
                 render_mode: str | None = None):
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be positive, got {max_steps}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.task_set = task_set if task_set is not None else default_task_set(split, tuple(domains) if domains else None)
        split = self.task_set.split
        self.split = split
        self.evaluation = evaluation or split != "train"
        surface = surface_preset(surface) if isinstance(surface, str) else surface  # a preset by name
        if self.evaluation and surface is not None and (surface.levels or surface.preset):
            raise FrozenSurfaceError(f"a {split} (evaluation) env holds the canonical surface; it refuses "
                                     f"the surface it was given (version {surface.version}, {len(surface.levels)} level(s))")
        self._surface = CANONICAL.freeze() if self.evaluation else (surface or CANONICAL)
        self.max_steps = max_steps
        self.reward_mode = reward_mode
        self.call_format = call_format_named(call_format)  # what the prompt and the feedback ask for
        if prompt_format not in PROMPT_FORMATS:
            raise ValueError(f"prompt_format must be one of {PROMPT_FORMATS}, got {prompt_format!r}")
        self.prompt_format = prompt_format
        self.diagnoser = diagnoser
        self.render_mode = render_mode
        self.task_weights: np.ndarray | None = None
        self.observation_space = UnicodeText(self.MAX_OBS)
        self.action_space = UnicodeText(8192)
        self._episode: Episode | None = None
        self._tools_memo: tuple | None = None

    # -- the diagnosis API ---------------------------------------------------------------
    @property
    def surface(self) -> Surface:
        return self._surface

    @surface.setter
    def surface(self, surface: Surface) -> None:
        self.set_surface(surface)

    def apply_patch(self, patch: SurfacePatch) -> Surface:
        """Change what the agent is shown from the next observation on (train envs only)."""
        self._surface = self._surface.apply(patch)
        return self._surface

    def set_surface(self, surface: Surface) -> None:
        """Show ``surface`` from the next observation on (a :class:`~seal_envs.coevolution.CoEvolution`
        hands it out); train envs only."""
        if self.surface.frozen:
            raise FrozenSurfaceError("this env evaluates on the canonical surface: it cannot be replaced")
        if not isinstance(surface, Surface):
            raise TypeError(f"a surface is a seal_envs.core.surface.Surface, got {type(surface).__name__}")
        self._surface = surface
        if self._episode is not None and surface.shows_hints:
            self._episode.surface_canonical = False  # the rest of this episode shows the hints

    def set_task_weights(self, weights: Sequence[float] | None) -> None:
        """Sampling weights over the split's task indices (curriculum); None for uniform."""
        if weights is None:
            self.task_weights = None
            return
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (len(self.task_set),) or (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"weights must be {len(self.task_set)} non-negative numbers with a positive sum")
        self.task_weights = w / w.sum()

    # -- gymnasium API -------------------------------------------------------------------
    def _pick_task(self, options: Mapping[str, Any]) -> Task:
        options = check_reset_options(options)
        if "task" in options:
            return options["task"]
        if "task_id" in options:
            return self.task_set.task_from_id(options["task_id"])
        ts = self.task_set
        if options.get("split", ts.split) != ts.split:
            ts = ts.with_split(options["split"])
        if "index" in options:
            return ts[int(options["index"])]
        candidates = ts.indices(options.get("domain"), options.get("difficulty"))
        if not candidates:
            raise ValueError(f"no {ts.split} task matches domain={options.get('domain')!r} "
                             f"difficulty={options.get('difficulty')!r}")
        p = None
        if self.task_weights is not None and ts is self.task_set:
            p = self.task_weights[candidates]
            p = p / p.sum() if p.sum() > 0 else None
        return ts[int(candidates[self.np_random.choice(len(candidates), p=p)])]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._episode = None  # a reset that raises leaves no episode running: step() then asks for a reset
        super().reset(seed=seed)
        task = self._pick_task(options)
        backend = self.task_set.backend_for(task)(task.initial_state)
        specs = backend.tool_specs()
        self._episode = ep = Episode(
            task, backend, specs, backend.parse_action,  # a backend may read more syntax (BFCL's Python calls)
            available=set(specs) - set(task.hidden_tools) | set(task.turns[0].new_tools),
            surface_canonical=not self.surface.shows_hints)
        system = self._system_text()
        ep.add(*([message("system", system)] if system else []), message("user", task.turns[0].message))
        return self._observation(), self._info(label=None)

    # -- the running episode, read-only ----------------------------------------------------
    @property
    def task(self) -> Task | None:
        return self._episode.task if self._episode is not None else None

    @property
    def backend(self):
        return self._episode.backend

    @property
    def specs(self) -> Mapping[str, Any]:
        return self._episode.specs

    @property
    def available(self) -> frozenset[str]:
        return frozenset(self._episode.available)

    @property
    def user_turn(self) -> int:
        return self._episode.user_turn

    @property
    def steps(self) -> tuple[StepRecord, ...]:
        return tuple(self._episode.steps)

    @property
    def record(self) -> EpisodeRecord:
        return self._episode.record

    @property
    def done(self) -> bool:
        return self._episode is None or self._episode.done

    @property
    def verdict(self):
        return self._episode.verdict

    @property
    def labels(self):
        return self._episode.labels

    @property
    def messages(self) -> tuple[Mapping[str, Any], ...]:
        """The whole conversation so far: shared, read-only messages (``thaw`` for a copy)."""
        return self._episode.conversation() if self._episode is not None else ()

    @property
    def tools(self) -> Sequence[Mapping[str, Any]]:
        """The tools as the surface shows them now: shared and read-only (a ``FrozenList``)."""
        return self._rendered().data

    def _system_text(self) -> str:
        """The env's system line and the surface's notes; ``qwen_fc`` has no line of its own (the
        chat template's tool block is the whole system prompt, as in BFCL's Qwen handler)."""
        ep = self._episode
        notes = self.surface.render_system_notes(ep.specs, ep.available, ep.backend.POLICIES)
        if self.prompt_format == "qwen_fc":
            return notes
        text = SYSTEM_PROMPT.format(domain=ep.task.domain, call_instruction=self.call_format.instruction)
        return f"{text}\n\n{notes}" if notes else text

    def _feedback(self, event: CallEvent) -> str:
        """What the agent reads about one event (a result, an error, format-error advice in the
        format the prompt asks for): with ``_system_text`` and ``_rendered``, the only places the
        surface is applied; nothing that executes, verifies or diagnoses sees it."""
        ep = self._episode
        return self.surface.render_event(event, ep.specs, ep.backend.POLICIES, ep.available,
                                         self.call_format.example)

    def step(self, action: Any):
        if self.done:
            raise RuntimeError("call reset() before step(), and again after the episode ends")
        saved = self._episode.checkpoint()
        try:
            return self._step(action)
        except BaseException:
            self._episode = saved.restore()  # the episode as it was before the action
            raise

    def _step(self, action: Any):
        ep = self._episode
        record = self._act(action)
        label = immediate_label(record, ep.steps)  # the history before this step: no slice to copy
        ep.steps.append(record)
        ep.immediate_labels.append(label)  # diagnosis at the end reuses them
        terminated = ep.done
        truncated = not terminated and len(ep.steps) >= self.max_steps
        if truncated:
            self._close_turn()
        reward, extra = 0.0, {}
        if terminated or truncated:
            ep.done = True
            reward, extra = self._finish(truncated)
        info = self._info(label) | extra
        info["tool_calls"] = [c.to_dict() for c in record.calls]
        # one copy of both, so that a result in tool_results is the one in events, but neither
        # is the object the episode record keeps
        info["tool_results"], info["events"] = deep_copy(([e.result for e in record.events if e.ok],
                                                          [e.to_dict() for e in record.events]))
        return self._observation(), reward, terminated, truncated, info

    def force_end(self) -> tuple[float, dict]:
        """End the running episode now, as the step budget would: a trainer whose token budget
        ran out calls this so the episode is still verified and diagnosed."""
        if self.done:
            raise RuntimeError("no running episode to end")
        self._close_turn()
        self._episode.done = True
        reward, extra = self._finish(truncated=True)
        return reward, self._info(None) | extra

    # -- one action ----------------------------------------------------------------------
    def _act(self, action: Any) -> StepRecord:
        ep = self._episode
        action = plain_action(action)  # a str subclass as its plain text, before any limit is measured
        try:
            raw = action_text(action)
            parsed = ep.parse(action)
        except FormatError as e:
            raw = _transcript_text(action)
            event = CallEvent("format_error", message=str(e))
            ep.add(message("assistant", raw), message("user", self._feedback(event)))
            return StepRecord(ep.user_turn, raw, format_error=str(e))
        if parsed.text:
            ep.turn_texts.append(parsed.text)
        if parsed.calls:
            return self._run_calls(parsed.text, parsed.calls)
        ep.add(message("assistant", parsed.text))
        withheld = ep.task.turns[ep.user_turn].withheld
        if withheld is not None and not ep.revealed:
            ep.revealed = True
            ep.add(message("user", withheld.reply))
            return StepRecord(ep.user_turn, parsed.text, asked_withheld=True)
        turn = ep.user_turn
        self._close_turn()
        return StepRecord(turn, parsed.text, ends_turn=True)

    def _run_calls(self, text: str, calls) -> StepRecord:
        ep = self._episode
        withheld = ep.task.turns[ep.user_turn].withheld
        guessed = withheld is not None and not ep.revealed and any(
            withheld.param in c.arguments and _mentions(c.arguments[withheld.param], withheld.value) for c in calls)
        if guessed:
            ep.record.guessed_withheld.add(ep.user_turn)
        ids = [f"call_{len(ep.steps)}_{i}" for i in range(len(calls))]
        ep.add(message("assistant", text, tool_calls=tuple(
            FrozenDict(id=ids[i], type="function", function=FrozenDict(
                name=c.name, arguments=text_json(dict(c.arguments))))
            for i, c in enumerate(calls))))
        events = []
        for call_id, call in zip(ids, calls):
            event = ep.backend.execute(call, ep.available)
            if event.kind == "policy_violation":
                ep.record.violations.append((ep.user_turn, event.rule or ""))
            events.append(event)
            ep.turn_results.append(event.result if event.ok else None)
            ep.add(message("tool", self._feedback(event), tool_call_id=call_id, name=call.name))
        return StepRecord(ep.user_turn, text, tuple(calls), tuple(events), guessed_withheld=guessed)

    def _close_turn(self) -> None:
        """Record the state and answer of the current user turn and send the next one."""
        ep = self._episode
        ep.record.turn_states.append(ep.backend.comparable_state())
        ep.record.turn_answers.append("\n".join(ep.turn_texts))
        ep.record.turn_results.append(ep.turn_results)
        ep.turn_texts, ep.turn_results = [], []
        if ep.user_turn + 1 >= len(ep.task.turns):
            ep.done = True
            return
        ep.user_turn += 1
        ep.revealed = False
        nxt = ep.task.turns[ep.user_turn]
        ep.available = ep.available | set(nxt.new_tools)
        ep.add(message("user", nxt.message))

    def _finish(self, truncated: bool) -> tuple[float, dict]:
        ep = self._episode
        # the verifier and the diagnoser (either may be the user's) get copies: the step's
        # checkpoint rolls back by truncating lists, which undoes appends but not other changes
        verdict = self.task_set.verify(ep.task, ep.record.copy())
        diagnose_fn = self.diagnoser or (lambda t, s, v, sp: diagnose(t, s, v, sp, truncated=truncated,
                                                                     immediate=tuple(ep.immediate_labels)))
        labels = diagnose_fn(ep.task, tuple(ep.steps), verdict, ep.specs)
        reward = float(verdict.passed) if self.reward_mode == "binary" else float(verdict.progress)
        ep.verdict, ep.labels = verdict, labels
        official = official_score(verdict.turn_facts)
        return reward, {"verdict": verdict.to_dict(), "step_labels": [lb.to_dict() for lb in labels],
                        "official_turn_tags": list(official.tags), "official_progress": official.progress,
                        "surface_canonical": ep.surface_canonical, "messages": plain_messages(ep.messages), "tools": self._rendered().listed()}

    # -- views ---------------------------------------------------------------------------
    def _observation(self) -> str:
        ep = self._episode
        new = ep.messages[ep.observed:]
        ep.observed = len(ep.messages)
        new = [m for m in new if m["role"] != "assistant"]
        head = ""
        if new and new[0]["role"] == "system":
            head = f"[system] {new[0]['content']}\n[tools]\n{self._rendered().lines}\n"
            new = new[1:]
        return sanitize(head + render_messages(new), self.MAX_OBS)

    def _rendered(self) -> _RenderedTools:
        """The tools as the surface shows them now. The env remembers the last entry and the
        (surface, specs, available) it was for, so a step that changes none of them skips even
        the shared cache's look-up."""
        ep = self._episode
        memo = self._tools_memo
        if memo is None or memo[0] is not self.surface or memo[1] is not ep.specs or memo[2] != ep.available:
            memo = (self.surface, ep.specs, frozenset(ep.available),
                    _rendered_tools(self.surface, ep.specs, ep.available, ep.backend.POLICIES))
            self._tools_memo = memo
        return memo[3]

    def _info(self, label) -> dict:
        ep = self._episode
        info = {
            "new_messages": plain_messages(ep.messages[ep.reported:]),
            "user_turn": ep.user_turn,
            "tool_calls": [],
            "tool_results": [],
            "events": [],
            "step_label": {} if label is None else label.to_dict(),  # a dict at reset too: vector envs merge it
            "surface_version": self.surface.version,
            "task_id": ep.task.task_id,
            "domain": ep.task.domain,
            "difficulty": ep.task.difficulty,
        }
        ep.reported = len(ep.messages)
        tools = self._rendered().data
        if tools is not ep.tools_reported and tools != ep.tools_reported:  # equal: a copied env's own copy
            info["tools"] = self._rendered().listed()
        ep.tools_reported = tools
        return info

    def close(self) -> None:
        """Release what the task source holds: an MCP source stops its server processes
        (``seal_envs.mcp``); the native and BFCL sources hold nothing to release."""
        close = getattr(self.task_set, "close", None)  # optional: not part of the TaskSource contract
        if close is not None:
            close()
        super().close()

    def render(self):
        text = render_messages(self.messages) if self.task is not None else ""
        if self.render_mode == "human":
            print(text)
            return None
        return text


class VerifyOnTruncation(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Verify and diagnose an episode that an outer limit truncated.

    ``gym.make(id, max_episode_steps=n)`` puts Gymnasium's ``TimeLimit`` around the env; it sets
    ``truncated`` after the env has returned, so the env never learns that the episode ended and
    the last ``info`` would carry no verdict and no labels. Every ``seal/`` id is registered with
    this wrapper outside ``TimeLimit``: when ``truncated`` arrives without a verdict it ends the
    episode as the env's own ``max_steps`` would (:meth:`ToolUseEnv.force_end`)."""

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """A reset that raises (an unknown task id) leaves the env usable. Gymnasium's
        ``PassiveEnvChecker`` marks its one reset check done before calling the env, so after a
        failed first reset its first step compares against data it never got and raises
        ``TypeError`` at every later step, although the action ran: the checker inside is set back
        to check the next reset."""
        try:
            return self.env.reset(seed=seed, options=options)
        except Exception:
            _rearm_reset_checks(self.env)
            raise

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        base = self.env.unwrapped
        if truncated and not terminated and "verdict" not in info and not getattr(base, "done", True):
            reward, end = base.force_end()
            info = info | {k: end[k] for k in END_INFO_KEYS}
        return obs, reward, terminated, truncated, info


def _rearm_reset_checks(env: gym.Env) -> None:
    """Set every ``PassiveEnvChecker`` in ``env``'s wrapper chain that has not yet seen a reset's
    data back to checking the next reset (its attributes as of Gymnasium 1.x)."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, gym.wrappers.PassiveEnvChecker) and getattr(env, "_previous_data", True) is None:
            env.checked_reset = False
        env = env.env
