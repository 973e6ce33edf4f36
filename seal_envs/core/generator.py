"""What every domain's task generator needs, written once.

A domain supplies a backend, an initial-state factory and *intents* (small functions that add
one user turn). :class:`TaskBuilder` runs each intent's reference calls on a live backend as the
task is written, so every plan is executable by construction and later intents see the state
the earlier ones left. Randomness comes only from ``rng_for`` so the same (domain, split, seed)
gives the same task in any process (``random.Random`` seeds strings through SHA-512).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .backend import Backend
from .types import CallEvent, Task, ToolCall, UserTurn, Withheld

SPLITS = ("train", "test", "ood")
DIFFICULTIES = (1, 2, 3, 4)


class GeneratorError(RuntimeError):
    """A domain wrote a reference call that does not execute: a bug in the generator."""


def rng_for(domain: str, split: str, seed: int, salt: str = "") -> random.Random:
    return random.Random(f"seal:{domain}:{split}:{seed}:{salt}")


@dataclass(frozen=True)
class Phrasebook:
    """Paraphrases per intent. ``train`` phrasings serve train and test; ``ood`` are held out.

    Each phrasing is a ``str.format`` template over the intent's values.
    """

    train: Mapping[str, Sequence[str]]
    ood: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def say(self, rng: random.Random, split: str, intent: str, **values: Any) -> str:
        pool = self.ood.get(intent) if split == "ood" else None
        pool = pool or self.train[intent]
        return rng.choice(list(pool)).format(**values)

    def intents(self) -> set[str]:
        return set(self.train)


OPENERS = ("", "Hi! ", "Hello, ", "Hey there. ", "Good morning! ", "Quick one: ", "Please help: ")
CLOSERS = ("", "", " Thanks!", " Thank you.", " Appreciate it.", " Cheers.")


WITHHELD_REPLIES = (
    "Sure, the {label} is {value}.",
    "Oh right, it's {value}.",
    "The {label}? It's {value}.",
    "Sorry, {value}.",
    "It is {value}.",
)

TOOL_ENABLED = (
    "I've just enabled the {tool} tool for you. Please go ahead with my request now.",
    "You should have {tool} available now, can you do it?",
    "OK, {tool} is switched on. Try again please.",
    "Access to {tool} granted. Please continue.",
)


def dress(rng: random.Random, message: str) -> str:
    """Vary greetings and sign-offs so a policy cannot key on one exact string."""
    return f"{rng.choice(OPENERS)}{message}{rng.choice(CLOSERS)}"


class TaskBuilder:
    """Accumulates user turns while executing their reference calls on a simulation backend."""

    def __init__(self, backend_cls: type[Backend], initial_state: Mapping[str, Any], rng: random.Random,
                 split: str):
        self.backend_cls = backend_cls
        self.initial_state = initial_state
        self.sim = backend_cls(initial_state)
        self.rng = rng
        self.split = split
        self.turns: list[UserTurn] = []
        self.hidden: set[str] = set()

    def run(self, name: str, **arguments: Any) -> Any:
        """Execute a reference call on the simulation and return its result."""
        return self.must(ToolCall(name, arguments)).result

    def must(self, call: ToolCall) -> CallEvent:
        writes = self.sim.tool_specs()[call.name].writes if call.name in self.sim.tool_specs() else False
        before = self.sim.comparable_state() if writes else None
        event = self.sim.execute(call)
        if not event.ok:
            raise GeneratorError(f"{self.backend_cls.__name__}: reference call {call.key()} failed: {event.message}")
        if writes and self.sim.comparable_state() == before:
            # a do-nothing agent would pass the state check of such a turn
            raise GeneratorError(f"{self.backend_cls.__name__}: reference write {call.key()} changes nothing")
        return event

    def try_call(self, call: ToolCall) -> CallEvent:
        """Run a call that may be refused (a constraint trap's forbidden action) on a scratch copy."""
        return self.backend_cls(self.sim.state).execute(call)

    def turn(self, message: str, plan: Sequence[ToolCall] = (), required_outputs: Sequence[Any] = (),
             withheld: Withheld | None = None, new_tools: Sequence[str] = ()) -> None:
        for call in plan:
            self.must(call)
        self.turns.append(UserTurn(
            message=dress(self.rng, message),
            plan=tuple(plan),
            required_outputs=tuple(str(r) for r in required_outputs),
            withheld=withheld,
            new_tools=tuple(new_tools),
        ))

    def ask_later(self, message: str, plan: Sequence[ToolCall], param: str, value: Any, label: str,
                  required_outputs: Sequence[Any] = ()) -> None:
        """A turn whose request leaves out ``param``; the user gives ``value`` only when asked.

        The env flags a call that passes ``value`` as ``param`` before it was asked for.
        """
        if not any(c.arguments.get(param) == value for c in plan):
            raise GeneratorError(f"withheld {param}={value!r} is not an argument of any reference call")
        reply = self.rng.choice(WITHHELD_REPLIES).format(label=label, value=value)
        self.turn(message, plan, required_outputs, withheld=Withheld(param, value, reply))

    def request(self, message: str, plan: Sequence[ToolCall], required_outputs: Sequence[Any] = (),
                withheld: tuple[str, Any, str] | None = None, late: str | None = None) -> None:
        """One request in whichever shape the difficulty asks for: a plain turn, a turn that
        holds back ``withheld = (param, value, label)``, or a late-tool pair for tool ``late``."""
        if late:
            self.late_tool(message, late, plan, required_outputs)
        elif withheld:
            self.ask_later(message, plan, *withheld, required_outputs=required_outputs)
        else:
            self.turn(message, plan, required_outputs)

    def late_tool(self, message: str, tool_name: str, plan: Sequence[ToolCall],
                  required_outputs: Sequence[Any] = ()) -> None:
        """Two turns in BFCL miss_func style: the request arrives while ``tool_name`` is missing
        (the right move is to say it cannot be done yet), then the tool appears and the user
        asks again."""
        self.hidden.add(tool_name)
        self.turn(message)
        follow = self.rng.choice(TOOL_ENABLED).format(tool=tool_name)
        self.turn(follow, plan, required_outputs, new_tools=(tool_name,))

    def trap(self, message: str, forbidden: ToolCall, rule: str, plan: Sequence[ToolCall] = (),
             required_outputs: Sequence[Any] = ()) -> None:
        """A constraint trap: the user asks for ``forbidden``, which policy ``rule`` refuses.

        The reference does only ``plan`` (usually a look-up) and reports back.
        """
        scratch = self.backend_cls(self.sim.state)
        for call in plan:
            scratch.execute(call)
        event = scratch.execute(forbidden)
        if event.kind != "policy_violation" or event.rule != rule:
            raise GeneratorError(f"trap {forbidden.key()} was not refused by policy {rule!r}: {event.kind}")
        self.turn(message, plan, required_outputs)

    def build(self, *, domain: str, seed: int, difficulty: int, template: str) -> Task:
        if not self.turns:
            raise GeneratorError(f"{domain} generator produced a task with no user turns")
        revealed = {t for turn in self.turns for t in turn.new_tools}
        missing = self.hidden - revealed
        if missing:
            raise GeneratorError(f"{domain}: hidden tools {sorted(missing)} are never revealed")
        return Task(
            task_id=f"{domain}/{self.split}/d{difficulty}/{seed}",
            domain=domain,
            split=self.split,
            seed=seed,
            difficulty=difficulty,
            initial_state=self.initial_state,
            turns=tuple(self.turns),
            template=template,
            hidden_tools=tuple(sorted(self.hidden)),
        )


class DomainGenerator:
    """A domain's task generator: seeded, with difficulty levels 1 to 4.

    Subclasses implement :meth:`initial_state` and :meth:`compose`, which calls intents on the
    builder. ``compose`` gets the difficulty and decides how many turns and calls, whether a
    value is withheld, whether a tool appears late and whether a constraint trap is set.
    """

    domain: str = ""
    backend: type[Backend] = Backend

    def initial_state(self, rng: random.Random) -> dict[str, Any]:
        raise NotImplementedError

    def compose(self, b: TaskBuilder, difficulty: int) -> str:
        """Add the user turns; return the template name (which scenario shape was used)."""
        raise NotImplementedError

    def generate(self, seed: int, difficulty: int, split: str = "train") -> Task:
        if difficulty not in DIFFICULTIES:
            raise ValueError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty!r}")
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        rng = rng_for(self.domain, split, seed, f"d{difficulty}")
        state = self.initial_state(rng)
        builder = TaskBuilder(self.backend, state, rng, split)
        template = self.compose(builder, difficulty)
        return builder.build(domain=self.domain, seed=seed, difficulty=difficulty, template=template)
