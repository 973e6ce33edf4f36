"""Team calendar and messaging: events, rooms, contacts, inboxes and reminders.

A work week has days 1 to 5 and whole-hour slots; events hold sorted attendee ids so that two
requests naming the same people in another order leave the same state.
"""

from __future__ import annotations

from typing import Literal

from seal_envs.core.backend import Backend, PolicyViolation, ToolError, tool

DAYS = (1, 5)
OPEN, CLOSE = 9, 18  # meetings must start at or after OPEN and end by CLOSE


# -- pure views of the state, shared with the generator so both agree on what is free ---------
def overlaps(event: dict, day: int, start: int, duration: int) -> bool:
    return (event["status"] == "scheduled" and event["day"] == day
            and event["start"] < start + duration and start < event["start"] + event["duration"])


def conflicts(state: dict, people, day: int, start: int, duration: int, skip: str = "") -> list[tuple[str, str]]:
    """(person, event id) pairs that would be double-booked; ``skip`` is the event being moved.
    Ordered by event id, then person; only the overlapping events are sorted."""
    events = state["events"]
    hits = sorted(eid for eid, ev in events.items() if eid != skip and overlaps(ev, day, start, duration))
    if not hits:
        return []
    ordered = sorted(people)
    return [(p, eid) for eid in hits for p in ordered if p in events[eid]["attendees"]]


def room_taken(state: dict, room: str, day: int, start: int, duration: int, skip: str = "") -> bool:
    return bool(room) and any(eid != skip and ev["room"] == room and overlaps(ev, day, start, duration)
                              for eid, ev in state["events"].items())


def free_starts(state: dict, people, day: int, duration: int, room: str = "", skip: str = "") -> list[int]:
    """Every start hour on ``day`` where all ``people`` (and ``room``) are free for ``duration``.

    The same hours as asking :func:`conflicts` and :func:`room_taken` for each hour, but the
    events that can block (scheduled that day, holding one of ``people`` or the room) are
    gathered once: the generator asks this thousands of times per task."""
    people = list(people)
    busy = [(ev["start"], ev["start"] + ev["duration"]) for eid, ev in state["events"].items()
            if eid != skip and ev["status"] == "scheduled" and ev["day"] == day
            and ((bool(room) and ev["room"] == room) or any(p in ev["attendees"] for p in people))]
    return [h for h in range(OPEN, CLOSE - duration + 1)
            if not any(begin < h + duration and h < end for begin, end in busy)]


def next_event_id(state: dict) -> str:
    return f"EV-{1 + max(int(e.split('-')[1]) for e in state['events'])}"


def next_message_id(state: dict) -> str:
    return f"M-{1 + max((int(m['message_id'].split('-')[1]) for m in state['messages']), default=400)}"


