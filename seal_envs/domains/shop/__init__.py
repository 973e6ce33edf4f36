"""Shop domain: authentication before changes, cancellation before shipping, a refund window."""

from .backend import ShopBackend
from .generator import ShopGenerator

GENERATOR = ShopGenerator()

__all__ = ["ShopBackend", "ShopGenerator", "GENERATOR"]
