"""The shop domain: every tool, every policy, atomic failures, and a seeded generator."""

from __future__ import annotations

import copy

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401  (registers the env)
from seal_envs.agents import OracleAgent, run_episode
from seal_envs.core.generator import rng_for
from seal_envs.core.types import ToolCall
from seal_envs.domains.shop import GENERATOR, ShopBackend
from seal_envs.domains.shop.backend import REFUND_DAYS
from seal_envs.domains.shop.generator import PHRASES

SEEDS = range(12)


@pytest.fixture
def backend() -> ShopBackend:
    return ShopBackend(GENERATOR.initial_state(rng_for("shop", "train", 0)))


def call(b: ShopBackend, name: str, **arguments):
    return b.execute(ToolCall(name, arguments))


def customer(b: ShopBackend) -> str:
    return sorted(b.state["customers"])[0]


def login(b: ShopBackend, cid: str | None = None) -> str:
    cid = cid or customer(b)
    c = b.state["customers"][cid]
    assert call(b, "authenticate", email=c["email"], zip_code=c["zip_code"]).ok
    return cid


def order(b: ShopBackend, status: str, recent: bool | None = None, cid: str | None = None) -> str:
    """An order of the first customer in ``status``; for deliveries, inside or outside the refund window."""
    cid = cid or customer(b)
    for oid, o in sorted(b.state["orders"].items()):
        if o["customer_id"] != cid or o["status"] != status:
            continue
        if recent is None or (b.state["today"] - o["delivered_day"] <= REFUND_DAYS) == recent:
            return oid
    raise AssertionError(f"no {status} order")


def in_stock(b: ShopBackend) -> str:
    return next(p for p, v in sorted(b.state["products"].items()) if v["stock"] >= 2)


def first_item(b: ShopBackend, oid: str) -> dict:
    return b.state["orders"][oid]["items"][0]


# -- every tool ------------------------------------------------------------------------------
def test_authenticate_sets_the_session(backend):
    cid = login(backend)
    assert backend.session["customer_id"] == cid
    assert "_session" not in backend.comparable_state()


def test_search_products_sorts_by_price(backend):
    kind = next(iter(backend.state["products"].values()))["name"].split()[-1]
    event = call(backend, "search_products", keyword=kind, sort_by="price")
    prices = [p["price"] for p in event.result]
    assert event.ok and len(prices) >= 2 and prices == sorted(prices)


def test_get_order_shows_days_since_delivery(backend):
    oid = order(backend, "delivered", recent=False)
    result = call(backend, "get_order", order_id=oid).result
    assert result["status"] == "delivered" and result["days_since_delivery"] > REFUND_DAYS


def test_list_orders_filters_by_status(backend):
    result = call(backend, "list_orders", customer_id=customer(backend), status="placed").result
    assert len(result) >= 2 and {o["status"] for o in result} == {"placed"}


def test_check_discount_tells_active_from_expired(backend):
    statuses = {call(backend, "check_discount", code=c).result["status"] for c in backend.state["discounts"]}
    assert statuses == {"active", "expired"}


def test_place_order_takes_stock_and_applies_the_code(backend):
    cid, pid = login(backend), in_stock(backend)
    code = next(c for c, d in sorted(backend.state["discounts"].items()) if d["expires_day"] >= backend.state["today"])
    stock, price = backend.state["products"][pid]["stock"], backend.state["products"][pid]["price"]
    event = call(backend, "place_order", customer_id=cid, product_id=pid, quantity=2, discount_code=code)
    assert event.ok, event.message
    percent = backend.state["discounts"][code]["percent_off"]
    assert event.result["total"] == pytest.approx(2 * price * (100 - percent) / 100, abs=0.02)
    assert backend.state["products"][pid]["stock"] == stock - 2
    assert backend.state["orders"][event.result["order_id"]]["status"] == "placed"


def test_cancel_order_restocks(backend):
    login(backend)
    oid = order(backend, "placed")
    item = first_item(backend, oid)
    stock = backend.state["products"][item["product_id"]]["stock"]
    event = call(backend, "cancel_order", order_id=oid, reason="found_cheaper")
    assert event.ok and backend.state["orders"][oid]["status"] == "cancelled"
    assert backend.state["products"][item["product_id"]]["stock"] == stock + item["quantity"]


def test_update_shipping_address(backend):
    login(backend)
    oid = order(backend, "placed")
    event = call(backend, "update_shipping_address", order_id=oid, street="7 Maple Street", city="Oslo",
                 zip_code="60123")
    assert event.ok and backend.state["orders"][oid]["address"] == {"street": "7 Maple Street", "city": "Oslo",
                                                                    "zip": "60123"}


def test_request_refund_to_store_credit(backend):
    cid = login(backend)
    oid = order(backend, "delivered", recent=True)
    item = first_item(backend, oid)
    event = call(backend, "request_refund", order_id=oid, product_id=item["product_id"], quantity=1,
                 method="store_credit")
    assert event.ok and event.result["amount"] == item["unit_price"]
    assert backend.state["customers"][cid]["store_credit"] == item["unit_price"]
    assert first_item(backend, oid)["refunded"] == 1


def test_every_tool_is_covered_and_enums_exist():
    specs = ShopBackend.tool_specs()
    assert 7 <= len(specs) <= 12
    enums = [p for s in specs.values() for p in s.parameters["properties"].values() if "enum" in p]
    assert len(enums) >= 2
    assert all(s.policies for s in specs.values() if s.writes)


