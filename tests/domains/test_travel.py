"""The travel domain: every tool, every policy, atomic failures, and a seeded generator."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401  (registers the env)
from seal_envs.agents import OracleAgent, run_episode
from seal_envs.core.generator import rng_for
from seal_envs.core.types import ToolCall
from seal_envs.domains.travel import GENERATOR, TravelBackend
from seal_envs.domains.travel.backend import BAG_FEE, MAX_BAGS, can_cancel, next_booking_id, tier_of
from seal_envs.domains.travel.generator import PHRASES

SEEDS = range(12)


@pytest.fixture
def backend() -> TravelBackend:
    return TravelBackend(GENERATOR.initial_state(rng_for("travel", "train", 0)))


def call(b: TravelBackend, name: str, **arguments):
    return b.execute(ToolCall(name, arguments))


def booking(b: TravelBackend, cancellable: bool | None = None, bags_below: int = MAX_BAGS + 1) -> str:
    """A confirmed booking, optionally on either side of the cancellation window."""
    for bid, bk in sorted(b.state["bookings"].items()):
        if cancellable in (None, can_cancel(b.state, bk)) and bk["bags"] < bags_below:
            return bid
    raise AssertionError("no such booking in the generated state")


def verify(b: TravelBackend, mid: str) -> str:
    event = call(b, "verify_passenger", membership_id=mid, last_name=b.state["passengers"][mid]["last_name"])
    assert event.ok, event.message
    return mid


def owner(b: TravelBackend, bid: str) -> str:
    return b.state["bookings"][bid]["passenger"]


def unbooked_flight(b: TravelBackend, mid: str) -> str:
    held = {bk["flight"] for bk in b.state["bookings"].values() if bk["passenger"] == mid}
    return next(f for f in sorted(b.state["flights"]) if f not in held)


# -- every tool ------------------------------------------------------------------------------
def test_verify_passenger_sets_the_session_only_with_the_right_last_name(backend):
    mid = sorted(backend.state["passengers"])[0]
    wrong = call(backend, "verify_passenger", membership_id=mid, last_name="Nobody")
    assert wrong.kind == "tool_error" and wrong.param == "last_name"
    verify(backend, mid)
    assert backend.session["verified"] == mid
    assert "_session" not in backend.comparable_state()


def test_search_flights_lists_the_route_earliest_first(backend):
    f = next(iter(backend.state["flights"].values()))
    event = call(backend, "search_flights", origin=f["origin"].lower(), destination=f["destination"])
    days = [r["day"] for r in event.result]
    assert event.ok and len(days) >= 2 and days == sorted(days)
    assert set(event.result[0]["prices"]) == {"economy", "premium", "business"}
    unknown = call(backend, "search_flights", origin="Atlantis", destination=f["destination"])
    assert unknown.kind == "tool_error" and unknown.param == "origin"


def test_get_flight_reports_fares_and_seats(backend):
    fid, f = sorted(backend.state["flights"].items())[0]
    result = call(backend, "get_flight", flight_id=fid).result
    assert result["day"] == f["day"] and result["prices"]["business"] == f["cabins"]["business"]["price"]
    assert call(backend, "get_flight", flight_id="FL-0000").param == "flight_id"


def test_list_and_get_bookings(backend):
    bid = booking(backend)
    mid = owner(backend, bid)
    listed = call(backend, "list_bookings", membership_id=mid).result
    assert bid in [r["booking_id"] for r in listed]
    detail = call(backend, "get_booking", booking_id=bid).result
    assert detail["membership_id"] == mid and detail["today"] == backend.state["today"]


def test_get_loyalty_points_gives_balance_and_tier(backend):
    mid, p = sorted(backend.state["passengers"].items())[0]
    result = call(backend, "get_loyalty_points", membership_id=mid).result
    assert result == {"membership_id": mid, "points": p["points"], "tier": tier_of(p["points"])}


def test_book_flight_takes_a_seat_and_earns_points(backend):
    mid = verify(backend, sorted(backend.state["passengers"])[0])
    fid = unbooked_flight(backend, mid)
    fare = copy.deepcopy(backend.state["flights"][fid]["cabins"]["premium"])
    points, expected_id = backend.state["passengers"][mid]["points"], next_booking_id(backend.state)
    event = call(backend, "book_flight", membership_id=mid, flight_id=fid, cabin="premium")
    assert event.ok and event.result["booking_id"] == expected_id and event.result["price"] == fare["price"]
    assert backend.state["flights"][fid]["cabins"]["premium"]["seats_left"] == fare["seats_left"] - 1
    assert backend.state["passengers"][mid]["points"] == points + event.result["points_earned"]
    again = call(backend, "book_flight", membership_id=mid, flight_id=fid, cabin="economy")
    assert again.kind == "tool_error" and again.param == "flight_id"


def test_select_seat_checks_cabin_rows_and_taken_seats(backend):
    bid = booking(backend)
    bk = backend.state["bookings"][bid]
    verify(backend, bk["passenger"])
    row = {"business": 2, "premium": 6, "economy": 20}[bk["cabin"]]
    assert call(backend, "select_seat", booking_id=bid, seat=f"{row}C").ok
    assert backend.state["bookings"][bid]["seat"] == f"{row}C"
    wrong_row = {"business": 20, "premium": 2, "economy": 2}[bk["cabin"]]
    assert call(backend, "select_seat", booking_id=bid, seat=f"{wrong_row}C").param == "seat"
    assert call(backend, "select_seat", booking_id=bid, seat="window").kind == "schema_violation"
    taker = next(x for x, o in sorted(backend.state["bookings"].items())
                 if x != bid and o["flight"] != bk["flight"])
    backend.state["bookings"][taker].update(flight=bk["flight"], cabin=bk["cabin"], seat=f"{row}D")
    taken = call(backend, "select_seat", booking_id=bid, seat=f"{row}D")
    assert taken.kind == "tool_error" and "taken" in taken.message


def test_add_bags_charges_the_fee(backend):
    bid = booking(backend, bags_below=1)
    verify(backend, owner(backend, bid))
    paid = backend.state["bookings"][bid]["paid"]
    event = call(backend, "add_bags", booking_id=bid, count=2)
    assert event.ok and event.result == {"booking_id": bid, "bags": 2, "fee": 2 * BAG_FEE}
    assert backend.state["bookings"][bid]["paid"] == paid + 2 * BAG_FEE
    assert call(backend, "add_bags", booking_id=bid, count=0).kind == "schema_violation"


def test_cancel_booking_refunds_and_frees_the_seat(backend):
    bid = booking(backend, cancellable=True)
    bk = copy.deepcopy(backend.state["bookings"][bid])
    mid = verify(backend, bk["passenger"])
    seats = backend.state["flights"][bk["flight"]]["cabins"][bk["cabin"]]["seats_left"]
    points = backend.state["passengers"][mid]["points"]
    event = call(backend, "cancel_booking", booking_id=bid, reason="illness")
    assert event.ok and event.result["refund"] == bk["paid"]
    assert backend.state["bookings"][bid]["status"] == "cancelled"
    assert backend.state["flights"][bk["flight"]]["cabins"][bk["cabin"]]["seats_left"] == seats + 1
    assert backend.state["passengers"][mid]["points"] == points - bk["points_earned"]
    twice = call(backend, "cancel_booking", booking_id=bid, reason="illness")
    assert twice.kind == "tool_error" and twice.param == "booking_id"


def test_tool_surface_has_enums_and_documented_policies():
    specs = TravelBackend.tool_specs()
    assert 7 <= len(specs) <= 12
    enums = [p for s in specs.values() for p in s.parameters["properties"].values() if "enum" in p]
    assert len(enums) >= 2
    assert all(s.policies for s in specs.values() if s.writes)
    assert all(p["description"] for s in specs.values() for p in s.parameters["properties"].values())


# -- every policy ----------------------------------------------------------------------------
def _unverified(b):
    bid = booking(b, cancellable=True)
    return bid, ("cancel_booking", {"booking_id": bid, "reason": "other"})


def _too_late(b):
    bid = booking(b, cancellable=False)
    return bid, ("cancel_booking", {"booking_id": bid, "reason": "illness"})


def _too_many_bags(b):
    bid = booking(b)
    return bid, ("add_bags", {"booking_id": bid, "count": MAX_BAGS - b.state["bookings"][bid]["bags"] + 1})


POLICY_CASES = {"passenger_verified": (_unverified, False), "cancellation_window": (_too_late, True),
                "bag_limit": (_too_many_bags, True)}


@pytest.mark.parametrize("rule", sorted(TravelBackend.POLICIES))
def test_every_policy_refuses_and_leaves_the_state_alone(backend, rule):
    case, verified = POLICY_CASES[rule]
    bid, (name, args) = case(backend)
    if verified:
        verify(backend, owner(backend, bid))
    before = copy.deepcopy(backend.state)
    event = call(backend, name, **args)
    assert event.kind == "policy_violation" and event.rule == rule, event
    assert backend.state == before


def test_a_failed_call_leaves_the_state_unchanged(backend):
    mid = verify(backend, sorted(backend.state["passengers"])[0])
    flight = backend.state["flights"][unbooked_flight(backend, mid)]
    flight["cabins"]["business"]["seats_left"] = 0
    before = copy.deepcopy(backend.state)
    event = call(backend, "book_flight", membership_id=mid, flight_id=unbooked_flight(backend, mid),
                 cabin="business")
    assert event.kind == "tool_error" and event.param == "cabin"
    assert backend.state == before


# -- the generator ---------------------------------------------------------------------------
def test_generator_is_deterministic_and_seeds_differ():
    for d in (1, 2, 3, 4):
        assert GENERATOR.generate(3, d).to_dict() == GENERATOR.generate(3, d).to_dict()
        assert len({json.dumps(GENERATOR.generate(s, d).to_dict()) for s in SEEDS}) == len(SEEDS)


def test_generator_does_not_depend_on_the_string_hash():
    """A fresh process (another string hash seed) writes the same tasks."""
    code = ("import json; from seal_envs.domains.travel import GENERATOR as G; "
            "print(json.dumps([G.generate(s, d).to_dict() for s in range(4) for d in (1, 2, 3, 4)]))")
    here = [GENERATOR.generate(s, d).to_dict() for s in range(4) for d in (1, 2, 3, 4)]
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"}).stdout
    assert json.loads(other) == here


def test_difficulties_produce_their_features():
    for seed in SEEDS:
        d1, d2, d3, d4 = (GENERATOR.generate(seed, d) for d in (1, 2, 3, 4))
        assert len(d1.turns) == 1 and len(d1.plan) == 1
        assert len(d2.turns) <= 2 and 2 <= len(d2.plan) <= 3
        assert len(d3.turns) in (2, 3) and len(d3.plan) <= 5
        assert any(t.withheld for t in d3.turns) or "trap" in d3.template
        assert len(d4.turns) in (3, 4) and len(d4.plan) <= 8
        assert d4.hidden_tools and any(t.withheld for t in d4.turns)
        for task in (d1, d2, d3, d4):
            for t in task.turns:
                reads_only = t.plan and not any(TravelBackend.tool_specs()[c.name].writes for c in t.plan)
                assert t.required_outputs or not reads_only, task.task_id
    average = sum(len(GENERATOR.generate(s, 4).plan) for s in range(40)) / 40
    assert average >= 4


def test_phrasebook_has_three_train_paraphrases_and_ood_is_used():
    assert all(len(v) >= 3 for v in PHRASES.train.values())
    assert len(PHRASES.ood) >= len(PHRASES.train) // 2
    train = {t.message for s in SEEDS for t in GENERATOR.generate(s, 1, "train").turns}
    ood = {t.message for s in SEEDS for t in GENERATOR.generate(s, 1, "ood").turns}
    assert train.isdisjoint(ood)


def test_oracle_solves_a_sample_of_tasks():
    env = gym.make("seal/ToolUse-Travel-v0").unwrapped
    for index in (0, 1, 2, 3, 101, 202, 303, 399):
        reward, info, _ = run_episode(env, OracleAgent(), options={"index": index})
        assert reward == 1.0 and {lb["label"] for lb in info["step_labels"]} == {"ok"}, info["task_id"]
