"""Calendar domain: a small team's events, rooms, contacts, messages and reminders, with login,
organizer-only changes, working hours and no double-booking."""

from .backend import CalendarBackend
from .generator import CalendarGenerator

GENERATOR = CalendarGenerator()

__all__ = ["CalendarBackend", "CalendarGenerator", "GENERATOR"]
