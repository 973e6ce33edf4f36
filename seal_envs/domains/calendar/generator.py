"""Seeded calendar tasks: from a schedule look-up to multi-turn bookings with traps and late tools.

The acting user ("me") is whoever the simulation is logged in as, so later intents of a task
continue as the same person; only the first intent that needs a login picks someone.
"""

from __future__ import annotations

import random

from seal_envs.core.generator import DomainGenerator, GeneratorError, Phrasebook, TaskBuilder
from seal_envs.core.names import WORDS, person_names
from seal_envs.core.types import ToolCall as C

from .backend import DAYS, OPEN, CalendarBackend, conflicts, free_starts, next_event_id

TITLES = ("Design sync", "Budget review", "Sprint planning", "Client call", "Team lunch", "Project kickoff",
          "Weekly standup", "Roadmap chat", "Hiring panel", "Demo prep")
BODIES = ("running ten minutes late", "see you at the meeting", "please review the agenda",
          "can we talk after lunch", "the slides are ready", "thanks for your help today",
          "lunch is on me", "call me when you are free")
TEAMS = ("design", "sales", "research", "support", "finance")
# (start, duration) pairs that break working hours: the constraint trap asks for one of them.
OFF_HOURS = ((7, 1), (8, 1), (8, 2), (18, 1), (19, 1), (17, 2), (16, 3))

