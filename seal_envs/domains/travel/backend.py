"""Airline booking desk: flights, bookings, seats, bags and loyalty points, under three policies."""

from __future__ import annotations

from typing import Literal

from seal_envs.core.backend import Backend, PolicyViolation, ToolError, tool

Cabin = Literal["economy", "premium", "business"]
CABINS: tuple[str, ...] = ("economy", "premium", "business")
# Seat rows per cabin: a seat outside its cabin's rows is an error the agent can correct.
CABIN_ROWS = {"business": (1, 4), "premium": (5, 9), "economy": (10, 30)}
SEAT_LETTERS = "ABCDEF"
MAX_BAGS = 2
BAG_FEE = 40
POINTS_PER_FARE = 10  # one loyalty point per 10 paid for the fare
TIERS = ((3000, "gold"), (1000, "silver"), (0, "basic"))


def next_booking_id(state: dict) -> str:
    """The id the next booking will get; the generator uses it to phrase follow-up requests."""
    return f"BK-{max(int(k.split('-')[1]) for k in state['bookings']) + 1}"


def can_cancel(state: dict, booking: dict) -> bool:
    """The cancellation window: departure must be more than 1 day away."""
    return state["flights"][booking["flight"]]["day"] - state["today"] > 1


def tier_of(points: int) -> str:
    return next(name for floor, name in TIERS if points >= floor)


