"""Bank domain: identity checks before changes, a daily transfer limit, cards and alerts."""

from .backend import BankBackend
from .generator import BankGenerator

GENERATOR = BankGenerator()

__all__ = ["BankBackend", "BankGenerator", "GENERATOR"]
