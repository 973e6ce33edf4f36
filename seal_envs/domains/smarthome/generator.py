"""Seeded smart home tasks: from a single device look-up to multi-turn routines with a PIN the
user holds back, a tool that is switched on late, and requests the house rules refuse.

This is the held-out domain, so its phrasings lean on clipped, voice-assistant commands rather
than the customer-service prose of the training domains; ids, numbers and enum words still
appear verbatim so they can be copied.
"""

from __future__ import annotations

import random
from typing import Any, NamedTuple

from seal_envs.core.generator import DomainGenerator, Phrasebook, TaskBuilder
from seal_envs.core.names import person_names
from seal_envs.core.types import ToolCall as C

from .backend import COLORS, MAX_TARGET, MIN_CLIMATE_CHARGE, MIN_TARGET, SmartHomeBackend

PHRASES = Phrasebook(
    train={
        "light_status": [
            "How bright is {dev} right now, and what color is it on?",
            "{dev}, the {name}: what brightness and color is it at?",
            "Check {dev} for me. Brightness and color?",
            "What's the {name} ({dev}) doing? I need its brightness and color.",
        ],
        "thermostat_status": [
            "What mode is thermostat {dev} in, and what's the target?",
            "Thermostat {dev}: mode and target temperature, please.",
            "Is the {name} ({dev}) heating or cooling? And what's it aiming for?",
        ],
        "car_status": [
            "How much charge does {car} have, and what's the range?",
            "Battery and range on {car}?",
            "Give me the charge level and driving range of car {car}.",
            "Before I head out: what's {car} at, charge and range?",
        ],
        "energy_room": [
            "How many kWh did the {room} use {period_words}?",
            "Energy report for the {room}, {period_words}.",
            "What was the {room}'s electricity use {period_words}?",
        ],
        "energy_home": [
            "How much energy did the whole house use {period_words}?",
            "Total kWh for the home {period_words}?",
            "What's our electricity use {period_words}, all rooms together?",
        ],
        "room_devices": [
            "What devices are in the {room}? I need their ids.",
            "List everything connected in the {room}, with ids.",
            "Which gadgets does the {room} have? Give me the device ids.",
        ],
        "set_light": [
            "Set {dev} to {brightness} percent, color {color}.",
            "{dev}: brightness {brightness}, make it {color}.",
            "Change the {name} ({dev}) to {color} at {brightness} percent.",
            "Light {dev} -> {brightness} percent and {color}, please.",
        ],
        "lock": [
            "Lock the {name}, {dev}.",
            "Make sure {dev} ({name}) is locked.",
            "Lock up {dev} please, the {name}.",
        ],
        "unlock": [
            "Unlock {what}. PIN is {pin}.",
            "Owner PIN {pin}. Open up {what} for me.",
            "It's {owner}, PIN {pin}: please unlock {what}.",
            "Let me in: unlock {what}, my PIN is {pin}.",
        ],
        "unlock_nopin": [
            "Unlock {what}.",
            "Please open up {what} for me.",
            "It's {owner}. Unlock {what}, please.",
        ],
        "unlock_more": [
            "Unlock {what} too.",
            "Also open up {what}.",
            "And unlock {what} while you're at it.",
        ],
        "room_lights_off": [
            "Switch off every light in the {room}.",
            "Kill the lights in the {room}.",
            "All {room} lights off, please.",
            "Nobody's in the {room}: turn its lights off.",
        ],
        "scene": [
            "Run the {scene} scene.",
            "Start scene {scene}, please.",
            "Put the house in {scene} mode (it's one of the saved scenes).",
        ],
        "car_climate_check": [
            "How much charge is on {car}? Then start its climate at {temperature} degrees.",
            "Pre-condition {car} to {temperature} degrees, and tell me its charge level.",
            "Tell me {car}'s charge, and get the cabin to {temperature} degrees.",
        ],
        "car_climate": [
            "Start the climate in {car} at {temperature} degrees.",
            "Warm up {car} to {temperature} degrees.",
            "Get the cabin of {car} to {temperature} degrees before I leave.",
        ],
        "set_thermostat": [
            "Thermostat {dev}: {mode} mode, target {target} degrees.",
            "Set {dev} to {mode} at {target} degrees.",
            "Put the {name} ({dev}) on {mode}, {target} degrees.",
        ],
        "thermostat_notarget": [
            "Switch thermostat {dev} to {mode} and give it a new target temperature.",
            "Put {dev} on {mode} mode and change the target.",
            "I want the {name} ({dev}) on {mode} with a new target temperature.",
        ],
        "trap_thermostat": [
            "Crank {dev} to {target} degrees on {mode}. What's it set to right now, by the way?",
            "Set thermostat {dev} to {target} degrees. Also what's its current target?",
            "I want {dev} at {target} degrees. And remind me what target it has now.",
        ],
        "trap_climate": [
            "Start the climate in {car} at {temperature} degrees. How much charge does it have left?",
            "Warm up {car} to {temperature} degrees, and tell me its battery level.",
            "Heat {car} to {temperature} degrees please. What's the charge on it?",
        ],
        "trap_pin": [
            "I don't have my PIN on me, just unlock {what} anyway. And what's that lock's battery at?",
            "Forgot the PIN, but open {what} please. Also, battery level of that lock?",
            "Skip the PIN this once and unlock {what}. How much battery does the lock have?",
        ],
    },
    ood={
        "light_status": ["Curious about {dev}: how lit is it, and in which color?"],
        "thermostat_status": ["Thermostat {dev} - which mode, which target?"],
        "car_status": ["Is {car} juiced up? Charge and range, please."],
        "energy_room": ["Power draw of the {room}, {period_words}, in kWh?"],
        "energy_home": ["Household kWh tally {period_words}?"],
        "room_devices": ["Rundown of the {room}'s devices, ids included?"],
        "set_light": ["Could {dev} go {color}, {brightness} percent bright?"],
        "lock": ["Bolt {dev}, the {name}."],
        "unlock": ["PIN {pin} here. Unbolt {what}."],
        "unlock_nopin": ["Unbolt {what}, would you?"],
        "room_lights_off": ["Darken the {room} completely."],
        "scene": ["Cue up the {scene} scene."],
        "car_climate_check": ["{car}: charge level first, then cabin to {temperature} degrees."],
        "car_climate": ["Cabin of {car} to {temperature} degrees, go."],
        "set_thermostat": ["{dev} on {mode}, aim for {target} degrees."],
        "thermostat_notarget": ["Flip {dev} over to {mode} and retarget it."],
        "trap_thermostat": ["{dev} up to {target} degrees! Meanwhile, its present target?"],
        "trap_climate": ["Blast the climate in {car} at {temperature} degrees. Charge left?"],
        "trap_pin": ["No PIN today. Unbolt {what} regardless; lock battery?"],
    },
)

