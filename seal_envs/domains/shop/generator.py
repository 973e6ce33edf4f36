"""Seeded shop tasks, each for one customer: from a stock look-up to multi-turn orders, refunds,
constraint traps and tools that appear late."""

from __future__ import annotations

import random
from typing import Any, Sequence

from seal_envs.core.generator import DomainGenerator, GeneratorError, Phrasebook, TaskBuilder
from seal_envs.core.names import CITIES, WORDS, person_names, pick_distinct
from seal_envs.core.types import ToolCall as C

from .backend import REFUND_DAYS, ShopBackend

KINDS = ("mug", "lamp", "backpack", "notebook", "kettle", "umbrella", "scarf", "pillow", "candle", "towel")
COLORS = ("red", "blue", "green", "black", "white", "grey", "yellow")
# Every customer gets these orders, so each task shape finds what its intents need.
ORDER_MIX = ("placed", "placed", "shipped", "recent", "recent", "old")
DELIVERED_AGO = {"recent": (1, 25), "old": (36, 90)}  # days ago; well inside and outside the refund window
PLACED_BEFORE = {"placed": (0, 2), "shipped": (1, 4), "delivered": (2, 6), "cancelled": (3, 30)}

REASONS = {
    "no_longer_needed": "I don't need it anymore",
    "ordered_by_mistake": "I ordered it by mistake",
    "found_cheaper": "I found it cheaper elsewhere",
}
METHODS = {"original_payment": "back to my original payment method", "store_credit": "as store credit"}
STATUS_TEXT = {"placed": "still waiting to ship", "shipped": "on their way", "delivered": "already delivered",
               "cancelled": "cancelled"}

PHRASES = Phrasebook(
    train={
        "intro": [
            "I'm {name}, email {email}, zip code {zip}.",
            "This is {name} ({email}), my zip code is {zip}.",
            "My email is {email} and my zip is {zip}.",
        ],
        "intro_nozip": [
            "I'm {name}, email {email}.",
            "This is {name}, my email is {email}.",
            "My account email is {email}.",
        ],
        "order_status": [
            "What's the status of order {oid}?",
            "Where is order {oid} at? What status does it show?",
            "Can you check where my order {oid} stands?",
            "Tell me the current status of {oid}.",
        ],
        "order_total": [
            "How much did I pay for order {oid}?",
            "What was the total of order {oid}?",
            "Can you tell me the order total for {oid}?",
        ],
        "stock": [
            "How many of the {name} do you have in stock?",
            "Is the {name} in stock? How many are left?",
            "What's the stock level for the {name}?",
        ],
        "cheapest": [
            "What's your cheapest {kind}, and how much is it?",
            "Which {kind} costs the least? Tell me the price too.",
            "I want the lowest-priced {kind} you sell. Which one, and at what price?",
        ],
        "discount": [
            "Is the discount code {code} still valid, and how much does it take off?",
            "Can I still use code {code}? What percent off is it?",
            "Check the code {code} for me: is it active and what's the discount?",
        ],
        "orders": [
            "I'm customer {cid}. Which of my orders are {status_text}?",
            "Customer {cid} here. Can you list my orders that are {status_text}?",
            "Which orders of customer {cid} are {status_text}? Give me the order numbers.",
        ],
        "cancel": [
            "Please cancel order {oid}, {reason}.",
            "I want to cancel {oid}. {reason}.",
            "Cancel my order {oid} please; {reason}.",
        ],
        "address": [
            "Please ship order {oid} to {street}, {city} {zip} instead.",
            "I've moved. Change the delivery address of {oid} to {street}, {city}, zip {zip}.",
            "Can you update the shipping address on order {oid}? New one: {street}, {city} {zip}.",
        ],
        "refund": [
            "I'd like to return {qty} x {name} from order {oid}, refunded {method}. How much will I get back?",
            "Please refund {qty} of the {name} in order {oid} {method}. What's the refund amount?",
            "Order {oid}: I want to send back {qty} x {name} and get the money {method}. How much is that?",
        ],
        "buy": [
            "I'd like to order {qty} x {name}. What's the order number and total?",
            "Please place an order for {qty} of the {name} and tell me the order id and total.",
            "Can you order {qty} {name} for me? Let me know the order number and how much it costs.",
        ],
        "buy_code": [
            "I'd like to order {qty} x {name} with code {code}. What's the order number and total?",
            "Please place an order for {qty} of the {name}, using discount code {code}. Tell me the order id and total.",
            "Order {qty} {name} for me and apply {code}. What's the order number and the total?",
        ],
        "trap_cancel": [
            "Please cancel order {oid}, {reason}. Also, what's its status right now?",
            "Cancel {oid} for me; {reason}. And tell me where it stands.",
            "I need order {oid} cancelled, {reason}. What status is it in?",
        ],
        "trap_refund": [
            "I want to return {qty} x {name} from order {oid}, refunded {method}. How many days ago was it delivered?",
            "Refund {qty} of the {name} in order {oid} {method}, please. Also, how many days since it was delivered?",
            "Please take back {qty} x {name} from {oid} and refund me {method}. How long ago, in days, did it arrive?",
        ],
    },
    ood={
        "intro": ["Account {email}, zip {zip}, name's {name}."],
        "intro_nozip": ["Account {email}, name's {name}."],
        "order_status": ["Where's my parcel {oid} at?"],
        "order_total": ["Remind me what {oid} came to in total?"],
        "stock": ["Got any {name} left? How many units?"],
        "cheapest": ["Cheapest {kind} on offer - which one and what does it go for?"],
        "discount": ["Does {code} still work, and for how much off?"],
        "orders": ["Account {cid}: list whatever orders are {status_text}."],
        "cancel": ["Scrap order {oid}, please - {reason}."],
        "address": ["Redirect {oid} to {street}, {city} {zip}."],
        "refund": ["Sending back {qty} x {name} from {oid}; put the money {method}. What do I get?"],
        "buy": ["Grab me {qty} x {name}, then give me the order number and the total."],
        "buy_code": ["Grab me {qty} x {name} with {code} applied, then give me the order number and the total."],
    },
)


