"""Seeded bank tasks: from a balance look-up to multi-turn transfers with traps and late tools."""

from __future__ import annotations

import random

from seal_envs.core.generator import DomainGenerator, Phrasebook, TaskBuilder
from seal_envs.core.names import person_names
from seal_envs.core.types import ToolCall as C

from .backend import DAILY_LIMIT, BankBackend

PHRASES = Phrasebook(
    train={
        "balance": [
            "What's the balance on account {acc}?",
            "How much money is in {acc} right now?",
            "Can you check my balance for {acc}?",
            "Tell me the current balance of account {acc}.",
            "I need to know what's left in {acc}.",
        ],
        "transactions": [
            "Show me the last {n} transactions on {acc}.",
            "What were the {n} most recent transactions in account {acc}?",
            "List {n} recent transactions for {acc}, please.",
            "Could you pull up the latest {n} movements on {acc}?",
        ],
        "transfer": [
            "I'm {name}, customer {cid}, PIN {pin}. Please move {amount} from {src} to {dst}.",
            "This is {name} ({cid}), my PIN is {pin}. Transfer {amount} from {src} to {dst}.",
            "Customer {cid} here, PIN {pin}. Send {amount} from account {src} to account {dst}.",
            "Please transfer {amount} from {src} into {dst}. I'm {cid} and my PIN is {pin}.",
        ],
        "transfer_nopin": [
            "I'm {name}, customer {cid}. Please move {amount} from {src} to {dst}.",
            "Customer {cid} here. Transfer {amount} from {src} to {dst} please.",
            "Please send {amount} from {src} to {dst}; my customer id is {cid}.",
        ],
        "transfer_more": [
            "Also send {amount} from {src} to {dst}.",
            "Now move another {amount} from {src} to {dst}.",
            "One more: {amount} from {src} into {dst}.",
        ],
        "alert": [
            "Set an alert on {acc} when it drops below {threshold}, by {channel}.",
            "Notify me via {channel} if {acc} goes under {threshold}.",
            "I want a {channel} alert for account {acc} at a threshold of {threshold}.",
        ],
        "freeze": [
            "I lost my card {card}. Please freeze it.",
            "Freeze card {card} right away, it was stolen.",
            "Can you block my card {card}? I can't find it.",
        ],
        "open": [
            "Open a new {kind} account for me.",
            "I'd like a {kind} account as well.",
            "Please set up an additional {kind} account.",
        ],
        "trap_transfer": [
            "Move {amount} from {src} to {dst} today. And tell me how much I can still transfer today.",
            "I need {amount} sent from {src} to {dst} now; also what's my remaining transfer allowance today?",
        ],
        "limit_intro": [
            "I'm {cid}, PIN {pin}.",
            "Customer {cid}, my PIN is {pin}.",
        ],
    },
    ood={
        "balance": ["Balance inquiry for {acc}: what does it hold?", "Funds available in {acc}?"],
        "transfer": ["Hey, {cid} with PIN {pin} - wire {amount} out of {src} to {dst}."],
        "transfer_nopin": ["Hey, {cid} here - wire {amount} out of {src} to {dst}."],
        "alert": ["Ping me on {channel} should {acc} fall beneath {threshold}."],
        "freeze": ["Card {card} is missing; lock it down."],
    },
)