PERIOD_WORDS = {"today": "today", "week": "this week", "month": "this month"}
DOOR_ROOMS = {"front door": "hallway", "back door": "kitchen", "garage door": "garage", "patio door": "living room"}
OTHER_ROOMS = ("bedroom", "office", "bathroom", "nursery", "kitchen", "living room")
LIGHT_NAMES = ("ceiling light", "lamp", "spotlights", "light strip")
SCENE_NAMES = ("movie night", "good morning", "bedtime", "dinner", "away", "reading")
CAR_MODELS = ("hatchback", "sedan", "SUV", "van")
STATUS_FIELDS = {"light": ("brightness", "color"), "thermostat": ("mode", "target")}

# Which shapes each difficulty draws from. ``withheld_X`` runs intent X with a value held back,
# ``late_X`` runs it with its tool switched on only at a later turn.
SHAPES = {
    1: ("light_status", "thermostat_status", "car_status", "energy", "room_devices", "set_light", "lock"),
    2: ("unlock", "scene", "room_lights_off", "car_climate", "energy+set_light",
        "thermostat_status+set_thermostat"),
    3: ("withheld_unlock+room_lights_off", "withheld_set_thermostat+energy+car_status", "light_status+trap",
        "scene+trap", "car_status+withheld_unlock"),
    4: ("energy+late_scene+withheld_unlock", "withheld_unlock+late_car_climate+room_lights_off",
        "withheld_set_thermostat+late_room_lights_off+scene"),
}
FLAGS = {"withheld_": "withhold", "late_": "late"}
TRAP_RULES = {"trap_thermostat": "thermostat_range", "trap_climate": "climate_charge", "trap_pin": "owner_pin"}


class Trap(NamedTuple):
    """A refused request: what the user says, the call a rule forbids, and the look-up (and the
    field of its result) the reference answers with instead."""

    intent: str
    values: dict
    forbidden: C
    lookup: C
    field: str


def _ids(rng: random.Random, prefix: str, n: int, low: int, high: int) -> list[str]:
    return [f"{prefix}-{i}" for i in rng.sample(range(low, high), n)]


