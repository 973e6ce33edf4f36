"""Retail bank: accounts, transfers, cards and alerts, with identity and limit policies."""

from __future__ import annotations

from typing import Literal

from seal_envs.core.backend import Backend, PolicyViolation, ToolError, tool

DAILY_LIMIT = 5000


class BankBackend(Backend):
    domain = "bank"
    POLICIES = {
        "identity_verified": "The customer's identity must be verified with verify_identity before any change to their accounts or cards.",
        "daily_limit": f"A customer may transfer at most {DAILY_LIMIT} in total per day.",
        "own_accounts": "Money can only be moved out of accounts the verified customer owns.",
    }

    # -- helpers (not tools) -------------------------------------------------------------
    def _account(self, account_id: str) -> dict:
        return self.record("accounts", account_id, "account_id", "account")

    def _require_verified(self, customer_id: str) -> None:
        if self.session.get("verified") != customer_id:
            raise PolicyViolation("identity_verified", f"identity of customer {customer_id} is not verified")

    # -- tools ---------------------------------------------------------------------------
    @tool
    def verify_identity(self, customer_id: str, pin: str) -> dict:
        """Verify a customer's identity with their PIN; required before any change.

        Args:
            customer_id: The customer id, like C-204.
            pin: The customer's 4-digit PIN.
        """
        cust = self.record("customers", customer_id, "customer_id", "customer")
        if cust["pin"] != pin:
            raise ToolError("PIN does not match", param="pin")
        self.session["verified"] = customer_id
        return {"verified": True, "customer_id": customer_id}

    @tool
    def list_accounts(self, customer_id: str) -> list:
        """List the accounts a customer owns.

        Args:
            customer_id: The customer id, like C-204.
        """
        self.record("customers", customer_id, "customer_id", "customer")
        return [{"account_id": a, "kind": acc["kind"]} for a, acc in sorted(self.state["accounts"].items())
                if acc["owner"] == customer_id]

    @tool
    def get_balance(self, account_id: str) -> dict:
        """Current balance of an account.

        Args:
            account_id: The account id, like ACC-1001.
        """
        acc = self._account(account_id)
        return {"account_id": account_id, "balance": acc["balance"]}

    @tool
    def get_transactions(self, account_id: str, limit: int = 3) -> list:
        """Most recent transactions of an account, newest first.

        Args:
            account_id: The account id, like ACC-1001.
            limit: How many transactions to return (1 to 10).
        """
        return list(reversed(self._account(account_id)["transactions"]))[:limit]

    @tool
    def get_transfer_limit(self, customer_id: str) -> dict:
        """The daily transfer limit and how much of it remains today.

        Args:
            customer_id: The customer id, like C-204.
        """
        self.record("customers", customer_id, "customer_id", "customer")
        used = self.state["transferred_today"].get(customer_id, 0)
        return {"daily_limit": DAILY_LIMIT, "remaining": DAILY_LIMIT - used}

    @tool(writes=True, policies=("identity_verified", "daily_limit", "own_accounts"),
          schema={"amount": {"exclusiveMinimum": 0}})
    def transfer(self, from_account: str, to_account: str, amount: float) -> dict:
        """Move money between two accounts.

        Args:
            from_account: The account to take money from.
            to_account: The account to send money to.
            amount: How much to move (positive).
        """
        src, dst = self._account(from_account), self._account(to_account)
        owner = src["owner"]
        self._require_verified(owner)
        used = self.state["transferred_today"].get(owner, 0)
        if used + amount > DAILY_LIMIT:
            raise PolicyViolation("daily_limit", f"transfer refused: it would exceed the daily limit of {DAILY_LIMIT}")
        if src["balance"] < amount:
            raise ToolError(f"insufficient funds in {from_account}", param="amount")
        src["balance"] = round(src["balance"] - amount, 2)
        dst["balance"] = round(dst["balance"] + amount, 2)
        self.state["transferred_today"][owner] = round(used + amount, 2)
        src["transactions"].append({"amount": -amount, "to": to_account})
        dst["transactions"].append({"amount": amount, "from": from_account})
        return {"status": "done", "new_balance": src["balance"]}

    @tool(writes=True, policies=("identity_verified",))
    def freeze_card(self, card_id: str) -> dict:
        """Freeze a payment card so it can no longer be used.

        Args:
            card_id: The card id, like CARD-5521.
        """
        card = self.record("cards", card_id, "card_id", "card")
        self._require_verified(card["owner"])
        card["status"] = "frozen"
        return {"card_id": card_id, "status": "frozen"}

    @tool(writes=True, policies=("identity_verified",))
    def set_alert(self, account_id: str, threshold: int, channel: Literal["email", "sms", "push"]) -> dict:
        """Alert the customer when the balance drops below a threshold.

        Args:
            account_id: The account to watch.
            threshold: Balance below which to alert.
            channel: How to send the alert.
        """
        acc = self._account(account_id)
        self._require_verified(acc["owner"])
        acc["alert"] = {"threshold": threshold, "channel": channel}
        return {"account_id": account_id, "alert": acc["alert"]}

    @tool(writes=True, policies=("identity_verified",))
    def open_account(self, customer_id: str, kind: Literal["checking", "savings"]) -> dict:
        """Open a new empty account for a customer.

        Args:
            customer_id: The customer id, like C-204.
            kind: The kind of account.
        """
        self.record("customers", customer_id, "customer_id", "customer")
        self._require_verified(customer_id)
        new_id = f"ACC-{1001 + len(self.state['accounts'])}"
        self.state["accounts"][new_id] = {"owner": customer_id, "kind": kind, "balance": 0, "transactions": []}
        return {"account_id": new_id, "kind": kind}