def _address(rng: random.Random) -> dict:
    """Shipping zips come from a range apart from billing zips, so a new address never repeats
    the withheld authentication value."""
    return {"street": f"{rng.randint(1, 99)} {rng.choice(WORDS).title()} Street", "city": rng.choice(CITIES),
            "zip": str(rng.randint(50000, 99999))}


class ShopGenerator(DomainGenerator):
    domain = "shop"
    backend = ShopBackend

    SHAPES = {
        1: ("order_info", "stock", "cheapest", "discount", "orders"),
        2: ("cancel", "address", "buy", "refund", "order_info+cancel", "cheapest+stock", "stock+address"),
        3: ("withheld-cancel+order_info", "withheld-refund+discount", "withheld-address+orders",
            "withheld-buy+cancel", "order_info+trap_cancel", "trap_refund+refund",
            "discount+withheld-buy+order_info"),
        4: ("withheld-buy+late-cancel+order_info", "withheld-refund+late-address+orders",
            "stock+withheld-cancel+late-refund", "withheld-address+trap_cancel+late-buy",
            "withheld-cancel+refund+late-buy"),
    }

    # -- initial state -------------------------------------------------------------------
    def initial_state(self, rng: random.Random) -> dict:
        today = rng.randint(120, 360)
        products = self._products(rng)
        customers = {}
        for i, name in enumerate(person_names(rng, 3)):
            customers[f"C-{rng.randint(100, 999)}{i}"] = {
                "name": name, "email": name.lower().replace(" ", ".") + "@example.com",
                "zip_code": str(rng.randint(10000, 49999)), "store_credit": 0, "address": _address(rng)}
        mix = [(cid, kind) for cid in sorted(customers)
               for kind in ORDER_MIX + rng.choice(((), ("cancelled",), ("shipped",)))]
        rng.shuffle(mix)  # so an order's id says nothing about its status
        orders = {f"O-{1001 + n}": self._order(rng, today, cid, kind, products, customers[cid]["address"])
                  for n, (cid, kind) in enumerate(mix)}
        discounts = {}
        for word, expired in zip(pick_distinct(rng, WORDS, 3), (False, False, True)):
            percent = rng.choice((10, 15, 20, 25))
            shift = -rng.randint(1, 60) if expired else rng.randint(3, 60)
            discounts[f"{word.upper()}{percent}"] = {"percent_off": percent, "expires_day": today + shift}
        return {"today": today, "products": products, "customers": customers, "orders": orders,
                "discounts": discounts, "refunds": {}}

    def _products(self, rng: random.Random) -> dict:
        """A few kinds in several colours, prices distinct within a kind so "cheapest" has one answer."""
        named = []
        for kind in pick_distinct(rng, KINDS, 4):
            colors = pick_distinct(rng, COLORS, rng.randint(2, 3))
            named += [(f"{color} {kind}", price) for color, price in zip(colors, rng.sample(range(8, 90), len(colors)))]
        ids = rng.sample(range(100, 1000), len(named))
        products = {f"P-{i}": {"name": name, "price": price, "stock": rng.randint(3, 30)}
                    for i, (name, price) in zip(ids, named)}
        products[rng.choice(sorted(products))]["stock"] = 0
        return products

    def _order(self, rng: random.Random, today: int, cid: str, kind: str, products: dict, address: dict) -> dict:
        status = "delivered" if kind in DELIVERED_AGO else kind
        delivered = today - rng.randint(*DELIVERED_AGO[kind]) if kind in DELIVERED_AGO else None
        placed = (today if delivered is None else delivered) - rng.randint(*PLACED_BEFORE[status])
        items = [{"product_id": pid, "name": products[pid]["name"], "quantity": rng.randint(1, 3),
                  "unit_price": products[pid]["price"], "refunded": 0}
                 for pid in sorted(rng.sample(sorted(products), rng.randint(1, 2)))]
        return {"customer_id": cid, "status": status, "placed_day": placed, "delivered_day": delivered,
                "address": dict(address), "discount_code": None, "items": items,
                "total": sum(i["unit_price"] * i["quantity"] for i in items)}

    # -- helpers -------------------------------------------------------------------------
    def _orders(self, b: TaskBuilder, cid: str, status: str | None = None) -> list[str]:
        return [oid for oid, o in sorted(b.sim.state["orders"].items())
                if o["customer_id"] == cid and status in (None, o["status"])]

    def _returnable(self, b: TaskBuilder, cid: str, in_window: bool) -> tuple[str, dict, int]:
        """A delivered order of ``cid`` inside (or outside) the refund window, an item and a quantity."""
        state = b.sim.state
        choices = [(oid, item) for oid in self._orders(b, cid, "delivered")
                   if (state["today"] - state["orders"][oid]["delivered_day"] <= REFUND_DAYS) == in_window
                   for item in state["orders"][oid]["items"] if item["refunded"] < item["quantity"]]
        oid, item = b.rng.choice(choices)
        return oid, item, b.rng.randint(1, item["quantity"] - item["refunded"])

    def _auth(self, b: TaskBuilder, cid: str) -> list[C]:
        if b.sim.session.get("customer_id") == cid:
            return []
        customer = b.sim.state["customers"][cid]
        return [C("authenticate", {"email": customer["email"], "zip_code": customer["zip_code"]})]

    def _say(self, b: TaskBuilder, cid: str, intent: str, introduce: bool, withheld: bool, **values: Any) -> str:
        """The request, opened by who the customer is when this turn must authenticate them."""
        msg = PHRASES.say(b.rng, b.split, intent, **values)
        if not introduce:
            return msg
        c = b.sim.state["customers"][cid]
        intro = PHRASES.say(b.rng, b.split, "intro_nozip" if withheld else "intro",
                            name=c["name"], email=c["email"], zip=c["zip_code"])
        return f"{intro} {msg}"

    def _preview(self, b: TaskBuilder, plan: Sequence[C]) -> Any:
        """The result of a plan's last call, from a scratch copy (answers that only a write creates)."""
        scratch = b.backend_cls(b.sim.state)
        for call in plan:
            event = scratch.execute(call)
            if not event.ok:
                raise GeneratorError(f"shop: reference call {call.key()} failed: {event.message}")
        return event.result

    def _request(self, b: TaskBuilder, cid: str, intent: str, values: dict, calls: list[C],
                 answer_keys: Sequence[str] = (), withheld: bool = False, late: bool = False) -> None:
        """A change to the customer's orders: authenticate first if needed, then ``calls``; the
        zip code may be withheld, or the last call's tool may appear only on the next turn."""
        auth = self._auth(b, cid)
        if withheld and not auth:
            raise GeneratorError("shop: a withheld zip code needs a turn that authenticates")
        plan = auth + calls
        result = self._preview(b, plan)
        required = [result[k] for k in answer_keys]
        msg = self._say(b, cid, intent, bool(auth), withheld, **values)
        if withheld:
            zip_code = b.sim.state["customers"][cid]["zip_code"]
            b.ask_later(msg, plan, "zip_code", zip_code, "zip code", required)
        elif late:
            b.late_tool(msg, calls[-1].name, plan, required)
        else:
            b.turn(msg, plan, required)

    # -- reads ---------------------------------------------------------------------------
    def order_info(self, b: TaskBuilder, cid: str) -> None:
        oid = b.rng.choice(self._orders(b, cid))
        aspect = b.rng.choice(["status", "total"])
        b.turn(PHRASES.say(b.rng, b.split, f"order_{aspect}", oid=oid), [C("get_order", {"order_id": oid})],
               [b.sim.state["orders"][oid][aspect]])

    def stock(self, b: TaskBuilder, cid: str) -> None:
        product = b.sim.state["products"][b.rng.choice(sorted(b.sim.state["products"]))]
        b.turn(PHRASES.say(b.rng, b.split, "stock", name=product["name"]),
               [C("search_products", {"keyword": product["name"]})], [product["stock"]])

    def cheapest(self, b: TaskBuilder, cid: str) -> None:
        products = b.sim.state["products"].values()
        kind = b.rng.choice(sorted({p["name"].split()[-1] for p in products}))
        best = min((p for p in products if p["name"].endswith(kind)), key=lambda p: p["price"])
        b.turn(PHRASES.say(b.rng, b.split, "cheapest", kind=kind),
               [C("search_products", {"keyword": kind, "sort_by": "price"})], [best["name"], best["price"]])

    def discount(self, b: TaskBuilder, cid: str) -> None:
        code = b.rng.choice(sorted(b.sim.state["discounts"]))
        info = b.sim.state["discounts"][code]
        answer = info["percent_off"] if info["expires_day"] >= b.sim.state["today"] else "expired"
        b.turn(PHRASES.say(b.rng, b.split, "discount", code=code), [C("check_discount", {"code": code})], [answer])

    def orders(self, b: TaskBuilder, cid: str) -> None:
        status = b.rng.choice([s for s in STATUS_TEXT if self._orders(b, cid, s)])
        b.turn(PHRASES.say(b.rng, b.split, "orders", cid=cid, status_text=STATUS_TEXT[status]),
               [C("list_orders", {"customer_id": cid, "status": status})], self._orders(b, cid, status))

    # -- changes -------------------------------------------------------------------------
    def cancel(self, b: TaskBuilder, cid: str, **mode: bool) -> None:
        oid = b.rng.choice(self._orders(b, cid, "placed"))
        reason = b.rng.choice(sorted(REASONS))
        self._request(b, cid, "cancel", {"oid": oid, "reason": REASONS[reason]},
                      [C("cancel_order", {"order_id": oid, "reason": reason})], **mode)

    def address(self, b: TaskBuilder, cid: str, **mode: bool) -> None:
        oid = b.rng.choice(self._orders(b, cid, "placed"))
        new = _address(b.rng)
        self._request(b, cid, "address", {"oid": oid, **new},
                      [C("update_shipping_address", {"order_id": oid, "street": new["street"], "city": new["city"],
                                                     "zip_code": new["zip"]})], **mode)

    def refund(self, b: TaskBuilder, cid: str, **mode: bool) -> None:
        oid, item, qty = self._returnable(b, cid, in_window=True)
        method = b.rng.choice(sorted(METHODS))
        calls = [C("get_order", {"order_id": oid}),
                 C("request_refund", {"order_id": oid, "product_id": item["product_id"], "quantity": qty,
                                      "method": method})]
        self._request(b, cid, "refund", {"oid": oid, "name": item["name"], "qty": qty, "method": METHODS[method]},
                      calls, ("amount",), **mode)

    def buy(self, b: TaskBuilder, cid: str, **mode: bool) -> None:
        state = b.sim.state
        qty = b.rng.randint(1, 2)
        pid = b.rng.choice([p for p, v in sorted(state["products"].items()) if v["stock"] >= qty])
        active = [c for c, d in sorted(state["discounts"].items()) if d["expires_day"] >= state["today"]]
        code = b.rng.choice(active + [""])
        name = state["products"][pid]["name"]
        order = {"customer_id": cid, "product_id": pid, "quantity": qty} | ({"discount_code": code} if code else {})
        calls = [C("search_products", {"keyword": name}), C("place_order", order)]
        self._request(b, cid, "buy_code" if code else "buy", {"qty": qty, "name": name, "code": code},
                      calls, ("order_id", "total"), **mode)

    # -- constraint traps: the reference only looks the order up and reports ------------------
    def _trap(self, b: TaskBuilder, cid: str, intent: str, values: dict, oid: str, forbidden: C, rule: str,
              answer: Any) -> None:
        auth = self._auth(b, cid)
        msg = self._say(b, cid, intent, bool(auth), False, oid=oid, **values)
        b.trap(msg, forbidden, rule, auth + [C("get_order", {"order_id": oid})], [answer])

    def trap_cancel(self, b: TaskBuilder, cid: str) -> None:
        oid = b.rng.choice(self._orders(b, cid, "shipped"))
        reason = b.rng.choice(sorted(REASONS))
        self._trap(b, cid, "trap_cancel", {"reason": REASONS[reason]}, oid,
                   C("cancel_order", {"order_id": oid, "reason": reason}), "before_shipping", "shipped")

    def trap_refund(self, b: TaskBuilder, cid: str) -> None:
        oid, item, qty = self._returnable(b, cid, in_window=False)
        method = b.rng.choice(sorted(METHODS))
        forbidden = C("request_refund", {"order_id": oid, "product_id": item["product_id"], "quantity": qty,
                                         "method": method})
        age = b.sim.state["today"] - b.sim.state["orders"][oid]["delivered_day"]
        self._trap(b, cid, "trap_refund", {"name": item["name"], "qty": qty, "method": METHODS[method]}, oid,
                   forbidden, "refund_window", age)

    # -- scenarios -----------------------------------------------------------------------
    def compose(self, b: TaskBuilder, difficulty: int) -> str:
        """One customer per task. A shape is ``+``-joined steps; ``withheld-`` leaves the zip code
        out of a change request, ``late-`` hides the change's tool until the next turn."""
        cid = b.rng.choice(sorted(b.sim.state["customers"]))
        shape = b.rng.choice(self.SHAPES[difficulty])
        for step in shape.split("+"):
            mode, _, intent = step.rpartition("-")
            getattr(self, intent)(b, cid, **({mode: True} if mode else {}))
        return shape