PHRASES = Phrasebook(
    train={
        "login": [
            "I'm {name} ({cid}), passcode {passcode}.",
            "This is {name}, user {cid}; my passcode is {passcode}.",
            "Log me in as {cid} with passcode {passcode}.",
            "{name} here, id {cid}, passcode {passcode}.",
        ],
        "login_nopass": [
            "I'm {name} ({cid}).",
            "This is {name}, user {cid}.",
            "{name} here, my user id is {cid}.",
        ],
        "day_schedule": [
            "What meetings does {name} ({cid}) have on day {day}?",
            "Which events is {cid} attending on day {day}?",
            "Show me {name}'s calendar for day {day}; their id is {cid}.",
            "List the events of {cid} on day {day}, please.",
        ],
        "event_info": [
            "Who organizes {event} and what time does it start?",
            "When does {event} start, and who set it up?",
            "I need the start hour and the organizer of {event}.",
            "Tell me who is running {event} and at what hour it begins.",
        ],
        "free_slot": [
            "What's the earliest time on day {day} when {people} are all free for {length}?",
            "Find the first time on day {day} that {people} can meet for {length}.",
            "When on day {day} could {people} get together for {length}, earliest possible?",
        ],
        "contact": [
            "What's the contact id of {name}, and which team are they on?",
            "Look up {name} for me: I need their id and their team.",
            "Which team is {name} in, and what's their contact id?",
        ],
        "inbox_latest": [
            "Who sent the latest message in my inbox?",
            "Check my inbox: who is the newest message from?",
            "Who wrote to me most recently?",
        ],
        "inbox_unread": [
            "How many unread messages do I have?",
            "Count the unread messages in my inbox, please.",
            "Do I have unread messages? How many?",
        ],
        "schedule": [
            'Book "{title}" on day {day} at {start}:00 for {length} with {people} in room {room}.',
            'Please set up "{title}" with {people} on day {day}, {start}:00, {length}, room {room}.',
            'Schedule "{title}" for {length} on day {day} starting {start}:00 with {people}; use room {room}.',
        ],
        "schedule_nostart": [
            'Book "{title}" on day {day} for {length} with {people} in room {room}.',
            'Please set up "{title}" with {people} on day {day}, {length}, room {room}.',
            'Schedule "{title}" for {length} on day {day} with {people}; use room {room}.',
        ],
        "first_free": [
            'Book "{title}" with {people} on day {day} for {length} at the earliest time we are all free.',
            'Find the first time on day {day} that suits me and {people} for {length}, and book "{title}" there.',
            'Put "{title}" ({length}) in the earliest free slot on day {day} for me and {people}.',
        ],
        "move": [
            "Move {event} to day {day} at {start}:00.",
            "Please reschedule {event} to {start}:00 on day {day}.",
            "Can you shift {event} to day {day}, starting {start}:00?",
        ],
        "move_nostart": [
            "Move {event} to day {day}.",
            "Please reschedule {event} to day {day}.",
            "Can you shift {event} over to day {day}?",
        ],
        "cancel": [
            "Cancel {event}, please.",
            "{event} is off; please cancel it.",
            "We no longer need {event}. Cancel it.",
        ],
        "invite": [
            "Add {name} to {event}.",
            "Please invite {name} to {event}.",
            "Can {name} join {event}? Invite them.",
        ],
        "remind": [
            "Remind me {minutes} minutes before {event} by {channel}.",
            "Set a reminder by {channel} {minutes} minutes ahead of {event}.",
            "I want a reminder for {event}, {minutes} minutes before, via {channel}.",
        ],
        "message": [
            'Send {name} ({cid}) a message saying "{body}".',
            'Message {cid} ({name}): "{body}".',
            'Please tell {name}, id {cid}, "{body}" by message.',
        ],
        "message_urgent": [
            'Send {name} ({cid}) an urgent message saying "{body}".',
            'Urgent message to {cid} ({name}): "{body}".',
            'Please tell {name}, id {cid}, "{body}", and mark it urgent.',
        ],
        "trap_cancel": [
            "Cancel {event}, and tell me who organizes it.",
            "Please call off {event}. Also, who is its organizer?",
            "I want {event} cancelled; and who set that one up anyway?",
        ],
        "trap_move": [
            "Move {event} to day {day} at {start}:00, and tell me who organizes it.",
            "Please reschedule {event} to day {day}, {start}:00. Also, who is its organizer?",
            "Shift {event} to {start}:00 on day {day}; and who set that one up anyway?",
        ],
        "trap_hours": [
            'Book "{title}" with {people} on day {day} at {start}:00 for {length}. '
            "Also, what is the earliest slot of that length that day when we are both free?",
            'Schedule "{title}" for me and {people}, day {day}, {start}:00, {length}. '
            "And when is our first common free slot that day?",
            'Set up "{title}" with {people} at {start}:00 on day {day} ({length}), '
            "and tell me the earliest time we could both meet that day.",
        ],
        "trap_busy": [
            'Book "{title}" with {people} on day {day} at {start}:00 for 1 hour, '
            "and tell me what {name} already has that day.",
            'Set up a one-hour "{title}" with {people}, day {day} at {start}:00. '
            "What's on {name}'s calendar that day?",
            'Schedule "{title}" with {people} on day {day}, {start}:00, one hour. '
            "Also list {name}'s events for that day.",
        ],
    },
    ood={
        "login": ["Credentials: {cid} / {passcode} ({name})."],
        "login_nopass": ["{name} on the line, account {cid}."],
        "day_schedule": ["Agenda check: {name}, id {cid}, day {day} - what's booked?"],
        "event_info": ["Re {event}: kickoff hour and owner?"],
        "free_slot": ["Day {day}, {people}, {length} together - first opening?"],
        "contact": ["Directory lookup on {name}: id plus team, please."],
        "inbox_latest": ["Newest item in my mailbox - whose is it?"],
        "inbox_unread": ["Tally of my unopened messages?"],
        "schedule": ['Pencil in "{title}" - day {day}, {start}:00 sharp, {length}, {people}, room {room}.'],
        "schedule_nostart": ['Pencil in "{title}" - day {day}, {length}, {people}, room {room}.'],
        "first_free": ['Slot "{title}" ({length}) with {people} into the soonest gap on day {day}.'],
        "move": ["Shove {event} over to day {day}, {start}:00."],
        "move_nostart": ["Shove {event} over to day {day}."],
        "cancel": ["Scrap {event}."],
        "invite": ["Loop {name} into {event}."],
        "remind": ["Nudge me via {channel} {minutes} minutes ahead of {event}."],
        "message": ['Drop {name} ({cid}) a line: "{body}".'],
        "message_urgent": ['Flag as urgent and drop {name} ({cid}) a line: "{body}".'],
        "trap_hours": ['Pencil in "{title}" with {people}, day {day}, {start}:00, {length} - '
                       "and what is our soonest shared opening that day?"],
        "trap_busy": ['Pencil in a one-hour "{title}" with {people}, day {day}, {start}:00 - '
                      "and what does {name} have going on that day?"],
        "trap_cancel": ["Scrap {event} - oh, and whose meeting is it?"],
        "trap_move": ["Shove {event} to day {day}, {start}:00 - oh, and whose meeting is it?"],
    },
)


