"""Seeded travel tasks: from a fare look-up to multi-turn bookings with traps and late tools."""

from __future__ import annotations

import random

from seal_envs.core.generator import DomainGenerator, Phrasebook, TaskBuilder
from seal_envs.core.names import CITIES, FIRST, LAST, pick_distinct
from seal_envs.core.types import ToolCall as C

from .backend import (BAG_FEE, CABIN_ROWS, CABINS, MAX_BAGS, POINTS_PER_FARE, SEAT_LETTERS, TravelBackend,
                      can_cancel, next_booking_id)

REASON_TEXT = {"change_of_plans": "a change of plans", "illness": "illness", "schedule_conflict": "a schedule conflict"}

PHRASES = Phrasebook(
    train={
        "intro": [
            "I'm {first} {last}, member {mid}.",
            "This is {first} {last}, membership id {mid}.",
            "My name is {first} {last} and my membership id is {mid}.",
        ],
        "intro_nolast": [
            "I'm {first}, member {mid}.",
            "This is {first}, membership id {mid}.",
            "My membership id is {mid}, I'm {first}.",
        ],
        "intro_again": [
            "It's {first} again (member {mid}).",
            "{first} here again, member {mid}.",
            "Still {first}, membership {mid}.",
        ],
        "flight_info": [
            "How many {cabin} seats are left on {fid}, and what does one cost?",
            "What's the {cabin} fare on flight {fid} and how many seats remain?",
            "Check flight {fid} for me: {cabin} price and seats left?",
            "Is there still room in {cabin} on {fid}? How much is it?",
        ],
        "booking_info": [
            "Which flight is booking {bid} on, and what day does it leave?",
            "Can you look up booking {bid}? I need the flight number and the departure day.",
            "What flight and day is my reservation {bid} for?",
        ],
        "points": [
            "How many loyalty points does member {mid} have?",
            "What's the points balance on membership {mid}?",
            "Check my loyalty points please, membership id {mid}.",
        ],
        "search": [
            "What's the cheapest {cabin} fare from {origin} to {dest}? Which flight is it?",
            "Find me the lowest {cabin} price for flying {origin} to {dest}, with the flight number.",
            "Which flight from {origin} to {dest} is cheapest in {cabin}, and how much?",
        ],
        "book": [
            "Please book me on {what}{cabin_part}. What's my booking number and the price?",
            "I'd like to fly on {what}{cabin_part}. Book it and tell me the booking id and fare.",
            "Book {what}{cabin_part} for me, and give me the booking number and what it cost.",
        ],
        "what_cheapest": [
            "the cheapest flight from {origin} to {dest}",
            "the lowest-fare flight from {origin} to {dest}",
            "whichever {origin} to {dest} flight is cheapest",
        ],
        "what_day": [
            "the flight from {origin} to {dest} on day {day}",
            "the {origin} to {dest} flight departing on day {day}",
            "the day {day} flight from {origin} to {dest}",
        ],
        "cabin_part": [" in {cabin}", ", {cabin} class", " ({cabin} cabin)"],
        "seat": [
            "Please put me in seat {seat} on booking {bid}.",
            "I'd like seat {seat} for booking {bid}.",
            "Can you assign seat {seat} on my booking {bid}?",
        ],
        "seat_open": [
            "I'd like to choose my seat on booking {bid}.",
            "I want to pick my own seat on booking {bid}.",
            "Can you change the seat on my booking {bid}? I know which one I want.",
        ],
        "bags": [
            "Add {bags} to booking {bid}. What's the fee?",
            "I need {bags} on my booking {bid}; how much will that cost?",
            "Please put {bags} on {bid} and tell me the fee.",
        ],
        "cancel": [
            "Please cancel {target}.{reason_part} How much will I get back?",
            "I need to cancel {target}.{reason_part} What's the refund?",
            "Cancel {target} for me, please.{reason_part} Tell me the refund amount.",
        ],
        "target_id": ["booking {bid}", "my reservation {bid}", "my booking {bid}"],
        "target_city": ["my trip to {city}", "my flight to {city}", "my booking to {city}"],
        "reason_part": [" The reason is {why}.", " It's because of {why}.", " Reason: {why}."],
        "trap_cancel": [
            "Please cancel booking {bid} because of {why}, and remind me which day it departs.",
            "I want to cancel {bid} (reason: {why}). Also, what day does that flight leave?",
            "Cancel my reservation {bid}, it's due to {why}. And which day was it departing?",
        ],
        "trap_bags": [
            "Add {bags} to booking {bid}. And how many bags does it have right now?",
            "I need {bags} on {bid}; also tell me how many bags are on it already.",
            "Put {bags} on my booking {bid}, and let me know its current bag count.",
        ],
    },
    ood={
        "intro": ["Passenger {first} {last} speaking, loyalty number {mid}."],
        "intro_nolast": ["Passenger {first} speaking, loyalty number {mid}."],
        "flight_info": ["Seat availability and {cabin} fare on {fid}?"],
        "booking_info": ["Reservation {bid}: which flight, departing when?"],
        "points": ["Miles balance for loyalty number {mid}?"],
        "search": ["Lowest {cabin} airfare {origin} -> {dest}, and its flight code?"],
        "book": ["Reserve {what}{cabin_part}; send me the confirmation code and fare."],
        "seat": ["Seat {seat} on {bid}, if you'd be so kind."],
        "seat_open": ["Booking {bid} needs a seat, and I have one in mind."],
        "bags": ["Throw {bags} onto reservation {bid}; what's the damage?"],
        "cancel": ["Scrap {target}.{reason_part} Refund amount?"],
        "trap_cancel": ["Drop reservation {bid} on account of {why}; and its departure day?"],
        "trap_bags": ["Load {bags} onto {bid}; bags on it so far?"],
    },
)


