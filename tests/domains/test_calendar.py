"""Calendar domain: tools on a generated state, the four policies, atomic failures, the generator."""

from __future__ import annotations

import copy

import pytest

from seal_envs.core.generator import rng_for
from seal_envs.core.types import ToolCall
from seal_envs.domains.calendar import GENERATOR, CalendarBackend
from seal_envs.domains.calendar.backend import CLOSE, OPEN, free_starts


@pytest.fixture
def state() -> dict:
    return GENERATOR.initial_state(rng_for("calendar", "train", 7, "tests"))


def call(backend: CalendarBackend, name: str, /, **arguments):
    return backend.execute(ToolCall(name, arguments))


def ok(backend: CalendarBackend, name: str, /, **arguments):
    event = call(backend, name, **arguments)
    assert event.ok, (name, event.kind, event.message)
    return event.result


def login(backend: CalendarBackend, user: str) -> None:
    ok(backend, "login", user_id=user, passcode=backend.state["contacts"][user]["passcode"])


def own_event(state: dict) -> tuple[str, str]:
    """(event id, organizer) of the first scheduled event."""
    eid = sorted(state["events"])[0]
    return eid, state["events"][eid]["organizer"]


def bystander(state: dict, eid: str) -> str:
    """Someone who does not attend ``eid``."""
    return next(p for p in sorted(state["contacts"]) if p not in state["events"][eid]["attendees"])


# -- the tool surface ---------------------------------------------------------------------
def test_specs_are_complete():
    specs = CalendarBackend.tool_specs()
    assert 7 <= len(specs) <= 12
    enums = [p for s in specs.values() for p in s.parameters["properties"].values() if "enum" in p]
    assert len(enums) >= 2
    for spec in specs.values():
        assert spec.description
        assert all(p["description"] for p in spec.parameters["properties"].values()), spec.name
    writes = {n for n, s in specs.items() if s.writes}
    assert writes == {"create_event", "move_event", "cancel_event", "invite", "set_reminder", "send_message"}
    assert 2 <= len(CalendarBackend.POLICIES) <= 4


# -- every tool on a generated state --------------------------------------------------------
def test_reads(state):
    be = CalendarBackend(state)
    eid, organizer = own_event(state)
    ev = state["events"][eid]
    person = state["contacts"][organizer]
    assert ok(be, "find_contact", name=person["name"].lower())[0]["contact_id"] == organizer
    assert ok(be, "get_event", event_id=eid)["organizer_name"] == person["name"]
    listed = ok(be, "list_events", day=ev["day"], attendee=organizer)
    assert eid in [e["event_id"] for e in listed]
    assert [e["start"] for e in listed] == sorted(e["start"] for e in listed)
    slot = ok(be, "find_free_slot", day=ev["day"], attendees=ev["attendees"], duration=1)
    assert slot["start"] == free_starts(state, ev["attendees"], ev["day"], 1)[0]
    login(be, organizer)
    inbox = ok(be, "read_inbox")
    assert inbox and all(m["unread"] for m in ok(be, "read_inbox", unread_only=True))
    assert inbox[0]["message_id"] == [m for m in state["messages"] if m["to"] == organizer][-1]["message_id"]


def test_writes(state):
    be = CalendarBackend(state)
    eid, me = own_event(state)
    login(be, me)
    guest = bystander(state, eid)
    day = state["events"][eid]["day"]
    start = free_starts(be.state, [me, guest], day, 1)[0]
    made = ok(be, "create_event", title="Design sync", day=day, start=start, duration=1, attendees=[guest])
    new = be.state["events"][made["event_id"]]
    assert new["organizer"] == me and new["attendees"] == sorted([me, guest])
    ev = be.state["events"][eid]
    target = next((d, h) for d in range(1, 6) for h in free_starts(be.state, ev["attendees"], d, ev["duration"],
                  ev["room"], skip=eid) if (d, h) != (ev["day"], ev["start"]))
    ok(be, "move_event", event_id=eid, day=target[0], start=target[1])
    assert (be.state["events"][eid]["day"], be.state["events"][eid]["start"]) == target
    ok(be, "set_reminder", event_id=eid, minutes_before=15, channel="sms")
    assert be.state["events"][eid]["reminders"][me] == {"minutes_before": 15, "channel": "sms"}
    ok(be, "send_message", to=guest, body="lunch is on me", priority="urgent")
    assert be.state["messages"][-1] | {"message_id": "-"} == {
        "message_id": "-", "from": me, "to": guest, "body": "lunch is on me", "priority": "urgent", "unread": True}
    ok(be, "cancel_event", event_id=eid)
    assert be.state["events"][eid]["status"] == "cancelled"
    assert eid not in [e["event_id"] for e in ok(be, "list_events", day=target[0])]


