"""Online shop: products with stock, orders through their life cycle, refunds and discount codes."""

from __future__ import annotations

from typing import Literal

from seal_envs.core.backend import Backend, PolicyViolation, ToolError, tool

REFUND_DAYS = 30

OrderStatus = Literal["any", "placed", "shipped", "delivered", "cancelled"]


class ShopBackend(Backend):
    domain = "shop"
    POLICIES = {
        "authenticated": "The customer must be authenticated with authenticate (email + zip code) before any change to their orders.",
        "before_shipping": "An order can be cancelled or have its shipping address changed only while it is still placed, before it ships.",
        "refund_window": f"Refunds are given only for delivered orders, within {REFUND_DAYS} days of delivery.",
    }

    # -- helpers (not tools) -------------------------------------------------------------
    def _order(self, order_id: str) -> dict:
        return self.record("orders", order_id, "order_id", "order")

    def _product(self, product_id: str) -> dict:
        return self.record("products", product_id, "product_id", "product", hint="search_products gives product ids")

    def _customer(self, customer_id: str) -> dict:
        return self.record("customers", customer_id, "customer_id", "customer")

    def _require_authenticated(self, customer_id: str) -> None:
        if self.session.get("customer_id") != customer_id:
            raise PolicyViolation("authenticated", f"customer {customer_id} is not authenticated")

    def _require_open(self, order_id: str, order: dict) -> None:
        """Shared by the changes that stop making sense once the parcel has left."""
        if order["status"] == "cancelled":
            raise ToolError(f"order {order_id} is already cancelled", param="order_id")
        if order["status"] != "placed":
            raise PolicyViolation("before_shipping", f"order {order_id} has already {order['status']}")

    def _restock(self, product_id: str, quantity: int) -> None:
        self.state["products"][product_id]["stock"] += quantity

    def _discount(self, code: str, param: str) -> dict:
        code = code.strip().upper()
        discount = self.state["discounts"].get(code)
        if discount is None:
            raise ToolError(f"discount code {code} does not exist", param=param)
        status = "active" if self.state["today"] <= discount["expires_day"] else "expired"
        return {"code": code, **discount, "status": status}

    def _order_view(self, order_id: str, order: dict) -> dict:
        """The order as the customer sees it, with the age of a delivery so the refund window is visible."""
        view = {"order_id": order_id, **order}
        if order.get("delivered_day") is not None:
            view["days_since_delivery"] = self.state["today"] - order["delivered_day"]
        return view

    # -- reads ---------------------------------------------------------------------------
    @tool
    def authenticate(self, email: str, zip_code: str) -> dict:
        """Authenticate a customer by email and billing zip code; required before any change to their orders.

        Args:
            email: The customer's email address.
            zip_code: The customer's 5-digit billing zip code.
        """
        match = [cid for cid, c in sorted(self.state["customers"].items()) if c["email"] == email.strip().lower()]
        if not match:
            raise ToolError(f"no customer with email {email}", param="email")
        customer_id = match[0]
        if self.state["customers"][customer_id]["zip_code"] != zip_code.strip():
            raise ToolError("zip code does not match", param="zip_code")
        self.session["customer_id"] = customer_id
        return {"authenticated": True, "customer_id": customer_id, "name": self.state["customers"][customer_id]["name"]}

    @tool
    def search_products(self, keyword: str, sort_by: Literal["name", "price", "stock"] = "name") -> list:
        """Find products whose name contains a keyword, with price and stock.

        Args:
            keyword: Part of the product name, like "mug" or "blue mug".
            sort_by: Order of the results; "price" lists the cheapest first, "stock" the most stocked first.
        """
        needle = keyword.strip().lower()
        found = [{"product_id": pid, **p} for pid, p in sorted(self.state["products"].items())
                 if needle in p["name"].lower()]
        keys = {"name": lambda p: p["name"], "price": lambda p: p["price"], "stock": lambda p: -p["stock"]}
        return sorted(found, key=keys[sort_by])

    @tool
    def get_order(self, order_id: str) -> dict:
        """Details of an order: status, items, total, dates (day numbers) and shipping address.

        Args:
            order_id: The order id, like O-1043.
        """
        return self._order_view(order_id, self._order(order_id))

    @tool
    def list_orders(self, customer_id: str, status: OrderStatus = "any") -> list:
        """A customer's orders, optionally only those in one status.

        Args:
            customer_id: The customer id, like C-2041.
            status: Only orders in this status; "any" lists them all.
        """
        self._customer(customer_id)
        return [{"order_id": oid, "status": o["status"], "total": o["total"], "placed_day": o["placed_day"]}
                for oid, o in sorted(self.state["orders"].items())
                if o["customer_id"] == customer_id and status in ("any", o["status"])]

    @tool
    def check_discount(self, code: str) -> dict:
        """Whether a discount code is active, how much it takes off and until which day.

        Args:
            code: The discount code, like AMBER15.
        """
        return self._discount(code, "code")

    # -- writes --------------------------------------------------------------------------
    @tool(writes=True, policies=("authenticated",), schema={"quantity": {"minimum": 1}})
    def place_order(self, customer_id: str, product_id: str, quantity: int, discount_code: str = "") -> dict:
        """Order a product for a customer, shipped to their saved address.

        Args:
            customer_id: The customer id, like C-2041.
            product_id: The product id, like P-417.
            quantity: How many units to order.
            discount_code: An active discount code to apply; leave empty for none.
        """
        customer = self._customer(customer_id)
        product = self._product(product_id)
        self._require_authenticated(customer_id)
        discount = self._discount(discount_code, "discount_code") if discount_code.strip() else None
        if discount is not None and discount["status"] != "active":
            raise ToolError(f"discount code {discount['code']} expired on day {discount['expires_day']}",
                            param="discount_code")
        if product["stock"] < quantity:
            raise ToolError(f"only {product['stock']} of {product_id} in stock", param="quantity")
        product["stock"] -= quantity
        percent = discount["percent_off"] if discount else 0
        unit_price = round(product["price"] * (100 - percent) / 100, 2)
        order_id = f"O-{1001 + len(self.state['orders'])}"
        order = {
            "customer_id": customer_id, "status": "placed", "placed_day": self.state["today"],
            "delivered_day": None, "address": dict(customer["address"]),
            "discount_code": discount["code"] if discount else None,
            "items": [{"product_id": product_id, "name": product["name"], "quantity": quantity,
                       "unit_price": unit_price, "refunded": 0}],
            "total": round(unit_price * quantity, 2),
        }
        self.state["orders"][order_id] = order
        return {"order_id": order_id, "status": "placed", "total": order["total"]}

    @tool(writes=True, policies=("authenticated", "before_shipping"))
    def cancel_order(self, order_id: str,
                     reason: Literal["no_longer_needed", "ordered_by_mistake", "found_cheaper", "other"]) -> dict:
        """Cancel an order that has not shipped; its items go back to stock and the total is refunded.

        Args:
            order_id: The order id, like O-1043.
            reason: Why the customer cancels.
        """
        order = self._order(order_id)
        self._require_authenticated(order["customer_id"])
        self._require_open(order_id, order)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        for item in order["items"]:
            self._restock(item["product_id"], item["quantity"])
        return {"order_id": order_id, "status": "cancelled", "refunded": order["total"]}

    @tool(writes=True, policies=("authenticated", "before_shipping"))
    def update_shipping_address(self, order_id: str, street: str, city: str, zip_code: str) -> dict:
        """Change where an order that has not shipped yet will be delivered.

        Args:
            order_id: The order id, like O-1043.
            street: House number and street, like 12 Maple Street.
            city: The city.
            zip_code: The 5-digit zip code of the new address.
        """
        order = self._order(order_id)
        self._require_authenticated(order["customer_id"])
        self._require_open(order_id, order)
        order["address"] = {"street": street.strip(), "city": city.strip(), "zip": zip_code.strip()}
        return {"order_id": order_id, "address": order["address"]}

    @tool(writes=True, policies=("authenticated", "refund_window"), schema={"quantity": {"minimum": 1}})
    def request_refund(self, order_id: str, product_id: str, quantity: int,
                       method: Literal["original_payment", "store_credit"]) -> dict:
        """Return delivered items of an order for a refund; the items go back to stock.

        Args:
            order_id: The order id, like O-1043.
            product_id: The product to return, like P-417 (get_order lists an order's products).
            quantity: How many units to return.
            method: Where the money goes: back to the original payment or to the customer's store credit.
        """
        order = self._order(order_id)
        self._require_authenticated(order["customer_id"])
        if order["status"] == "cancelled":
            raise ToolError(f"order {order_id} was cancelled and already refunded", param="order_id")
        if order["status"] != "delivered":
            raise PolicyViolation("refund_window", f"order {order_id} has not been delivered yet")
        age = self.state["today"] - order["delivered_day"]
        if age > REFUND_DAYS:
            raise PolicyViolation("refund_window", f"order {order_id} was delivered {age} days ago")
        item = next((i for i in order["items"] if i["product_id"] == product_id), None)
        if item is None:
            raise ToolError(f"product {product_id} is not in order {order_id}", param="product_id")
        if quantity > item["quantity"] - item["refunded"]:
            raise ToolError(f"only {item['quantity'] - item['refunded']} of {product_id} can be returned",
                            param="quantity")
        amount = round(item["unit_price"] * quantity, 2)
        item["refunded"] += quantity
        self._restock(product_id, quantity)
        if method == "store_credit":
            customer = self.state["customers"][order["customer_id"]]
            customer["store_credit"] = round(customer["store_credit"] + amount, 2)
        refund_id = f"R-{501 + len(self.state['refunds'])}"
        self.state["refunds"][refund_id] = {"order_id": order_id, "product_id": product_id, "quantity": quantity,
                                            "amount": amount, "method": method}
        return {"refund_id": refund_id, "amount": amount, "method": method}