# -- every policy ----------------------------------------------------------------------------
POLICY_CASES = {
    "authenticated": lambda b: ("cancel_order", {"order_id": order(b, "placed"), "reason": "other"}, False),
    "before_shipping": lambda b: ("cancel_order", {"order_id": order(b, "shipped"), "reason": "other"}, True),
    "refund_window": lambda b: ("request_refund", {"order_id": (oid := order(b, "delivered", recent=False)),
                                                   "product_id": first_item(b, oid)["product_id"], "quantity": 1,
                                                   "method": "original_payment"}, True),
}


@pytest.mark.parametrize("rule", sorted(ShopBackend.POLICIES))
def test_every_policy_is_enforced_and_named(backend, rule):
    name, arguments, authenticated = POLICY_CASES[rule](backend)
    if authenticated:
        login(backend)
    event = call(backend, name, **arguments)
    assert event.kind == "policy_violation" and event.rule == rule


def test_address_change_after_shipping_is_refused(backend):
    login(backend)
    event = call(backend, "update_shipping_address", order_id=order(backend, "shipped"), street="1 Oak Street",
                 city="Rome", zip_code="70000")
    assert event.kind == "policy_violation" and event.rule == "before_shipping"


def test_another_customers_login_does_not_authorise(backend):
    other = sorted(backend.state["customers"])[1]
    login(backend, other)
    event = call(backend, "cancel_order", order_id=order(backend, "placed"), reason="other")
    assert event.kind == "policy_violation" and event.rule == "authenticated"


# -- failed calls ----------------------------------------------------------------------------
FAILING = {
    "wrong_zip": lambda b: ("authenticate", {"email": b.state["customers"][customer(b)]["email"], "zip_code": "00000"}),
    "unknown_order": lambda b: ("get_order", {"order_id": "O-9999"}),
    "too_many": lambda b: ("place_order", {"customer_id": customer(b), "product_id": in_stock(b), "quantity": 999}),
    "expired_code": lambda b: ("place_order", {"customer_id": customer(b), "product_id": in_stock(b), "quantity": 1,
                                               "discount_code": next(c for c, d in b.state["discounts"].items()
                                                                     if d["expires_day"] < b.state["today"])}),
    "refund_too_many": lambda b: ("request_refund", {"order_id": (oid := order(b, "delivered", recent=True)),
                                                     "product_id": first_item(b, oid)["product_id"],
                                                     "quantity": 99, "method": "store_credit"}),
    "bad_enum": lambda b: ("cancel_order", {"order_id": order(b, "placed"), "reason": "bored"}),
}


@pytest.mark.parametrize("case", sorted(FAILING))
def test_a_failed_call_leaves_the_state_unchanged(backend, case):
    login(backend)
    name, arguments = FAILING[case](backend)
    before = copy.deepcopy(backend.state)
    event = call(backend, name, **arguments)
    assert not event.ok
    assert event.kind in ("tool_error", "schema_violation")
    assert backend.state == before


def test_tool_errors_name_the_parameter(backend):
    login(backend)
    event = call(backend, "place_order", customer_id=customer(backend), product_id=in_stock(backend), quantity=999)
    assert event.kind == "tool_error" and event.param == "quantity"


# -- generator -------------------------------------------------------------------------------
@pytest.mark.parametrize("difficulty", [1, 2, 3, 4])
def test_generator_is_deterministic_and_seed_sensitive(difficulty):
    a = GENERATOR.generate(3, difficulty).to_dict()
    assert a == GENERATOR.generate(3, difficulty).to_dict()
    assert a != GENERATOR.generate(4, difficulty).to_dict()


def test_difficulty_features():
    for seed in SEEDS:
        tasks = {d: GENERATOR.generate(seed, d) for d in (1, 2, 3, 4)}
        assert len(tasks[1].turns) == 1 and len(tasks[1].plan) == 1
        assert 2 <= len(tasks[2].plan) <= 3 and len(tasks[2].turns) <= 2
        t3 = tasks[3]
        assert any(t.withheld for t in t3.turns) or "trap" in t3.template
        t4 = tasks[4]
        assert t4.hidden_tools and any(t.withheld for t in t4.turns) and len(t4.plan) >= 4
        assert 3 <= len(t4.turns) <= 4
        revealed = [t for t in t4.turns if t.new_tools]
        assert revealed and all(tool in t4.hidden_tools for t in revealed for tool in t.new_tools)


def test_withheld_zip_is_not_in_the_message():
    for seed in SEEDS:
        for difficulty in (3, 4):
            for turn in GENERATOR.generate(seed, difficulty).turns:
                if turn.withheld:
                    assert turn.withheld.param == "zip_code" and turn.withheld.value not in turn.message


def test_reads_give_required_outputs():
    reads = {n for n, s in ShopBackend.tool_specs().items() if not s.writes and n != "authenticate"}
    for seed in SEEDS:
        for difficulty in (1, 2):
            for turn in GENERATOR.generate(seed, difficulty).turns:
                if turn.plan and all(c.name in reads for c in turn.plan):
                    assert turn.required_outputs


def test_phrasebook_has_enough_paraphrases():
    assert all(len(p) >= 3 for p in PHRASES.train.values())
    assert len(PHRASES.ood) >= len(PHRASES.train) * 2 // 3


def test_oracle_solves_a_sample():
    env = gym.make("seal/ToolUse-v0", domains=("shop",)).unwrapped
    for index in range(8):
        reward, info, _ = run_episode(env, OracleAgent(), options={"index": index})
        assert reward == 1.0 and {lb["label"] for lb in info["step_labels"]} == {"ok"}, info["task_id"]