def common_slot(state: dict, people: list[str], skip_hours=()) -> tuple[int, int]:
    """A (day, hour) when all ``people`` are free, avoiding ``skip_hours`` on that day."""
    return next((d, h) for d in range(1, 6) for h in free_starts(state, people, d, 1) if (d, h) not in skip_hours)


def test_invite(state):
    be = CalendarBackend(state)
    a, b, c = sorted(state["contacts"])[:3]
    day, hour = common_slot(state, [a, b, c])
    login(be, a)
    eid = ok(be, "create_event", title="Sync", day=day, start=hour, duration=1, attendees=[b])["event_id"]
    assert ok(be, "invite", event_id=eid, contact_id=c)["attendees"] == sorted([a, b, c])
    assert call(be, "invite", event_id=eid, contact_id=c).kind == "tool_error"


# -- policies ---------------------------------------------------------------------------
def assert_refused(backend: CalendarBackend, rule: str, name: str, /, **arguments) -> None:
    before = copy.deepcopy(backend.state)
    event = call(backend, name, **arguments)
    assert (event.kind, event.rule) == ("policy_violation", rule), event
    assert backend.state == before


def test_logged_in(state):
    be = CalendarBackend(state)
    eid, _ = own_event(state)
    someone = sorted(state["contacts"])[0]
    assert_refused(be, "logged_in", "cancel_event", event_id=eid)
    assert_refused(be, "logged_in", "send_message", to=someone, body="hello")
    assert_refused(be, "logged_in", "read_inbox")
    assert_refused(be, "logged_in", "create_event", title="X", day=1, start=10, duration=1, attendees=[])


def test_organizer_only(state):
    be = CalendarBackend(state)
    eid, organizer = own_event(state)
    other = next(p for p in sorted(state["contacts"]) if p != organizer)
    login(be, other)
    assert_refused(be, "organizer_only", "cancel_event", event_id=eid)
    assert_refused(be, "organizer_only", "move_event", event_id=eid, day=1, start=OPEN)


@pytest.mark.parametrize("start,duration", [(OPEN - 1, 1), (17, 2), (20, 1)])
def test_working_hours(state, start, duration):
    be = CalendarBackend(state)
    _, me = own_event(state)
    login(be, me)
    assert_refused(be, "working_hours", "create_event", title="Late", day=1, start=start, duration=duration,
                   attendees=[])


def test_working_hours_on_move(state):
    be = CalendarBackend(state)
    eid, me = own_event(state)
    login(be, me)
    assert_refused(be, "working_hours", "move_event", event_id=eid, day=1, start=CLOSE)
    assert_refused(be, "working_hours", "move_event", event_id=eid, day=1, start=OPEN - 1)


def test_no_double_booking(state):
    be = CalendarBackend(state)
    a, b, c = sorted(state["contacts"])[:3]
    day, hour = common_slot(state, [a, b, c])
    login(be, a)
    ok(be, "create_event", title="Sync", day=day, start=hour, duration=1, attendees=[b])
    assert_refused(be, "no_double_booking", "create_event", title="Clash", day=day, start=hour, duration=1,
                   attendees=[c])  # the organizer a is already busy
    later = common_slot(be.state, [a, c], skip_hours={(day, hour)})
    solo = ok(be, "create_event", title="Focus", day=later[0], start=later[1], duration=1, attendees=[])
    assert_refused(be, "no_double_booking", "move_event", event_id=solo["event_id"], day=day, start=hour)
    login(be, c)
    other = ok(be, "create_event", title="Other", day=later[0], start=later[1], duration=1, attendees=[])
    login(be, a)
    assert_refused(be, "no_double_booking", "invite", event_id=other["event_id"], contact_id=a)


# -- failed calls are atomic -------------------------------------------------------------
@pytest.mark.parametrize("tool,arguments,kind", [
    ("login", {"user_id": "P-0", "passcode": "0000"}, "tool_error"),
    ("get_event", {"event_id": "EV-1"}, "tool_error"),
    ("list_events", {"day": 9}, "schema_violation"),
    ("set_reminder", {"event_id": "EV-1", "minutes_before": 7, "channel": "sms"}, "schema_violation"),
    ("send_message", {"to": "P-0", "body": "hi", "priority": "loud"}, "schema_violation"),
    ("find_contact", {"name": "Nobody Here"}, "tool_error"),
])
def test_failed_call_leaves_state(state, tool, arguments, kind):
    be = CalendarBackend(state)
    before = copy.deepcopy(be.state)
    assert call(be, tool, **arguments).kind == kind
    assert be.state == before


