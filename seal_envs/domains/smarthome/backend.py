"""Smart home and car hub: lights, thermostats, door locks, two cars, scenes and energy use."""

from __future__ import annotations

from typing import Literal, Optional  # tool parameters: core's schema builder reads Optional[X], not X | None

from seal_envs.core.backend import Backend, PolicyViolation, ToolError, tool

MIN_TARGET, MAX_TARGET = 10, 30
MIN_CLIMATE_CHARGE = 20
COLORS = ("warm", "cool", "daylight", "red", "blue", "green", "purple")

Color = Literal["warm", "cool", "daylight", "red", "blue", "green", "purple"]


class SmartHomeBackend(Backend):
    domain = "smarthome"
    POLICIES = {
        "owner_pin": "Unlocking a door lock or a car requires the owner PIN to have been entered with authenticate first.",
        "thermostat_range": f"Thermostat targets must stay within {MIN_TARGET} to {MAX_TARGET} degrees.",
        "climate_charge": f"A car cannot start climate control while its charge is below {MIN_CLIMATE_CHARGE} percent.",
    }

    # -- helpers (not tools) -------------------------------------------------------------
    def _device(self, device_id: str, kind: str | None = None) -> dict:
        dev = self.record("devices", device_id, "device_id", "device")
        if kind is not None and dev["kind"] != kind:
            raise ToolError(f"device {device_id} is a {dev['kind']}, not a {kind}", param="device_id",
                            hint=f"use list_devices to find the {kind}s")
        return dev

    def _car(self, car_id: str) -> dict:
        return self.record("cars", car_id, "car_id", "car", hint=f"cars: {', '.join(sorted(self.state['cars']))}")

    def _room(self, room: str) -> str:
        """Rooms are matched loosely (case, spaces) since users type them freely."""
        name = " ".join(room.lower().split())
        if name not in self.state["rooms"]:
            raise ToolError(f"room '{room}' not found", param="room", hint=f"rooms: {', '.join(self.state['rooms'])}")
        return name

    def _require_owner(self, what: str) -> None:
        if not self.session.get("authenticated"):
            raise PolicyViolation("owner_pin", f"unlocking {what} needs the owner PIN: call authenticate first")

    # -- tools ---------------------------------------------------------------------------
    @tool
    def authenticate(self, pin: str) -> dict:
        """Enter the owner PIN; required before unlocking a door or a car.

        Args:
            pin: The owner's 4-digit PIN.
        """
        if pin != self.state["home"]["pin"]:
            raise ToolError("PIN does not match", param="pin")
        self.session["authenticated"] = True
        return {"authenticated": True, "owner": self.state["home"]["owner"]}

    @tool
    def list_devices(self, room: Optional[str] = None) -> list:
        """List the home's devices (lights, thermostats, locks), optionally only those of one room.

        Args:
            room: A room name such as kitchen or living room; leave out for the whole home.
        """
        name = None if room is None else self._room(room)
        return [{"device_id": d, "kind": dev["kind"], "name": dev["name"], "room": dev["room"]}
                for d, dev in sorted(self.state["devices"].items()) if name in (None, dev["room"])]

    @tool
    def get_device(self, device_id: str) -> dict:
        """Current settings of one device: brightness and color of a light, mode and target of a
        thermostat, locked and battery of a lock.

        Args:
            device_id: The device id, like DEV-204.
        """
        return {"device_id": device_id, **self._device(device_id)}

    @tool(writes=True, schema={"brightness": {"minimum": 0, "maximum": 100}})
    def set_light(self, device_id: str, brightness: int, color: Optional[Color] = None) -> dict:
        """Set a light's brightness and, optionally, its color.

        Args:
            device_id: The light's device id, like DEV-204.
            brightness: Brightness in percent, 0 to 100; 0 turns the light off.
            color: The new color; leave out to keep the current one.
        """
        light = self._device(device_id, "light")
        light["brightness"] = brightness
        if color is not None:
            light["color"] = color
        return {"device_id": device_id, "brightness": brightness, "color": light["color"]}

    @tool(writes=True, policies=("thermostat_range",))
    def set_thermostat(self, device_id: str, mode: Literal["heat", "cool", "auto", "off"],
                       target: Optional[int] = None) -> dict:
        """Set a thermostat's mode and, optionally, its target temperature.

        Args:
            device_id: The thermostat's device id, like DEV-311.
            mode: The operating mode.
            target: Target temperature in degrees Celsius; leave out to keep the current one.
        """
        thermostat = self._device(device_id, "thermostat")
        if target is not None and not MIN_TARGET <= target <= MAX_TARGET:
            raise PolicyViolation("thermostat_range",
                                  f"target {target} is outside the allowed {MIN_TARGET} to {MAX_TARGET} degrees")
        thermostat["mode"] = mode
        if target is not None:
            thermostat["target"] = target
        return {"device_id": device_id, "mode": mode, "target": thermostat["target"]}

    @tool(writes=True, policies=("owner_pin",))
    def set_lock(self, device_id: str, action: Literal["lock", "unlock"]) -> dict:
        """Lock or unlock a door lock.

        Args:
            device_id: The lock's device id, like DEV-407.
            action: Whether to lock or unlock it.
        """
        lock = self._device(device_id, "lock")
        if action == "unlock":
            self._require_owner(lock["name"])
        lock["locked"] = action == "lock"
        return {"device_id": device_id, "locked": lock["locked"]}

    @tool
    def get_car(self, car_id: str) -> dict:
        """A car's charge level, driving range, climate control and door status.

        Args:
            car_id: The car id, like CAR-512.
        """
        return {"car_id": car_id, **self._car(car_id)}

    @tool(writes=True, policies=("climate_charge",), schema={"temperature": {"minimum": 16, "maximum": 28}})
    def set_car_climate(self, car_id: str, action: Literal["start", "stop"], temperature: int = 21) -> dict:
        """Start or stop a car's climate control (heating or cooling the cabin before a trip).

        Args:
            car_id: The car id, like CAR-512.
            action: Whether to start or stop climate control.
            temperature: Cabin temperature in degrees Celsius when starting, 16 to 28.
        """
        car = self._car(car_id)
        if action == "start":
            if car["charge"] < MIN_CLIMATE_CHARGE:
                raise PolicyViolation("climate_charge", f"car {car_id} is at {car['charge']} percent, "
                                                        f"below the {MIN_CLIMATE_CHARGE} percent needed")
            car["climate"] = {"on": True, "temperature": temperature}
        else:
            car["climate"]["on"] = False
        return {"car_id": car_id, "climate": car["climate"]}

    @tool(writes=True, policies=("owner_pin",))
    def set_car_doors(self, car_id: str, action: Literal["lock", "unlock"]) -> dict:
        """Lock or unlock a car's doors.

        Args:
            car_id: The car id, like CAR-512.
            action: Whether to lock or unlock the doors.
        """
        car = self._car(car_id)
        if action == "unlock":
            self._require_owner(f"car {car_id}")
        car["locked"] = action == "lock"
        return {"car_id": car_id, "locked": car["locked"]}

    @tool
    def list_scenes(self) -> list:
        """List the saved scenes (preset settings for several devices at once)."""
        return [{"scene_id": s, "name": scene["name"]} for s, scene in sorted(self.state["scenes"].items())]

    @tool(writes=True)
    def activate_scene(self, scene_id: str) -> dict:
        """Apply a saved scene: every device it names takes the scene's settings.

        Args:
            scene_id: The scene id, like SCN-12.
        """
        scene = self.record("scenes", scene_id, "scene_id", "scene", hint="use list_scenes to find scene ids")
        for setting in scene["settings"]:
            self._device(setting["device_id"]).update({k: v for k, v in setting.items() if k != "device_id"})
        self.state["active_scene"] = scene_id
        return {"scene_id": scene_id, "devices_changed": len(scene["settings"])}

    @tool
    def get_energy_usage(self, period: Literal["today", "week", "month"], room: Optional[str] = None) -> dict:
        """Electricity used in kWh over a period, for one room or the whole home.

        Args:
            period: today, the past week or the past month.
            room: A room name; leave out for the whole home.
        """
        rooms = list(self.state["rooms"]) if room is None else [self._room(room)]
        kwh = round(sum(self.state["energy"][r][period] for r in rooms), 1)
        return {"period": period, "room": room or "whole home", "kwh": kwh}
