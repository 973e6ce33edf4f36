"""Travel domain: verified passengers book flights, pick seats, add bags and cancel within a window."""

from .backend import TravelBackend
from .generator import TravelGenerator

GENERATOR = TravelGenerator()

__all__ = ["TravelBackend", "TravelGenerator", "GENERATOR"]