def _length(hours: int) -> str:
    return f"{hours} hour" if hours == 1 else f"{hours} hours"


class CalendarGenerator(DomainGenerator):
    domain = "calendar"
    backend = CalendarBackend

    # -- the seeded world ----------------------------------------------------------------
    def initial_state(self, rng: random.Random) -> dict:
        names = person_names(rng, 6)
        contacts = {f"P-{rng.randint(10, 99)}{i}": {"name": n, "team": rng.choice(TEAMS),
                                                     "passcode": f"{rng.randint(0, 9999):04d}"}
                    for i, n in enumerate(names)}
        rooms = {f"RM-{i + 1}{rng.randint(0, 9)}": {"name": w.capitalize(), "capacity": rng.choice([4, 6, 8])}
                 for i, w in enumerate(rng.sample(WORDS, 3))}
        state = {"contacts": contacts, "rooms": rooms, "events": {}, "messages": []}
        ids = sorted(contacts)
        first = rng.randint(2, 8) * 100 + 1
        # Everyone organizes two events and attends one organized by a colleague, so every
        # intent (move my event, a trap on someone else's) finds what it needs.
        for i, cid in enumerate(ids):
            for step in (1, 2):
                guests = {ids[(i + step) % len(ids)]} | ({rng.choice(ids)} if rng.random() < 0.4 else set())
                self._place(rng, state, f"EV-{first + len(state['events'])}", cid, sorted(guests | {cid}))
        for i, cid in enumerate(ids):
            for _ in range(2):
                sender = rng.choice([p for p in ids if p != cid])
                state["messages"].append({"message_id": f"M-{401 + len(state['messages'])}", "from": sender,
                                          "to": cid, "body": rng.choice(BODIES), "priority": "normal",
                                          "unread": rng.random() < 0.5})
        rng.shuffle(state["messages"])
        return state

    def _place(self, rng: random.Random, state: dict, event_id: str, organizer: str, people: list[str]) -> None:
        duration = rng.choice([1, 1, 2])
        room = rng.choice(sorted(state["rooms"]) + [""])
        options = [(d, h) for d in range(DAYS[0], DAYS[1] + 1) for h in free_starts(state, people, d, duration, room)]
        day, start = rng.choice(options)
        state["events"][event_id] = {"title": rng.choice(TITLES), "day": day, "start": start, "duration": duration,
                                     "organizer": organizer, "attendees": people, "room": room,
                                     "status": "scheduled", "reminders": {}}

    # -- shared pieces of intents --------------------------------------------------------
    @staticmethod
    def _scheduled(b: TaskBuilder, keep=lambda ev: True) -> list[str]:
        return [e for e, ev in sorted(b.sim.state["events"].items()) if ev["status"] == "scheduled" and keep(ev)]

    def _me(self, b: TaskBuilder, among: list[str] | None = None) -> str:
        """The logged-in user, or a fresh pick (from ``among``) when nobody is logged in yet."""
        return b.sim.session.get("user") or b.rng.choice(among or sorted(b.sim.state["contacts"]))

    def _login(self, b: TaskBuilder, me: str, hide_passcode: bool = False) -> tuple[str, list[C]]:
        """The sentence introducing ``me`` and the login call, both empty when already logged in."""
        if b.sim.session.get("user") == me:
            return "", []
        person = b.sim.state["contacts"][me]
        key = "login_nopass" if hide_passcode else "login"
        intro = PHRASES.say(b.rng, b.split, key, name=person["name"], cid=me, passcode=person["passcode"])
        return intro + " ", [C("login", {"user_id": me, "passcode": person["passcode"]})]

    def _people(self, b: TaskBuilder, ids: list[str]) -> str:
        names = [f"{b.sim.state['contacts'][p]['name']} ({p})" for p in ids]
        return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]

    def _others(self, b: TaskBuilder, me: str, k: int) -> list[str]:
        return sorted(b.rng.sample([p for p in sorted(b.sim.state["contacts"]) if p != me], k))

    def _say(self, b: TaskBuilder, intent: str, **values) -> str:
        return PHRASES.say(b.rng, b.split, intent, **values)

    def _late_morning(self, b: TaskBuilder, options: list, earliest):
        """Pick an option, preferring those whose earliest free hour is past opening time, so
        "the earliest slot" is not always the opening hour and has to be looked up."""
        late = [o for o in options if earliest(o) > OPEN]
        return b.rng.choice(late or options)

    # -- reads ---------------------------------------------------------------------------
    def day_schedule(self, b: TaskBuilder) -> None:
        state = b.sim.state
        pairs = sorted({(p, state["events"][e]["day"]) for e in self._scheduled(b)
                        for p in state["events"][e]["attendees"]})
        cid, day = b.rng.choice(pairs)
        found = b.run("list_events", day=day, attendee=cid)
        b.turn(self._say(b, "day_schedule", name=state["contacts"][cid]["name"], cid=cid, day=day),
               [C("list_events", {"day": day, "attendee": cid})], [e["event_id"] for e in found])

    def event_info(self, b: TaskBuilder) -> str:
        event = b.rng.choice(self._scheduled(b))
        view = b.run("get_event", event_id=event)
        b.turn(self._say(b, "event_info", event=event), [C("get_event", {"event_id": event})],
               [view["organizer_name"], view["start"]])
        return event

    def free_slot(self, b: TaskBuilder) -> None:
        people = sorted(b.rng.sample(sorted(b.sim.state["contacts"]), b.rng.choice([2, 3])))
        duration = b.rng.choice([1, 2])
        days = [d for d in range(DAYS[0], DAYS[1] + 1) if free_starts(b.sim.state, people, d, duration)]
        day = self._late_morning(b, days, lambda d: free_starts(b.sim.state, people, d, duration)[0])
        call = C("find_free_slot", {"day": day, "attendees": people, "duration": duration})
        b.turn(self._say(b, "free_slot", day=day, people=self._people(b, people), length=_length(duration)),
               [call], [free_starts(b.sim.state, people, day, duration)[0]])

    def contact(self, b: TaskBuilder) -> None:
        cid = b.rng.choice(sorted(b.sim.state["contacts"]))
        person = b.sim.state["contacts"][cid]
        b.turn(self._say(b, "contact", name=person["name"]), [C("find_contact", {"name": person["name"]})],
               [cid, person["team"]])

    def inbox(self, b: TaskBuilder) -> None:
        me = self._me(b)
        intro, plan = self._login(b, me)
        mine = [m for m in b.sim.state["messages"] if m["to"] == me]
        unread = sum(m["unread"] for m in mine)
        if b.rng.random() < 0.5 or not unread:
            answer = b.sim.state["contacts"][mine[-1]["from"]]["name"]
            plan, text = plan + [C("read_inbox", {})], self._say(b, "inbox_latest")
        else:
            answer = unread
            plan, text = plan + [C("read_inbox", {"unread_only": True})], self._say(b, "inbox_unread")
        b.turn(intro + text, plan, [answer])

    # -- changes -------------------------------------------------------------------------
    def _booking(self, b: TaskBuilder, me: str):
        """A bookable meeting for ``me``: guests, day, duration, a free room and its free starts."""
        guests = self._others(b, me, b.rng.choice([1, 2]))
        duration = b.rng.choice([1, 1, 2])
        state, people = b.sim.state, guests + [me]
        options = [(d, r) for d in range(DAYS[0], DAYS[1] + 1) for r in sorted(state["rooms"])
                   if free_starts(state, people, d, duration, r)]
        day, room = self._late_morning(b, options, lambda o: free_starts(state, people, o[0], duration, o[1])[0])
        return guests, day, duration, room, free_starts(state, people, day, duration, room)

    def schedule(self, b: TaskBuilder, hide: str | None = None, first_free: bool = False) -> str:
        """Book a meeting at a stated hour, or at the earliest common free hour (``first_free``).

        ``hide`` withholds the "passcode" or the "start" hour from the request.
        """
        me = self._me(b)
        intro, plan = self._login(b, me, hide_passcode=hide == "passcode")
        guests, day, duration, room, starts = self._booking(b, me)
        start = starts[0] if first_free else b.rng.choice(starts)
        title = b.rng.choice(TITLES)
        event = next_event_id(b.sim.state)
        if first_free:
            plan = plan + [C("find_free_slot", {"day": day, "attendees": sorted(guests + [me]), "duration": duration,
                                                "room": room})]
        plan = plan + [C("create_event", {"title": title, "day": day, "start": start, "duration": duration,
                                          "attendees": guests, "room": room})]
        key = "first_free" if first_free else "schedule_nostart" if hide == "start" else "schedule"
        text = intro + self._say(b, key, title=title, day=day, start=start, length=_length(duration),
                                 people=self._people(b, guests), room=room)
        outputs = [event, start] if first_free else [event]
        b.request(text, plan, outputs, withheld=self._hidden(b, me, hide, start))
        return event

    def _hidden(self, b: TaskBuilder, me: str, hide: str | None, start: int) -> tuple | None:
        """The (param, value, label) to withhold; a passcode only while ``me`` still has to log in."""
        if hide == "passcode":
            if b.sim.session.get("user") == me:
                raise GeneratorError("a withheld passcode needs a turn that logs in")
            return "passcode", b.sim.state["contacts"][me]["passcode"], "passcode"
        if hide == "start":
            return "start", start, "start hour"
        return None

    def move(self, b: TaskBuilder, hide: str | None = None) -> str:
        me = self._me(b)
        state = b.sim.state
        mine = self._scheduled(b, lambda ev: ev["organizer"] == me)
        event = b.rng.choice(mine)
        ev = state["events"][event]
        targets = [(d, h) for d in range(DAYS[0], DAYS[1] + 1)
                   for h in free_starts(state, ev["attendees"], d, ev["duration"], ev["room"], skip=event)
                   if (d, h) != (ev["day"], ev["start"])]
        day, start = b.rng.choice(targets)
        intro, plan = self._login(b, me, hide_passcode=hide == "passcode")
        plan = plan + [C("move_event", {"event_id": event, "day": day, "start": start})]
        key = "move_nostart" if hide == "start" else "move"
        text = intro + self._say(b, key, event=event, day=day, start=start)
        b.request(text, plan, withheld=self._hidden(b, me, hide, start))
        return event

    def cancel(self, b: TaskBuilder, late: bool = False) -> None:
        me = self._me(b)
        event = b.rng.choice(self._scheduled(b, lambda ev: ev["organizer"] == me))
        intro, plan = self._login(b, me)
        b.request(intro + self._say(b, "cancel", event=event),
               plan + [C("cancel_event", {"event_id": event})], late="cancel_event" if late else None)

    def _invitable(self, b: TaskBuilder, events: list[str]) -> list[tuple[str, str]]:
        """(event, person) pairs where the person is free and the room has a seat left."""
        state = b.sim.state
        pairs = []
        for e in events:
            ev = state["events"][e]
            if ev["room"] and len(ev["attendees"]) >= state["rooms"][ev["room"]]["capacity"]:
                continue
            pairs += [(e, p) for p in sorted(state["contacts"]) if p not in ev["attendees"]
                      and not conflicts(state, [p], ev["day"], ev["start"], ev["duration"])]
        return pairs

    def invite(self, b: TaskBuilder, event: str | None = None, late: bool = False,
               hide: str | None = None) -> None:
        """Invite someone, named but not identified, to ``event`` (default: one of mine)."""
        me = self._me(b)
        state = b.sim.state
        mine = self._scheduled(b, lambda ev: ev["organizer"] == me)
        options = self._invitable(b, [event]) if event else []
        event, guest = b.rng.choice(options or self._invitable(b, mine))
        name = state["contacts"][guest]["name"]
        intro, plan = self._login(b, me, hide_passcode=hide == "passcode")
        plan = plan + [C("find_contact", {"name": name}), C("invite", {"event_id": event, "contact_id": guest})]
        b.request(intro + self._say(b, "invite", name=name, event=event), plan,
               withheld=self._hidden(b, me, hide, 0), late="invite" if late else None)

    def remind(self, b: TaskBuilder, event: str, late: bool = False) -> None:
        """A reminder on ``event``; when nobody is logged in yet, one of its attendees asks."""
        me = self._me(b, sorted(b.sim.state["events"][event]["attendees"]))
        minutes = b.rng.choice([5, 10, 15, 30, 60])
        channel = b.rng.choice(["email", "sms", "popup"])
        intro, plan = self._login(b, me)
        plan = plan + [C("set_reminder", {"event_id": event, "minutes_before": minutes, "channel": channel})]
        b.request(intro + self._say(b, "remind", event=event, minutes=minutes, channel=channel), plan,
               late="set_reminder" if late else None)

    def message(self, b: TaskBuilder, late: bool = False) -> None:
        me = self._me(b)
        (to,) = self._others(b, me, 1)
        body = b.rng.choice(BODIES)
        args = {"to": to, "body": body}
        urgent = b.rng.random() < 0.3
        if urgent:
            args["priority"] = "urgent"
        intro, plan = self._login(b, me)
        text = self._say(b, "message_urgent" if urgent else "message", name=b.sim.state["contacts"][to]["name"],
                         cid=to, body=body)
        b.request(intro + text, plan + [C("send_message", args)], late="send_message" if late else None)

    # -- constraint traps: the reference only looks something up and reports it ------------
    def trap_organizer(self, b: TaskBuilder) -> None:
        """Ask to cancel or move an event that the user attends but someone else organizes."""
        state = b.sim.state
        guests = sorted({p for e in self._scheduled(b) for p in state["events"][e]["attendees"]
                         if p != state["events"][e]["organizer"]})
        me = self._me(b, guests)
        event = b.rng.choice(self._scheduled(b, lambda ev: me in ev["attendees"] and ev["organizer"] != me))
        ev = state["events"][event]
        day = DAYS[0] + ev["day"] % DAYS[1]  # another day; the organizer check refuses it first anyway
        forbidden = b.rng.choice([C("cancel_event", {"event_id": event}),
                                  C("move_event", {"event_id": event, "day": day, "start": ev["start"]})])
        intro, plan = self._login(b, me)
        key = "trap_cancel" if forbidden.name == "cancel_event" else "trap_move"
        text = intro + self._say(b, key, event=event, day=day, start=ev["start"])
        b.trap(text, forbidden, "organizer_only", plan + [C("get_event", {"event_id": event})],
               [state["contacts"][ev["organizer"]]["name"]])

    def trap_hours(self, b: TaskBuilder) -> None:
        """Ask for a meeting outside working hours, plus the earliest legal slot of that length."""
        me = self._me(b)
        guest = self._others(b, me, 1)
        start, duration = b.rng.choice(OFF_HOURS)
        state = b.sim.state
        days = [d for d in range(DAYS[0], DAYS[1] + 1) if free_starts(state, guest + [me], d, duration)]
        day = self._late_morning(b, days, lambda d: free_starts(state, guest + [me], d, duration)[0])
        title = b.rng.choice(TITLES)
        forbidden = C("create_event", {"title": title, "day": day, "start": start, "duration": duration,
                                       "attendees": guest})
        lookup = C("find_free_slot", {"day": day, "attendees": sorted(guest + [me]), "duration": duration})
        intro, plan = self._login(b, me)
        text = intro + self._say(b, "trap_hours", title=title, people=self._people(b, guest), day=day,
                                 start=start, length=_length(duration))
        b.trap(text, forbidden, "working_hours", plan + [lookup],
               [free_starts(state, guest + [me], day, duration)[0]])

    def trap_busy(self, b: TaskBuilder) -> None:
        """Ask to book a colleague at an hour they already have a meeting."""
        state = b.sim.state
        me = self._me(b)
        busy = [(e, p) for e in self._scheduled(b) for p in state["events"][e]["attendees"] if p != me]
        event, guest = b.rng.choice(busy)
        ev = state["events"][event]
        intro, plan = self._login(b, me)
        title = b.rng.choice(TITLES)
        forbidden = C("create_event", {"title": title, "day": ev["day"], "start": ev["start"], "duration": 1,
                                       "attendees": [guest]})
        text = self._say(b, "trap_busy", title=title, people=self._people(b, [guest]), day=ev["day"],
                         start=ev["start"], name=state["contacts"][guest]["name"])
        b.trap(intro + text, forbidden, "no_double_booking",
               plan + [C("list_events", {"day": ev["day"], "attendee": guest})], [event])

    # -- difficulty ----------------------------------------------------------------------
    def compose(self, b: TaskBuilder, difficulty: int) -> str:
        rng = b.rng
        hide = rng.choice(["passcode", "start"])
        if difficulty == 1:
            shape = rng.choice(["day_schedule", "event_info", "free_slot", "contact"])
            getattr(self, shape)(b)
        elif difficulty == 2:
            shape = rng.choice(["cancel", "invite", "message", "inbox", "event_info+remind", "first_free"])
            if shape == "event_info+remind":
                self.remind(b, event=self.event_info(b))
            elif shape == "first_free":
                self.schedule(b, first_free=True)
            else:
                getattr(self, shape)(b)
        elif difficulty == 3:
            shape = rng.choice(["withheld_move+event_info", "withheld_schedule+remind",
                                "event_info+trap_organizer", "contact+trap_hours", "inbox+trap_busy"])
            if shape == "withheld_move+event_info":
                self.move(b, hide=hide)
                self.event_info(b)
            elif shape == "withheld_schedule+remind":
                self.remind(b, event=self.schedule(b, hide=hide))
            else:
                first, trap = shape.split("+")
                getattr(self, first)(b)
                getattr(self, trap)(b)
        else:
            shape = rng.choice(["withheld_schedule+late_invite+message", "day_schedule+withheld_move+late_remind",
                                "withheld_invite+late_message+first_free", "inbox+late_cancel+withheld_schedule"])
            if shape.startswith("withheld_schedule"):
                self.invite(b, event=self.schedule(b, hide=hide), late=True)
                self.message(b)
            elif shape.startswith("day_schedule"):
                self.day_schedule(b)
                self.remind(b, event=self.move(b, hide=hide), late=True)
            elif shape.startswith("withheld_invite"):
                self.invite(b, hide="passcode")
                self.message(b, late=True)
                self.schedule(b, first_free=True)
            else:
                self.inbox(b)
                self.cancel(b, late=True)
                self.schedule(b, hide="start")
        return shape
