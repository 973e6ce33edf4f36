"""A Python domain registered from outside the package: a notes service and its generator.

    import seal_envs, notes_domain
    env_id = seal_envs.register_domain(notes_domain.GENERATOR)   # "seal/ToolUse-Notes-v0"

or, in an installed package, one line of ``pyproject.toml`` and no call at all::

    [project.entry-points."seal_envs.domains"]
    notes = "notes_domain:GENERATOR"
"""

from __future__ import annotations

import random

from seal_envs.core.backend import Backend, PolicyViolation, ToolError, tool
from seal_envs.core.generator import DomainGenerator, Phrasebook, TaskBuilder
from seal_envs.core.types import ToolCall

TOPICS = ("groceries", "meeting", "books", "travel", "ideas", "garden", "recipes", "gifts")
WORDS = ("milk", "call Sam", "pack the charger", "read Dune", "plant tulips", "buy a scarf", "try the soup")


class NotesBackend(Backend):
    domain = "notes"
    POLICIES = {"pinned": "a pinned note cannot be deleted"}

    @tool
    def list_notes(self) -> list:
        """The titles of every note."""
        return sorted(self.state["notes"])

    @tool
    def read_note(self, title: str) -> str:
        """The text of one note.

        Args:
            title: the note's title
        """
        return self.record("notes", title, "title", "note")["text"]

    @tool(writes=True)
    def add_note(self, title: str, text: str) -> dict:
        """Add a note.

        Args:
            title: a new title
            text: what the note says
        """
        if title in self.state["notes"]:
            raise ToolError(f"a note titled {title} exists already", param="title")
        self.state["notes"][title] = {"text": text, "pinned": False}
        return {"title": title}

    @tool(writes=True, policies=("pinned",))
    def delete_note(self, title: str) -> dict:
        """Delete a note.

        Args:
            title: the note's title
        """
        note = self.record("notes", title, "title", "note")
        if note["pinned"]:
            raise PolicyViolation("pinned", f"note {title} is pinned and cannot be deleted")
        del self.state["notes"][title]
        return {"deleted": title}


PHRASES = Phrasebook(
    train={"add": ["Add a note '{title}' saying '{text}'.", "Make a note called {title}: {text}."],
           "delete": ["Delete my note '{title}'.", "Remove the {title} note."],
           "delete_some": ["Delete one of my notes, please."]},
    ood={"add": ["Jot down '{text}' under the title {title}."], "delete": ["Get rid of the note named {title}."]},
)


class NotesGenerator(DomainGenerator):
    domain = "notes"
    backend = NotesBackend

    def initial_state(self, rng: random.Random) -> dict:
        titles = rng.sample(TOPICS, 3)
        return {"notes": {t: {"text": rng.choice(WORDS), "pinned": i == 0} for i, t in enumerate(titles)}}

    def compose(self, b: TaskBuilder, difficulty: int) -> str:
        existing = sorted(t for t, n in b.sim.state["notes"].items() if not n["pinned"])
        new = b.rng.choice([t for t in TOPICS if t not in b.sim.state["notes"]])
        text = b.rng.choice(WORDS)
        add = ToolCall("add_note", {"title": new, "text": text})
        say = lambda intent, **v: PHRASES.say(b.rng, b.split, intent, **v)  # noqa: E731
        if difficulty == 1:
            b.turn(say("add", title=new, text=text), [add])
            return "add"
        gone = b.rng.choice(existing)
        delete = ToolCall("delete_note", {"title": gone})
        if difficulty == 2:
            b.turn(say("add", title=new, text=text) + " " + say("delete", title=gone), [add, delete])
            return "add_delete"
        if difficulty == 3:
            b.ask_later(say("delete_some"), [delete], "title", gone, "title")
            return "withheld_delete"
        b.turn(say("add", title=new, text=text), [add])
        b.ask_later(say("delete_some"), [delete], "title", gone, "title")
        return "add_then_withheld_delete"


GENERATOR = NotesGenerator()