def bag_text(n: int) -> str:
    return "1 checked bag" if n == 1 else f"{n} checked bags"


def distinct_names(rng: random.Random, n: int) -> list[tuple[str, str]]:
    """``n`` distinct (first, last) names. Not ``names.person_names``: it orders a set of strings,
    which follows the per-process string hash, so tasks would differ between processes."""
    names: list[tuple[str, str]] = []
    while len(names) < n:
        name = (rng.choice(FIRST), rng.choice(LAST))
        if name not in names:
            names.append(name)
    return names


def free_seat(rng: random.Random, bookings: dict, flight_id: str, cabin: str) -> str:
    """A seat in ``cabin`` that no confirmed booking on the flight holds."""
    taken = {b["seat"] for b in bookings.values() if b["flight"] == flight_id and b["status"] == "confirmed"}
    low, high = CABIN_ROWS[cabin]
    return rng.choice([f"{r}{c}" for r in range(low, high + 1) for c in SEAT_LETTERS if f"{r}{c}" not in taken])


class TravelGenerator(DomainGenerator):
    domain = "travel"
    backend = TravelBackend

    def initial_state(self, rng: random.Random) -> dict:
        today = rng.randint(3, 20)
        cities = pick_distinct(rng, CITIES, 6)
        routes = rng.sample([(a, b) for a in cities for b in cities if a != b], 4)
        numbers = iter(rng.sample(range(1000, 10000), 12))
        flights = {}
        for r, (origin, dest) in enumerate(routes):
            n = rng.randint(2, 3)
            days = rng.sample(range(today + 2, today + 15), n)
            if r == 0:
                days[0] = today + 1  # one flight always leaves tomorrow: the cancellation trap needs it
            for day, fare in zip(days, rng.sample(range(80, 400, 5), n)):  # distinct fares: "cheapest" is unique
                flights[f"FL-{next(numbers)}"] = {"origin": origin, "destination": dest, "day": day, "cabins": {
                    "economy": {"price": fare, "seats_left": rng.randint(3, 40)},
                    "premium": {"price": fare * 8 // 5, "seats_left": rng.randint(3, 12)},
                    "business": {"price": fare * 3, "seats_left": rng.randint(3, 8)}}}
        passengers = {}
        for (first, last), number in zip(distinct_names(rng, 4), rng.sample(range(1000, 10000), 4)):
            passengers[f"M-{number}"] = {"first_name": first, "last_name": last, "points": rng.randint(100, 4000)}
        return {"today": today, "flights": flights, "passengers": passengers,
                "bookings": self._initial_bookings(rng, today, flights, passengers)}

    def _initial_bookings(self, rng: random.Random, today: int, flights: dict, passengers: dict) -> dict:
        """One or two bookings each; exactly one passenger also holds tomorrow's flight."""
        tomorrow = next(f for f, v in sorted(flights.items()) if v["day"] == today + 1)
        later = sorted(f for f in flights if f != tomorrow)
        mids = sorted(passengers)
        holder = rng.choice(mids)
        base = rng.randint(5000, 8999)
        bookings: dict = {}
        for mid in mids:
            picks = rng.sample(later, rng.randint(1, 2)) + ([tomorrow] if mid == holder else [])
            for fid in picks:
                cabin = rng.choice(("economy", "economy", "premium", "business"))
                price = flights[fid]["cabins"][cabin]["price"]
                bags = rng.randint(0, 1)
                seat = free_seat(rng, bookings, fid, cabin) if rng.random() < 0.5 else None
                earned = price // POINTS_PER_FARE
                passengers[mid]["points"] += earned
                bookings[f"BK-{base + len(bookings)}"] = {
                    "passenger": mid, "flight": fid, "cabin": cabin, "seat": seat, "bags": bags,
                    "paid": price + bags * BAG_FEE, "points_earned": earned, "status": "confirmed"}
        return bookings

    # -- reading the simulation --------------------------------------------------------
    def _say(self, b: TaskBuilder, intent: str, **values) -> str:
        return PHRASES.say(b.rng, b.split, intent, **values)

    def _passenger(self, b: TaskBuilder, fresh: bool = False) -> str:
        """A passenger; ``fresh`` ones are not verified yet, so a withheld last name is needed."""
        mids = sorted(b.sim.state["passengers"])
        if fresh:
            mids = [m for m in mids if m != b.sim.session.get("verified")]
        return b.rng.choice(mids)

    def _bookings(self, b: TaskBuilder, owner: str | None = None, cancellable: bool | None = None) -> list[str]:
        st = b.sim.state
        return [bid for bid, bk in sorted(st["bookings"].items())
                if bk["status"] == "confirmed" and owner in (None, bk["passenger"])
                and cancellable in (None, can_cancel(st, bk))]

    def _route(self, b: TaskBuilder, avoid: set[str] = frozenset()) -> tuple[str, str, list[str]]:
        """A route and its flights, earliest first; some flight on it must not be in ``avoid``."""
        flights = b.sim.state["flights"]
        routes = sorted({(f["origin"], f["destination"]) for fid, f in flights.items() if fid not in avoid})
        origin, dest = b.rng.choice(routes)
        on_route = sorted((f["day"], fid) for fid, f in flights.items()
                          if (f["origin"], f["destination"]) == (origin, dest))
        return origin, dest, [fid for _, fid in on_route]

    def _identify(self, b: TaskBuilder, mid: str, withhold_last: bool = False) -> tuple[str, list[C]]:
        """The user's self-introduction and the verification call it calls for (none if already verified)."""
        p = b.sim.state["passengers"][mid]
        if b.sim.session.get("verified") == mid:
            return self._say(b, "intro_again", first=p["first_name"], mid=mid), []
        intro = self._say(b, "intro_nolast" if withhold_last else "intro", first=p["first_name"],
                          last=p["last_name"], mid=mid)
        return intro, [C("verify_passenger", {"membership_id": mid, "last_name": p["last_name"]})]

    def _withheld(self, b: TaskBuilder, withhold: str | None, mid: str, **values) -> tuple[str, object, str] | None:
        """What a request holds back: the passenger's last name, or the named one of ``values``."""
        if withhold == "last_name":
            return "last_name", b.sim.state["passengers"][mid]["last_name"], "last name"
        return None if withhold is None else (withhold, values[withhold], withhold)

    # -- read intents ------------------------------------------------------------------
    def flight_info(self, b: TaskBuilder) -> None:
        fid = b.rng.choice(sorted(b.sim.state["flights"]))
        cabin = b.rng.choice(CABINS)
        fare = b.sim.state["flights"][fid]["cabins"][cabin]
        b.turn(self._say(b, "flight_info", fid=fid, cabin=cabin), [C("get_flight", {"flight_id": fid})],
               [fare["seats_left"], fare["price"]])

    def booking_info(self, b: TaskBuilder) -> None:
        bid = b.rng.choice(sorted(b.sim.state["bookings"]))
        fid = b.sim.state["bookings"][bid]["flight"]
        b.turn(self._say(b, "booking_info", bid=bid), [C("get_booking", {"booking_id": bid})],
               [fid, b.sim.state["flights"][fid]["day"]])

    def points(self, b: TaskBuilder, mid: str | None = None) -> None:
        mid = mid or self._passenger(b)
        b.turn(self._say(b, "points", mid=mid), [C("get_loyalty_points", {"membership_id": mid})],
               [b.sim.state["passengers"][mid]["points"]])

    def search(self, b: TaskBuilder) -> None:
        origin, dest, on_route = self._route(b)
        cabin = b.rng.choice(CABINS)
        price = {fid: b.sim.state["flights"][fid]["cabins"][cabin]["price"] for fid in on_route}
        best = min(on_route, key=price.__getitem__)
        b.turn(self._say(b, "search", origin=origin, dest=dest, cabin=cabin),
               [C("search_flights", {"origin": origin, "destination": dest})], [best, price[best]])

    # -- write intents -----------------------------------------------------------------
    def book(self, b: TaskBuilder, withhold: str | None = None) -> tuple[str, str]:
        """Book by route (cheapest or a given day); ``withhold`` is None, 'last_name' or 'cabin'.
        Returns the new booking id and its passenger."""
        st = b.sim.state
        mid = self._passenger(b, fresh=withhold == "last_name")
        intro, plan = self._identify(b, mid, withhold_last=withhold == "last_name")
        held = {st["bookings"][bid]["flight"] for bid in self._bookings(b, owner=mid)}
        origin, dest, on_route = self._route(b, avoid=held)
        cabin = b.rng.choice(CABINS)
        cheapest = min(on_route, key=lambda f: st["flights"][f]["cabins"][cabin]["price"])
        if cheapest not in held and b.rng.random() < 0.5:
            fid, what = cheapest, self._say(b, "what_cheapest", origin=origin, dest=dest)
        else:
            fid = b.rng.choice([f for f in on_route if f not in held])
            what = self._say(b, "what_day", origin=origin, dest=dest, day=st["flights"][fid]["day"])
        cabin_part = "" if withhold == "cabin" else self._say(b, "cabin_part", cabin=cabin)
        new_id, price = next_booking_id(st), st["flights"][fid]["cabins"][cabin]["price"]
        plan += [C("search_flights", {"origin": origin, "destination": dest}),
                 C("book_flight", {"membership_id": mid, "flight_id": fid, "cabin": cabin})]
        message = f"{intro} {self._say(b, 'book', what=what, cabin_part=cabin_part)}"
        b.request(message, plan, [new_id, price], self._withheld(b, withhold, mid, cabin=cabin))
        return new_id, mid

    def seat(self, b: TaskBuilder, bid: str | None = None, withhold: bool = False, late: bool = False) -> None:
        bid = bid or b.rng.choice(self._bookings(b))
        bk = b.sim.state["bookings"][bid]
        intro, plan = self._identify(b, bk["passenger"])
        seat = free_seat(b.rng, b.sim.state["bookings"], bk["flight"], bk["cabin"])
        plan.append(C("select_seat", {"booking_id": bid, "seat": seat}))
        message = f"{intro} {self._say(b, 'seat_open' if withhold else 'seat', bid=bid, seat=seat)}"
        b.request(message, plan, (), self._withheld(b, "seat" if withhold else None, bk["passenger"], seat=seat),
               "select_seat" if late else None)

    def bags(self, b: TaskBuilder, bid: str | None = None, late: bool = False) -> None:
        st = b.sim.state
        bid = bid or b.rng.choice([x for x in self._bookings(b) if st["bookings"][x]["bags"] < MAX_BAGS])
        bk = st["bookings"][bid]
        n = b.rng.randint(1, MAX_BAGS - bk["bags"])
        intro, plan = self._identify(b, bk["passenger"])
        plan.append(C("add_bags", {"booking_id": bid, "count": n}))
        b.request(f"{intro} {self._say(b, 'bags', bags=bag_text(n), bid=bid)}", plan, [n * BAG_FEE],
               late="add_bags" if late else None)

    def cancel(self, b: TaskBuilder, withhold: str | None = None, late: bool = False) -> str:
        """Cancel by id or by destination; ``withhold`` is None, 'last_name' or 'reason'.
        Returns the passenger."""
        st = b.sim.state
        bids = self._bookings(b, cancellable=True)
        if withhold == "last_name":
            bids = [x for x in bids if st["bookings"][x]["passenger"] != b.sim.session.get("verified")]
        bid = b.rng.choice(bids)
        bk = st["bookings"][bid]
        mid, city = bk["passenger"], st["flights"][bk["flight"]]["destination"]
        intro, plan = self._identify(b, mid, withhold_last=withhold == "last_name")
        same_city = [x for x in self._bookings(b, owner=mid)
                     if st["flights"][st["bookings"][x]["flight"]]["destination"] == city]
        if len(same_city) == 1 and b.rng.random() < 0.5:
            target = self._say(b, "target_city", city=city)
            plan.append(C("list_bookings", {"membership_id": mid}))
        else:
            target = self._say(b, "target_id", bid=bid)
        reason = b.rng.choice(sorted(REASON_TEXT))
        reason_part = "" if withhold == "reason" else self._say(b, "reason_part", why=REASON_TEXT[reason])
        plan.append(C("cancel_booking", {"booking_id": bid, "reason": reason}))
        message = f"{intro} {self._say(b, 'cancel', target=target, reason_part=reason_part)}"
        b.request(message, plan, [bk["paid"]], self._withheld(b, withhold, mid, reason=reason),
               "cancel_booking" if late else None)
        return mid

    # -- constraint traps: the reference only looks the booking up and reports ---------
    def _trap(self, b: TaskBuilder, bid: str, intent: str, forbidden: C, rule: str, answer, **values) -> None:
        intro, plan = self._identify(b, b.sim.state["bookings"][bid]["passenger"])
        plan.append(C("get_booking", {"booking_id": bid}))
        b.trap(f"{intro} {self._say(b, intent, bid=bid, **values)}", forbidden, rule, plan, [answer])

    def trap_cancel(self, b: TaskBuilder) -> None:
        st = b.sim.state
        bid = b.rng.choice(self._bookings(b, cancellable=False))
        reason = b.rng.choice(sorted(REASON_TEXT))
        self._trap(b, bid, "trap_cancel", C("cancel_booking", {"booking_id": bid, "reason": reason}),
                   "cancellation_window", st["flights"][st["bookings"][bid]["flight"]]["day"], why=REASON_TEXT[reason])

    def trap_bags(self, b: TaskBuilder) -> None:
        bid = b.rng.choice(self._bookings(b))
        bags = b.sim.state["bookings"][bid]["bags"]
        n = MAX_BAGS - bags + b.rng.randint(1, 2)
        self._trap(b, bid, "trap_bags", C("add_bags", {"booking_id": bid, "count": n}), "bag_limit", bags,
                   bags=bag_text(n))

    # -- scenarios ---------------------------------------------------------------------
    def compose(self, b: TaskBuilder, difficulty: int) -> str:
        rng = b.rng
        if difficulty == 1:
            shape = rng.choice(["flight_info", "booking_info", "points", "search"])
        elif difficulty == 2:
            shape = rng.choice(["book", "cancel", "seat+booking_info", "search+bags"])
        elif difficulty == 3:
            shape = rng.choice(["withheld_book+seat", "flight_info+trap_cancel", "booking_info+trap_bags",
                                "withheld_cancel+points"])
        else:
            shape = rng.choice(["withheld_book+late_bags+points", "flight_info+late_cancel+withheld_seat",
                                "withheld_cancel+late_seat+points"])
        if shape == "withheld_book+seat":
            bid, _ = self.book(b, withhold=rng.choice(["last_name", "cabin"]))
            self.seat(b, bid)
        elif shape == "withheld_cancel+points":
            self.points(b, self.cancel(b, withhold=rng.choice(["last_name", "reason"])))
        elif shape == "withheld_book+late_bags+points":
            bid, mid = self.book(b, withhold=rng.choice(["last_name", "cabin"]))
            self.bags(b, bid, late=True)
            self.points(b, mid)
        elif shape == "flight_info+late_cancel+withheld_seat":
            self.flight_info(b)
            self.cancel(b, late=True)
            self.seat(b, withhold=True)
        elif shape == "withheld_cancel+late_seat+points":
            mid = self.cancel(b, withhold=rng.choice(["last_name", "reason"]))
            self.seat(b, late=True)
            self.points(b, mid)
        else:
            for part in shape.split("+"):
                getattr(self, part)(b)
        return shape