class SmartHomeGenerator(DomainGenerator):
    domain = "smarthome"
    backend = SmartHomeBackend

    def initial_state(self, rng: random.Random) -> dict:
        doors = sorted(rng.sample(sorted(DOOR_ROOMS), 2))
        rooms = sorted({DOOR_ROOMS[d] for d in doors} | set(rng.sample(OTHER_ROOMS, 2)))
        specs: list[dict[str, Any]] = []
        for room in rooms:
            for light in rng.sample(LIGHT_NAMES, rng.randint(1, 2)):
                specs.append({"kind": "light", "name": f"{room} {light}", "room": room,
                              "brightness": rng.choice([0, 20, 40, 60, 80, 100]), "color": rng.choice(COLORS)})
        for room in rng.sample([r for r in rooms if r not in ("hallway", "garage")], 2):
            specs.append({"kind": "thermostat", "name": f"{room} thermostat", "room": room,
                          "mode": rng.choice(["heat", "cool", "auto", "off"]), "target": rng.randint(17, 24),
                          "current": rng.randint(15, 26)})
        for i, door in enumerate(doors):
            specs.append({"kind": "lock", "name": door, "room": DOOR_ROOMS[door],
                          "locked": i == 0 or rng.random() < 0.6, "battery": rng.randint(15, 100)})
        devices = dict(zip(_ids(rng, "DEV", len(specs), 100, 1000), specs))

        # One car always too low on charge for climate control, so that rule can be tested.
        charges = [rng.randint(5, MIN_CLIMATE_CHARGE - 1), rng.randint(35, 95)]
        rng.shuffle(charges)
        cars = {cid: {"model": model, "charge": charge, "range_km": charge * 4,
                      "climate": {"on": False, "temperature": 21}, "locked": True}
                for cid, model, charge in zip(_ids(rng, "CAR", 2, 100, 1000), rng.sample(CAR_MODELS, 2), charges)}

        lights = [d for d, v in devices.items() if v["kind"] == "light"]
        thermostats = [d for d, v in devices.items() if v["kind"] == "thermostat"]
        locks = [d for d, v in devices.items() if v["kind"] == "lock"]
        scenes = {}
        for sid, name in zip(_ids(rng, "SCN", 3, 10, 100), rng.sample(SCENE_NAMES, 3)):
            settings = [{"device_id": d, "brightness": rng.choice([10, 30, 50, 70, 90]), "color": rng.choice(COLORS)}
                        for d in sorted(rng.sample(lights, 2))]
            settings.append({"device_id": rng.choice(thermostats), "mode": rng.choice(["heat", "cool", "auto"]),
                             "target": rng.randint(18, 23)})
            if name in ("away", "bedtime"):
                settings += [{"device_id": d, "locked": True} for d in locks]
            scenes[sid] = {"name": name, "settings": settings}

        energy = {}
        for room in rooms:
            today = rng.randint(3, 60) / 10
            week = round(today * 7 + rng.randint(-40, 40) / 10, 1)
            month = round(week * 4 + rng.randint(0, 90) / 10, 1)
            energy[room] = {"today": today, "week": max(week, today), "month": month}

        owner = person_names(rng, 1)[0]
        return {"home": {"owner": owner, "pin": f"{rng.randint(0, 9999):04d}"}, "rooms": rooms, "devices": devices,
                "cars": cars, "scenes": scenes, "energy": energy, "active_scene": None}

    # -- helpers -------------------------------------------------------------------------
    def _say(self, b: TaskBuilder, intent: str, **values: Any) -> str:
        return PHRASES.say(b.rng, b.split, intent, **values)

    def _peek(self, b: TaskBuilder, call: C) -> Any:
        """The result a read will give, taken from the tool itself so outputs never drift."""
        return b.try_call(call).result

    def _devices(self, b: TaskBuilder, kind: str, **match: Any) -> list[str]:
        return [d for d, v in sorted(b.sim.state["devices"].items())
                if v["kind"] == kind and all(v[k] == x for k, x in match.items())]

    def _pick(self, b: TaskBuilder, kind: str, **prefer: Any) -> tuple[str, dict]:
        """A device of ``kind``, one matching ``prefer`` when there is one (so a lock request
        changes something)."""
        dev = b.rng.choice(self._devices(b, kind, **prefer) or self._devices(b, kind))
        return dev, b.sim.state["devices"][dev]

    def _car(self, b: TaskBuilder, can_climate: bool) -> tuple[str, dict]:
        cid = next(c for c, v in sorted(b.sim.state["cars"].items())
                   if (v["charge"] >= MIN_CLIMATE_CHARGE) == can_climate)
        return cid, b.sim.state["cars"][cid]

    def _auth(self, b: TaskBuilder) -> list[C]:
        if b.sim.session.get("authenticated"):
            return []
        return [C("authenticate", {"pin": b.sim.state["home"]["pin"]})]

    def _room_with_lights_on(self, b: TaskBuilder) -> tuple[str, list[str]]:
        rooms = [r for r in b.sim.state["rooms"] if any(
            b.sim.state["devices"][d]["brightness"] > 0 for d in self._devices(b, "light", room=r))]
        room = b.rng.choice(rooms or b.sim.state["rooms"])
        return room, self._devices(b, "light", room=room)

    def _lock_target(self, b: TaskBuilder, car: bool) -> tuple[str, C]:
        """Something to unlock: a locked door, or a car. Returns how the user names it and the call."""
        if car:
            cid = b.rng.choice(sorted(b.sim.state["cars"]))
            return f"car {cid}", C("set_car_doors", {"car_id": cid, "action": "unlock"})
        dev, lock = self._pick(b, "lock", locked=True)
        return f"the {lock['name']} ({dev})", C("set_lock", {"device_id": dev, "action": "unlock"})

    # -- intents: look-ups ---------------------------------------------------------------
    def _status(self, b: TaskBuilder, kind: str) -> None:
        dev, d = self._pick(b, kind)
        call = C("get_device", {"device_id": dev})
        result = self._peek(b, call)
        b.turn(self._say(b, f"{kind}_status", dev=dev, name=d["name"]), [call],
               [result[f] for f in STATUS_FIELDS[kind]])

    def light_status(self, b: TaskBuilder) -> None:
        self._status(b, "light")

    def thermostat_status(self, b: TaskBuilder) -> None:
        self._status(b, "thermostat")

    def car_status(self, b: TaskBuilder) -> None:
        cid = b.rng.choice(sorted(b.sim.state["cars"]))
        call = C("get_car", {"car_id": cid})
        result = self._peek(b, call)
        b.turn(self._say(b, "car_status", car=cid), [call], [result["charge"], result["range_km"]])

    def energy(self, b: TaskBuilder) -> None:
        period = b.rng.choice(sorted(PERIOD_WORDS))
        room = b.rng.choice([None, *b.sim.state["rooms"]])
        call = C("get_energy_usage", {"period": period} | ({} if room is None else {"room": room}))
        intent = "energy_home" if room is None else "energy_room"
        b.turn(self._say(b, intent, room=room, period_words=PERIOD_WORDS[period]), [call],
               [self._peek(b, call)["kwh"]])

    def room_devices(self, b: TaskBuilder) -> None:
        room = b.rng.choice(b.sim.state["rooms"])
        call = C("list_devices", {"room": room})
        b.turn(self._say(b, "room_devices", room=room), [call], [d["device_id"] for d in self._peek(b, call)])

    # -- intents: changes ----------------------------------------------------------------
    def set_light(self, b: TaskBuilder) -> None:
        dev, d = self._pick(b, "light")
        brightness = b.rng.choice([level for level in range(10, 101, 10) if level != d["brightness"]])
        color = b.rng.choice(COLORS)
        call = C("set_light", {"device_id": dev, "brightness": brightness, "color": color})
        b.turn(self._say(b, "set_light", dev=dev, name=d["name"], brightness=brightness, color=color), [call])

    def lock(self, b: TaskBuilder) -> None:
        if not self._devices(b, "lock", locked=False):  # every door is locked: ask for something that changes
            return self.set_light(b)
        dev, d = self._pick(b, "lock", locked=False)
        b.turn(self._say(b, "lock", dev=dev, name=d["name"]), [C("set_lock", {"device_id": dev, "action": "lock"})])

    def set_thermostat(self, b: TaskBuilder, withhold: bool = False) -> None:
        dev, d = self._pick(b, "thermostat")
        mode = b.rng.choice(["heat", "cool", "auto"])
        target = b.rng.choice([t for t in range(16, 27) if t != d["target"]])
        plan = [C("set_thermostat", {"device_id": dev, "mode": mode, "target": target})]
        values = dict(dev=dev, name=d["name"], mode=mode, target=target)
        if withhold:
            b.ask_later(self._say(b, "thermostat_notarget", **values), plan, "target", target, "temperature")
        else:
            b.turn(self._say(b, "set_thermostat", **values), plan)

    def unlock(self, b: TaskBuilder, withhold: bool = False) -> None:
        what, call = self._lock_target(b, car=b.rng.random() < 0.4)
        auth = self._auth(b)
        home = b.sim.state["home"]
        values = dict(what=what, owner=home["owner"], pin=home["pin"])
        if not auth:
            b.turn(self._say(b, "unlock_more", **values), [call])
        elif withhold:
            b.ask_later(self._say(b, "unlock_nopin", **values), auth + [call], "pin", home["pin"], "PIN")
        else:
            b.turn(self._say(b, "unlock", **values), auth + [call])

    def room_lights_off(self, b: TaskBuilder, late: bool = False) -> None:
        room, lights = self._room_with_lights_on(b)
        if not any(b.sim.state["devices"][d]["brightness"] > 0 for d in lights):
            return self.set_light(b)  # every light is already off: ask for something that changes
        lit = [d for d in lights if b.sim.state["devices"][d]["brightness"] > 0]
        plan = [C("list_devices", {"room": room})] + [C("set_light", {"device_id": d, "brightness": 0}) for d in lit]
        msg = self._say(b, "room_lights_off", room=room)
        b.request(msg, plan, late="set_light" if late else None)

    def scene(self, b: TaskBuilder, late: bool = False) -> None:
        sid = b.rng.choice(sorted(b.sim.state["scenes"]))
        plan = [C("list_scenes"), C("activate_scene", {"scene_id": sid})]
        msg = self._say(b, "scene", scene=b.sim.state["scenes"][sid]["name"])
        b.request(msg, plan, late="activate_scene" if late else None)

    def car_climate(self, b: TaskBuilder, late: bool = False) -> None:
        """Asked with a charge question when the tool is there; plainly when it comes late, since
        a look-up in the turn where the tool is missing would be a call nobody planned."""
        cid, car = self._car(b, can_climate=True)
        temperature = b.rng.randint(18, 24)
        start = C("set_car_climate", {"car_id": cid, "action": "start", "temperature": temperature})
        if late:
            b.late_tool(self._say(b, "car_climate", car=cid, temperature=temperature), "set_car_climate", [start])
        else:
            b.turn(self._say(b, "car_climate_check", car=cid, temperature=temperature),
                   [C("get_car", {"car_id": cid}), start], [car["charge"]])

    # -- constraint traps: the user asks for what a rule forbids; the reference only looks up
    def _trap_thermostat(self, b: TaskBuilder) -> Trap:
        dev, d = self._pick(b, "thermostat")
        target = b.rng.choice([MIN_TARGET - 4, MIN_TARGET - 2, MAX_TARGET + 2, MAX_TARGET + 5])
        mode = "heat" if target > MAX_TARGET else "cool"
        return Trap("trap_thermostat", dict(dev=dev, target=target, mode=mode),
                    C("set_thermostat", {"device_id": dev, "mode": mode, "target": target}),
                    C("get_device", {"device_id": dev}), "target")

    def _trap_climate(self, b: TaskBuilder) -> Trap:
        cid, _ = self._car(b, can_climate=False)
        temperature = b.rng.randint(18, 24)
        return Trap("trap_climate", dict(car=cid, temperature=temperature),
                    C("set_car_climate", {"car_id": cid, "action": "start", "temperature": temperature}),
                    C("get_car", {"car_id": cid}), "charge")

    def _trap_pin(self, b: TaskBuilder) -> Trap:
        what, unlock = self._lock_target(b, car=False)
        return Trap("trap_pin", dict(what=what), unlock,
                    C("get_device", {"device_id": unlock.arguments["device_id"]}), "battery")

    def trap(self, b: TaskBuilder) -> None:
        kinds = [self._trap_thermostat, self._trap_climate]
        if not b.sim.session.get("authenticated"):
            kinds.append(self._trap_pin)
        t = b.rng.choice(kinds)(b)
        b.trap(self._say(b, t.intent, **t.values), t.forbidden, TRAP_RULES[t.intent], [t.lookup],
               [self._peek(b, t.lookup)[t.field]])

    # -- shapes --------------------------------------------------------------------------
    def _step(self, b: TaskBuilder, step: str) -> None:
        for prefix, flag in FLAGS.items():
            if step.startswith(prefix):
                getattr(self, step.removeprefix(prefix))(b, **{flag: True})
                return
        getattr(self, step)(b)

    def compose(self, b: TaskBuilder, difficulty: int) -> str:
        shape = b.rng.choice(SHAPES[difficulty])
        for step in shape.split("+"):
            self._step(b, step)
        return shape