class CalendarBackend(Backend):
    domain = "calendar"
    POLICIES = {
        "logged_in": "Every change, and reading an inbox, is done as the user logged in with login; log in first.",
        "organizer_only": "Only the organizer of an event (the logged-in user who created it) can cancel or move it.",
        "working_hours": f"Meetings must lie within working hours: start at {OPEN} or later and end by {CLOSE}.",
        "no_double_booking": "No attendee may be in two scheduled events at the same time.",
    }

    # -- helpers (not tools) -------------------------------------------------------------
    def _contact(self, contact_id: str, param: str) -> dict:
        person = self.record("contacts", contact_id, param, "contact")
        return person

    def _event(self, event_id: str) -> dict:
        ev = self.record("events", event_id, "event_id", "event")
        if ev["status"] != "scheduled":
            raise ToolError(f"event {event_id} is {ev['status']}", param="event_id")
        return ev

    def _user(self) -> str:
        user = self.session.get("user")
        if user is None:
            raise PolicyViolation("logged_in", "nobody is logged in; call login first")
        return user

    def _require_organizer(self, event_id: str, ev: dict) -> None:
        if ev["organizer"] != self._user():
            raise PolicyViolation("organizer_only", f"only the organizer {ev['organizer']} can change {event_id}")

    def _check_slot(self, people, day: int, start: int, duration: int, room: str, skip: str = "") -> None:
        """The checks every placement shares, policies before the room so the rule is reported."""
        if start < OPEN or start + duration > CLOSE:
            raise PolicyViolation("working_hours", f"{start}:00 for {duration}h is outside working hours {OPEN}-{CLOSE}")
        clash = conflicts(self.state, people, day, start, duration, skip)
        if clash:
            person, eid = clash[0]
            raise PolicyViolation("no_double_booking", f"{person} is already in {eid} at that time")
        if room:
            self.record("rooms", room, "room", "room")
            if self.state["rooms"][room]["capacity"] < len(people):
                raise ToolError(f"room {room} seats only {self.state['rooms'][room]['capacity']}", param="room")
            if room_taken(self.state, room, day, start, duration, skip):
                raise ToolError(f"room {room} is taken at that time", param="room")

    def _view(self, event_id: str) -> dict:
        ev = self.state["events"][event_id]
        organizer = self.state["contacts"][ev["organizer"]]["name"]
        return {"event_id": event_id, "title": ev["title"], "day": ev["day"], "start": ev["start"],
                "duration": ev["duration"], "organizer": ev["organizer"], "organizer_name": organizer,
                "attendees": list(ev["attendees"]), "room": ev["room"], "status": ev["status"]}

    # -- tools: reading ------------------------------------------------------------------
    @tool
    def login(self, user_id: str, passcode: str) -> dict:
        """Log in as a team member; every change is then made on their behalf.

        Args:
            user_id: The team member's contact id, like P-412.
            passcode: The member's 4-digit passcode.
        """
        person = self._contact(user_id, "user_id")
        if person["passcode"] != passcode:
            raise ToolError("passcode does not match", param="passcode")
        self.session["user"] = user_id
        return {"logged_in": user_id, "name": person["name"]}

    @tool
    def find_contact(self, name: str) -> list:
        """Find team members whose name contains the given text.

        Args:
            name: All or part of the person's name, like Bob Lee.
        """
        wanted = name.strip().lower()
        found = [{"contact_id": cid, "name": p["name"], "team": p["team"]}
                 for cid, p in sorted(self.state["contacts"].items()) if wanted and wanted in p["name"].lower()]
        if not found:
            raise ToolError(f"no contact matches '{name}'", param="name")
        return found

    @tool
    def get_event(self, event_id: str) -> dict:
        """Details of one event: time, organizer, attendees, room and status.

        Args:
            event_id: The event id, like EV-301.
        """
        self.record("events", event_id, "event_id", "event")
        return self._view(event_id)

    @tool(schema={"day": {"minimum": DAYS[0], "maximum": DAYS[1]}})
    def list_events(self, day: int, attendee: str = "") -> list:
        """Scheduled events on a day, earliest first, optionally only those one person attends.

        Args:
            day: The day of the work week, 1 to 5.
            attendee: Only events this contact id attends; leave empty for everyone's.
        """
        if attendee:
            self._contact(attendee, "attendee")
        events = [eid for eid, ev in self.state["events"].items() if ev["status"] == "scheduled"
                  and ev["day"] == day and (not attendee or attendee in ev["attendees"])]
        return [self._view(eid) for eid in sorted(events, key=lambda e: (self.state["events"][e]["start"], e))]

    @tool(schema={"day": {"minimum": DAYS[0], "maximum": DAYS[1]}, "duration": {"minimum": 1, "maximum": 8}})
    def find_free_slot(self, day: int, attendees: list[str], duration: int = 1, room: str = "") -> dict:
        """The earliest start hour on a day when all the given people (and the room) are free.

        Args:
            day: The day of the work week, 1 to 5.
            attendees: Contact ids of everyone who must be free.
            duration: Length of the meeting in whole hours.
            room: Optional room id, like RM-12, that must be free too.
        """
        for p in attendees:
            self._contact(p, "attendees")
        if room and room not in self.state["rooms"]:
            raise ToolError(f"room {room} not found", param="room")
        starts = free_starts(self.state, attendees, day, duration, room)
        if not starts:
            raise ToolError(f"no common free {duration}h slot on day {day}", param="day",
                            hint="try another day or a shorter meeting")
        return {"day": day, "start": starts[0], "end": starts[0] + duration}

    @tool(policies=("logged_in",))
    def read_inbox(self, unread_only: bool = False) -> list:
        """Messages to the logged-in user, newest first.

        Args:
            unread_only: Only messages not read yet.
        """
        user = self._user()
        names = self.state["contacts"]
        return [{"message_id": m["message_id"], "from": m["from"], "from_name": names[m["from"]]["name"],
                 "body": m["body"], "priority": m["priority"], "unread": m["unread"]}
                for m in reversed(self.state["messages"])
                if m["to"] == user and (m["unread"] or not unread_only)]

    # -- tools: changing -----------------------------------------------------------------
    @tool(writes=True, policies=("logged_in", "working_hours", "no_double_booking"),
          schema={"day": {"minimum": DAYS[0], "maximum": DAYS[1]}, "start": {"minimum": 0, "maximum": 23},
                  "duration": {"minimum": 1, "maximum": 8}, "title": {"minLength": 1}})
    def create_event(self, title: str, day: int, start: int, duration: int, attendees: list[str],
                     room: str = "") -> dict:
        """Schedule a new event organized by the logged-in user, who always attends it.

        Args:
            title: Short name of the meeting, like Budget review.
            day: The day of the work week, 1 to 5.
            start: Start hour on a 24-hour clock, like 14.
            duration: Length in whole hours.
            attendees: Contact ids of the people invited besides the organizer.
            room: Optional room id, like RM-12.
        """
        user = self._user()
        for p in attendees:
            self._contact(p, "attendees")
        people = sorted(set(attendees) | {user})
        self._check_slot(people, day, start, duration, room)
        event_id = next_event_id(self.state)
        self.state["events"][event_id] = {"title": title, "day": day, "start": start, "duration": duration,
                                          "organizer": user, "attendees": people, "room": room,
                                          "status": "scheduled", "reminders": {}}
        return {"event_id": event_id, "day": day, "start": start, "attendees": people}

    @tool(writes=True, policies=("logged_in", "organizer_only", "working_hours", "no_double_booking"),
          schema={"day": {"minimum": DAYS[0], "maximum": DAYS[1]}, "start": {"minimum": 0, "maximum": 23}})
    def move_event(self, event_id: str, day: int, start: int) -> dict:
        """Move an event to another day or hour; its length, room and attendees stay.

        Args:
            event_id: The event id, like EV-301.
            day: The new day of the work week, 1 to 5.
            start: The new start hour on a 24-hour clock.
        """
        ev = self._event(event_id)
        self._require_organizer(event_id, ev)
        self._check_slot(ev["attendees"], day, start, ev["duration"], ev["room"], skip=event_id)
        ev["day"], ev["start"] = day, start
        return {"event_id": event_id, "day": day, "start": start}

    @tool(writes=True, policies=("logged_in", "organizer_only"))
    def cancel_event(self, event_id: str) -> dict:
        """Cancel an event; it stays on record as cancelled and frees everyone's time.

        Args:
            event_id: The event id, like EV-301.
        """
        ev = self._event(event_id)
        self._require_organizer(event_id, ev)
        ev["status"] = "cancelled"
        return {"event_id": event_id, "status": "cancelled"}

    @tool(writes=True, policies=("logged_in", "no_double_booking"))
    def invite(self, event_id: str, contact_id: str) -> dict:
        """Add a person to an event's attendees.

        Args:
            event_id: The event id, like EV-301.
            contact_id: The contact id of the person to add, like P-412.
        """
        ev = self._event(event_id)
        self._user()
        self._contact(contact_id, "contact_id")
        if contact_id in ev["attendees"]:
            raise ToolError(f"{contact_id} already attends {event_id}", param="contact_id")
        people = sorted(ev["attendees"] + [contact_id])
        self._check_slot(people, ev["day"], ev["start"], ev["duration"], ev["room"], skip=event_id)
        ev["attendees"] = people
        return {"event_id": event_id, "attendees": people}

    @tool(writes=True, policies=("logged_in",))
    def set_reminder(self, event_id: str, minutes_before: Literal[5, 10, 15, 30, 60],
                     channel: Literal["email", "sms", "popup"]) -> dict:
        """Remind the logged-in user before an event they attend; a new reminder replaces the old.

        Args:
            event_id: The event id, like EV-301.
            minutes_before: How many minutes before the start to remind.
            channel: How to deliver the reminder.
        """
        ev = self._event(event_id)
        user = self._user()
        if user not in ev["attendees"]:
            raise ToolError(f"{user} does not attend {event_id}", param="event_id")
        ev["reminders"][user] = {"minutes_before": minutes_before, "channel": channel}
        return {"event_id": event_id, "minutes_before": minutes_before, "channel": channel}

    @tool(writes=True, policies=("logged_in",), schema={"body": {"minLength": 1}})
    def send_message(self, to: str, body: str, priority: Literal["normal", "urgent"] = "normal") -> dict:
        """Send a short message from the logged-in user to a team member's inbox.

        Args:
            to: The recipient's contact id, like P-412.
            body: The text of the message, exactly as the user worded it.
            priority: Mark the message urgent only when the user asks.
        """
        user = self._user()
        self._contact(to, "to")
        message_id = next_message_id(self.state)
        self.state["messages"].append({"message_id": message_id, "from": user, "to": to, "body": body,
                                       "priority": priority, "unread": True})
        return {"message_id": message_id, "to": to, "status": "sent"}