class TravelBackend(Backend):
    domain = "travel"
    POLICIES = {
        "passenger_verified": "The passenger must be verified with verify_passenger (membership id and last name) "
                              "before booking a flight or changing any of their bookings.",
        "cancellation_window": "A booking can be cancelled only more than 1 day before departure.",
        "bag_limit": f"A passenger may check at most {MAX_BAGS} bags on a booking.",
    }

    # -- helpers (not tools) -------------------------------------------------------------
    def _flight(self, flight_id: str) -> dict:
        return self.record("flights", flight_id, "flight_id", "flight")

    def _passenger(self, membership_id: str) -> dict:
        return self.record("passengers", membership_id, "membership_id", "passenger with membership id")

    def _booking(self, booking_id: str, *, confirmed: bool = False) -> dict:
        booking = self.record("bookings", booking_id, "booking_id", "booking")
        if confirmed and booking["status"] != "confirmed":
            raise ToolError(f"booking {booking_id} is {booking['status']}", param="booking_id")
        return booking

    def _require_verified(self, membership_id: str) -> None:
        if self.session.get("verified") != membership_id:
            raise PolicyViolation("passenger_verified", f"passenger {membership_id} is not verified")

    def _city(self, name: str, param: str) -> str:
        """Cities match case-insensitively, so 'paris' finds Paris."""
        known = sorted({f[k] for f in self.state["flights"].values() for k in ("origin", "destination")})
        for city in known:
            if city.lower() == name.strip().lower():
                return city
        raise ToolError(f"no flights serve '{name}'", param=param, hint=f"served cities: {', '.join(known)}")

    @staticmethod
    def _fares(flight: dict) -> dict:
        return {"prices": {c: flight["cabins"][c]["price"] for c in CABINS},
                "seats_left": {c: flight["cabins"][c]["seats_left"] for c in CABINS}}

    # -- read tools ----------------------------------------------------------------------
    @tool
    def search_flights(self, origin: str, destination: str) -> list:
        """Find the flights between two cities, earliest first, with prices and seats per cabin.

        Args:
            origin: The departure city, like Paris.
            destination: The arrival city, like Rome.
        """
        origin, destination = self._city(origin, "origin"), self._city(destination, "destination")
        found = [(f["day"], fid, f) for fid, f in sorted(self.state["flights"].items())
                 if f["origin"] == origin and f["destination"] == destination]
        return [{"flight_id": fid, "day": day} | self._fares(f) for day, fid, f in sorted(found)]

    @tool
    def get_flight(self, flight_id: str) -> dict:
        """Route, departure day, prices and seats left of one flight.

        Args:
            flight_id: The flight id, like FL-2041.
        """
        f = self._flight(flight_id)
        return {"flight_id": flight_id, "origin": f["origin"], "destination": f["destination"],
                "day": f["day"]} | self._fares(f)

    @tool
    def list_bookings(self, membership_id: str) -> list:
        """The bookings a passenger holds, with where and when each flight goes.

        Args:
            membership_id: The passenger's membership id, like M-4821.
        """
        self._passenger(membership_id)
        out = []
        for bid, bk in sorted(self.state["bookings"].items()):
            if bk["passenger"] == membership_id:
                f = self.state["flights"][bk["flight"]]
                out.append({"booking_id": bid, "flight_id": bk["flight"], "destination": f["destination"],
                            "day": f["day"], "status": bk["status"]})
        return out

    @tool
    def get_booking(self, booking_id: str) -> dict:
        """Details of one booking (flight, departure day, cabin, seat, bags, amount paid, status) and today's day.

        Args:
            booking_id: The booking id, like BK-5012.
        """
        bk = self._booking(booking_id)
        f = self.state["flights"][bk["flight"]]
        return {"booking_id": booking_id, "membership_id": bk["passenger"], "flight_id": bk["flight"],
                "origin": f["origin"], "destination": f["destination"], "day": f["day"], "cabin": bk["cabin"],
                "seat": bk["seat"], "bags": bk["bags"], "paid": bk["paid"], "status": bk["status"],
                "today": self.state["today"]}

    @tool
    def get_loyalty_points(self, membership_id: str) -> dict:
        """A passenger's loyalty points balance and tier.

        Args:
            membership_id: The passenger's membership id, like M-4821.
        """
        points = self._passenger(membership_id)["points"]
        return {"membership_id": membership_id, "points": points, "tier": tier_of(points)}

    @tool
    def verify_passenger(self, membership_id: str, last_name: str) -> dict:
        """Verify a passenger by membership id and last name; required before any booking change.

        Args:
            membership_id: The passenger's membership id, like M-4821.
            last_name: The passenger's last name, like Smith.
        """
        passenger = self._passenger(membership_id)
        if passenger["last_name"].lower() != last_name.strip().lower():
            raise ToolError("last name does not match this membership id", param="last_name")
        self.session["verified"] = membership_id
        return {"verified": True, "membership_id": membership_id}

    # -- write tools ---------------------------------------------------------------------
    @tool(writes=True, policies=("passenger_verified",))
    def book_flight(self, membership_id: str, flight_id: str, cabin: Cabin) -> dict:
        """Book a seat on a flight for a passenger, paying the cabin's fare and earning points.

        Args:
            membership_id: The passenger's membership id, like M-4821.
            flight_id: The flight to book, like FL-2041.
            cabin: The cabin class to travel in.
        """
        passenger = self._passenger(membership_id)
        fare = self._flight(flight_id)["cabins"][cabin]
        self._require_verified(membership_id)
        if any(b["passenger"] == membership_id and b["flight"] == flight_id and b["status"] == "confirmed"
               for b in self.state["bookings"].values()):
            raise ToolError(f"{membership_id} already has a booking on {flight_id}", param="flight_id")
        if fare["seats_left"] < 1:
            raise ToolError(f"no {cabin} seats left on {flight_id}", param="cabin")
        booking_id = next_booking_id(self.state)
        earned = fare["price"] // POINTS_PER_FARE
        fare["seats_left"] -= 1
        passenger["points"] += earned
        self.state["bookings"][booking_id] = {
            "passenger": membership_id, "flight": flight_id, "cabin": cabin, "seat": None, "bags": 0,
            "paid": fare["price"], "points_earned": earned, "status": "confirmed"}
        return {"booking_id": booking_id, "flight_id": flight_id, "cabin": cabin, "price": fare["price"],
                "points_earned": earned}

    @tool(writes=True, policies=("passenger_verified",),
          schema={"seat": {"pattern": f"^[0-9]{{1,2}}[{SEAT_LETTERS}]$"}})
    def select_seat(self, booking_id: str, seat: str) -> dict:
        """Choose the seat for a booking; the seat must be free and in the booking's cabin.

        Args:
            booking_id: The booking id, like BK-5012.
            seat: Row number and letter A-F, like 14C.
        """
        bk = self._booking(booking_id, confirmed=True)
        self._require_verified(bk["passenger"])
        low, high = CABIN_ROWS[bk["cabin"]]
        if not low <= int(seat[:-1]) <= high:
            raise ToolError(f"seat {seat} is not in {bk['cabin']} (rows {low}-{high})", param="seat")
        if any(other["flight"] == bk["flight"] and other["seat"] == seat and other["status"] == "confirmed"
               for bid, other in self.state["bookings"].items() if bid != booking_id):
            raise ToolError(f"seat {seat} is already taken on {bk['flight']}", param="seat")
        bk["seat"] = seat
        return {"booking_id": booking_id, "seat": seat}

    @tool(writes=True, policies=("passenger_verified", "bag_limit"), schema={"count": {"minimum": 1}})
    def add_bags(self, booking_id: str, count: int) -> dict:
        """Add checked bags to a booking; each bag costs a fee that is added to the amount paid.

        Args:
            booking_id: The booking id, like BK-5012.
            count: How many bags to add (at least 1).
        """
        bk = self._booking(booking_id, confirmed=True)
        self._require_verified(bk["passenger"])
        if bk["bags"] + count > MAX_BAGS:
            raise PolicyViolation("bag_limit", f"{bk['bags']} + {count} bags exceeds the limit of {MAX_BAGS}")
        fee = count * BAG_FEE
        bk["bags"] += count
        bk["paid"] += fee
        return {"booking_id": booking_id, "bags": bk["bags"], "fee": fee}

    @tool(writes=True, policies=("passenger_verified", "cancellation_window"))
    def cancel_booking(self, booking_id: str,
                       reason: Literal["change_of_plans", "illness", "schedule_conflict", "other"]) -> dict:
        """Cancel a booking: the amount paid is refunded and the points it earned are taken back.

        Args:
            booking_id: The booking id, like BK-5012.
            reason: Why the passenger cancels.
        """
        bk = self._booking(booking_id, confirmed=True)
        self._require_verified(bk["passenger"])
        flight = self.state["flights"][bk["flight"]]
        if not can_cancel(self.state, bk):
            raise PolicyViolation("cancellation_window",
                                  f"{booking_id} departs on day {flight['day']} and today is day {self.state['today']}")
        passenger = self.state["passengers"][bk["passenger"]]
        passenger["points"] = max(0, passenger["points"] - bk["points_earned"])
        flight["cabins"][bk["cabin"]]["seats_left"] += 1
        bk.update(status="cancelled", seat=None, cancel_reason=reason)
        return {"booking_id": booking_id, "status": "cancelled", "refund": bk["paid"],
                "points_removed": bk["points_earned"]}