def test_wrong_passcode_and_unknown_room_change_nothing(state):
    be = CalendarBackend(state)
    _, me = own_event(state)
    assert call(be, "login", user_id=me, passcode="not-it").param == "passcode"
    assert "user" not in be.session
    login(be, me)
    day, hour = common_slot(state, [me])
    before = copy.deepcopy(be.state)
    event = call(be, "create_event", title="X", day=day, start=hour, duration=1, attendees=[], room="RM-00")
    assert (event.kind, event.param) == ("tool_error", "room")
    assert be.state == before


# -- the generator ------------------------------------------------------------------------
def test_generator_is_deterministic_and_varies():
    for d in (1, 2, 3, 4):
        assert GENERATOR.generate(11, d, "train").to_dict() == GENERATOR.generate(11, d, "train").to_dict()
        tasks = {GENERATOR.generate(s, d, "train").to_dict()["turns"][0]["message"] for s in range(8)}
        assert len(tasks) > 1


def test_difficulty_features():
    for s in range(25):
        t1, t2, t3, t4 = (GENERATOR.generate(s, d, "train") for d in (1, 2, 3, 4))
        assert len(t1.turns) == 1 and len(t1.plan) == 1 and t1.turns[0].required_outputs
        assert 2 <= len(t2.plan) <= 3 and len(t2.turns) <= 2
        assert len(t3.plan) <= 5 and 2 <= len(t3.turns) <= 3
        assert any(u.withheld for u in t3.turns) or "trap" in t3.template
        assert 3 <= len(t4.turns) <= 4 and len(t4.plan) <= 8
        assert any(u.withheld for u in t4.turns) and t4.hidden_tools
        revealed = [u for u in t4.turns if u.new_tools]
        assert revealed and set(t4.hidden_tools) <= {n for u in revealed for n in u.new_tools}
    d4 = [len(GENERATOR.generate(s, 4, "train").plan) for s in range(40)]
    assert sum(d4) / len(d4) >= 4


def test_traps_are_refused_by_their_rule():
    """A trap turn's forbidden call is not in the plan; the template names which trap was set."""
    seen = set()
    for s in range(60):
        t = GENERATOR.generate(s, 3, "train")
        if "trap" in t.template:
            seen.add(t.template.split("+")[-1])
            assert not any(c.name in {"create_event", "cancel_event", "move_event"} for c in t.turns[-1].plan)
            assert t.turns[-1].required_outputs
    assert seen == {"trap_organizer", "trap_hours", "trap_busy"}


def test_ood_split_uses_held_out_phrasing():
    train = {GENERATOR.generate(s, 1, "train").turns[0].message for s in range(30)}
    ood = {GENERATOR.generate(s, 1, "ood").turns[0].message for s in range(30)}
    assert train.isdisjoint(ood)


def test_oracle_solves_a_sample():
    gym = pytest.importorskip("gymnasium")
    from seal_envs.agents import OracleAgent, run_episode

    env = gym.make("seal/ToolUse-v0", domains=("calendar",)).unwrapped
    for index in range(0, 400, 23):
        reward, info, _ = run_episode(env, OracleAgent(), options={"index": index})
        assert reward == 1.0, info["task_id"]
        assert {lb["label"] for lb in info["step_labels"]} == {"ok"}


def test_free_starts_are_the_hours_without_conflict_or_taken_room():
    """``free_starts`` gathers the blocking events once (issue 16); it must give exactly the
    hours that asking ``conflicts`` and ``room_taken`` hour by hour gives."""
    import random

    from seal_envs.domains.calendar.backend import conflicts, overlaps, room_taken

    def sorted_conflicts(state, people, day, start, duration, skip=""):  # the definition, every event sorted
        return [(p, eid) for eid, ev in sorted(state["events"].items())
                if eid != skip and overlaps(ev, day, start, duration)
                for p in sorted(people) if p in ev["attendees"]]

    rng = random.Random(0)
    checked = 0
    for seed in range(12):
        s = GENERATOR.initial_state(rng_for("calendar", "train", seed, "free"))
        events = sorted(s["events"])
        for ev in rng.sample(events, 4):  # some events cancelled, so status matters
            s["events"][ev]["status"] = "cancelled"
        for _ in range(40):
            people = rng.sample(sorted(s["contacts"]), rng.choice([1, 2, 3]))
            day, duration = rng.randint(0, 6), rng.choice([1, 2, 3, 9, 10])
            room = rng.choice(sorted(s["rooms"]) + ["", "nowhere"])
            skip = rng.choice(events + [""])
            expected = [h for h in range(OPEN, CLOSE - duration + 1)
                        if not conflicts(s, people, day, h, duration, skip)
                        and not room_taken(s, room, day, h, duration, skip)]
            assert free_starts(s, people, day, duration, room, skip) == expected
            for h in range(OPEN - 1, CLOSE + 1):
                assert conflicts(s, people, day, h, duration, skip) == sorted_conflicts(s, people, day, h, duration, skip)
            checked += 1
    assert checked == 480