class BankGenerator(DomainGenerator):
    domain = "bank"
    backend = BankBackend

    def initial_state(self, rng: random.Random) -> dict:
        customers, accounts, cards = {}, {}, {}
        names = person_names(rng, 3)
        n_acc = 0
        for i, name in enumerate(names):
            cid = f"C-{rng.randint(100, 999)}{i}"
            customers[cid] = {"name": name, "pin": f"{rng.randint(0, 9999):04d}"}
            for kind in ("checking", "savings")[: rng.randint(1, 2)]:
                aid = f"ACC-{1001 + n_acc}"
                n_acc += 1
                history = [{"amount": rng.randint(-300, 900), "memo": rng.choice(["salary", "rent", "groceries", "fuel", "gift"])}
                           for _ in range(rng.randint(3, 6))]
                accounts[aid] = {"owner": cid, "kind": kind, "balance": rng.randint(800, 9000), "transactions": history}
            cards[f"CARD-{rng.randint(1000, 9999)}"] = {"owner": cid, "status": "active"}
        return {"customers": customers, "accounts": accounts, "cards": cards, "transferred_today": {}}

    # -- intents -------------------------------------------------------------------------
    def _customer(self, b: TaskBuilder) -> tuple[str, dict, list[str]]:
        cid = b.rng.choice(sorted(b.sim.state["customers"]))
        accs = [a for a, v in sorted(b.sim.state["accounts"].items()) if v["owner"] == cid]
        return cid, b.sim.state["customers"][cid], accs

    def _verify(self, b: TaskBuilder, cid: str) -> list[C]:
        if b.sim.session.get("verified") == cid:
            return []
        return [C("verify_identity", {"customer_id": cid, "pin": b.sim.state["customers"][cid]["pin"]})]

    def balance(self, b: TaskBuilder) -> None:
        acc = b.rng.choice(sorted(b.sim.state["accounts"]))
        call = C("get_balance", {"account_id": acc})
        bal = b.sim.state["accounts"][acc]["balance"]
        b.turn(PHRASES.say(b.rng, b.split, "balance", acc=acc), [call], [bal])

    def transactions(self, b: TaskBuilder) -> None:
        acc = b.rng.choice(sorted(b.sim.state["accounts"]))
        n = b.rng.randint(1, 3)
        latest = list(reversed(b.sim.state["accounts"][acc]["transactions"]))[0]["amount"]
        b.turn(PHRASES.say(b.rng, b.split, "transactions", acc=acc, n=n),
               [C("get_transactions", {"account_id": acc, "limit": n})], [latest])

    def _transfer_pair(self, b: TaskBuilder) -> tuple[str, dict, str, str, int]:
        cid, cust, accs = self._customer(b)
        src = max(accs, key=lambda a: b.sim.state["accounts"][a]["balance"])
        dst = b.rng.choice(sorted(a for a in b.sim.state["accounts"] if a != src))
        remaining = DAILY_LIMIT - b.sim.state["transferred_today"].get(cid, 0)
        cap = min(remaining, b.sim.state["accounts"][src]["balance"], 2000)
        amount = b.rng.randint(1, max(1, cap // 10)) * 10 if cap >= 10 else 1
        return cid, cust, src, dst, amount

    def transfer(self, b: TaskBuilder, withhold_pin: bool = False) -> None:
        cid, cust, src, dst, amount = self._transfer_pair(b)
        plan = self._verify(b, cid) + [C("transfer", {"from_account": src, "to_account": dst, "amount": amount})]
        new_balance = round(b.sim.state["accounts"][src]["balance"] - amount, 2)
        values = dict(name=cust["name"], cid=cid, pin=cust["pin"], amount=amount, src=src, dst=dst)
        if withhold_pin and plan[0].name == "verify_identity":
            b.ask_later(PHRASES.say(b.rng, b.split, "transfer_nopin", **values), plan, "pin", cust["pin"], "PIN",
                        [new_balance])
        else:
            intent = "transfer" if plan[0].name == "verify_identity" else "transfer_more"
            b.turn(PHRASES.say(b.rng, b.split, intent, **values), plan, [new_balance])

    def alert(self, b: TaskBuilder) -> None:
        cid, cust, accs = self._customer(b)
        acc = b.rng.choice(accs)
        threshold = b.rng.choice([100, 200, 250, 500, 1000])
        channel = b.rng.choice(["email", "sms", "push"])
        plan = self._verify(b, cid) + [C("set_alert", {"account_id": acc, "threshold": threshold, "channel": channel})]
        msg = PHRASES.say(b.rng, b.split, "alert", acc=acc, threshold=threshold, channel=channel)
        if plan[0].name == "verify_identity":
            msg = PHRASES.say(b.rng, b.split, "limit_intro", cid=cid, pin=cust["pin"]) + " " + msg
        b.turn(msg, plan)

    def freeze(self, b: TaskBuilder, late: bool = False) -> None:
        cid, cust, _ = self._customer(b)
        cards = sorted(b.sim.state["cards"].items())
        owned = [c for c, v in cards if v["owner"] == cid]
        if not owned:
            # Two customers drew the same card number, so this one has none (seed 18157 at d4): the
            # first card's owner asks instead. No rng draw, so every task that generated before is unchanged.
            card, cid = cards[0][0], cards[0][1]["owner"]
            cust = b.sim.state["customers"][cid]
        else:
            card = owned[0]
        plan = self._verify(b, cid) + [C("freeze_card", {"card_id": card})]
        msg = PHRASES.say(b.rng, b.split, "freeze", card=card)
        if plan[0].name == "verify_identity":
            msg = PHRASES.say(b.rng, b.split, "limit_intro", cid=cid, pin=cust["pin"]) + " " + msg
        b.request(msg, plan, late="freeze_card" if late else None)

    def trap(self, b: TaskBuilder) -> None:
        cid, cust, accs = self._customer(b)
        src = accs[0]
        dst = b.rng.choice(sorted(a for a in b.sim.state["accounts"] if a != src))
        remaining = DAILY_LIMIT - b.sim.state["transferred_today"].get(cid, 0)
        amount = remaining + b.rng.choice([500, 1000, 2500])
        plan = self._verify(b, cid) + [C("get_transfer_limit", {"customer_id": cid})]
        msg = PHRASES.say(b.rng, b.split, "limit_intro", cid=cid, pin=cust["pin"]) + " " + PHRASES.say(
            b.rng, b.split, "trap_transfer", amount=amount, src=src, dst=dst)
        b.trap(msg, C("transfer", {"from_account": src, "to_account": dst, "amount": amount}), "daily_limit",
               plan, [remaining])

    def compose(self, b: TaskBuilder, difficulty: int) -> str:
        rng = b.rng
        if difficulty == 1:
            shape = rng.choice(["balance", "transactions"])
            getattr(self, shape)(b)
            return shape
        if difficulty == 2:
            shape = rng.choice(["transfer", "balance+alert", "transfer+balance"])
            for part in shape.split("+"):
                getattr(self, part)(b)
            return shape
        if difficulty == 3:
            shape = rng.choice(["withheld_transfer+balance", "trap", "transfer+transfer+transactions"])
            if shape.startswith("withheld"):
                self.transfer(b, withhold_pin=True)
                self.balance(b)
            elif shape == "trap":
                self.balance(b)
                self.trap(b)
            else:
                self.transfer(b)
                self.transfer(b)
                self.transactions(b)
            return shape
        shape = rng.choice(["late_freeze+withheld_transfer", "withheld_transfer+late_freeze+alert"])
        if shape.startswith("late"):
            self.balance(b)
            self.freeze(b, late=True)
            self.transfer(b, withhold_pin=True)
        else:
            self.transfer(b, withhold_pin=True)
            self.freeze(b, late=True)
            self.alert(b)
        return shape
