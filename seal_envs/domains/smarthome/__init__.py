"""Smart home and car hub (the held-out domain): owner PIN before unlocking, thermostat limits,
no car climate control on a low battery."""

from .backend import SmartHomeBackend
from .generator import SmartHomeGenerator

GENERATOR = SmartHomeGenerator()

__all__ = ["SmartHomeBackend", "SmartHomeGenerator", "GENERATOR"]
