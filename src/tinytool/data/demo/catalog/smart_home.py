"""Smart home: thermostat, lights, door locks, device status and energy use."""

from __future__ import annotations

from tinytool.data.demo.catalog.base import ToolError, ToolSpec, p_enum, p_int, p_num, phrases
from tinytool.data.demo.catalog.world import DOORS, ROOMS, TODAY, World

COLORS = ("warm white", "cool white", "red", "blue", "green", "purple", "orange")
DOOR_WORDS = {"front": ("front door",), "back": ("back door", "rear door"), "garage": ("garage door", "garage")}


def set_thermostat(w: World, temperature: float, unit: str = "celsius", mode: str | None = None) -> dict:
    c = (temperature - 32) * 5 / 9 if unit == "fahrenheit" else temperature
    if not 5 <= c <= 32:
        raise ToolError("temperature must be between 5 and 32 °C (41-90 °F)")
    t = w.state["devices"]["thermostat"]
    t.update(temperature=round(c, 1), unit="celsius")
    if mode is not None:
        t["mode"] = mode
    return {"status": "ok", "target_temperature": temperature, "unit": unit, "mode": t["mode"]}


def turn_on_lights(w: World, room: str, brightness: int = 100, color: str | None = None) -> dict:
    if not 1 <= brightness <= 100:
        raise ToolError("'brightness' must be between 1 and 100")
    light = w.state["devices"]["lights"][room]
    light.update(on=True, brightness=brightness)
    if color is not None:
        light["color"] = color
    return {"room": room, "on": True, "brightness": brightness, "color": light["color"]}


def turn_off_lights(w: World, room: str) -> dict:
    w.state["devices"]["lights"][room]["on"] = False
    return {"room": room, "on": False}


def lock_door(w: World, door: str) -> dict:
    w.state["devices"]["locks"][door]["locked"] = True
    return {"door": door, "locked": True}


def unlock_door(w: World, door: str) -> dict:
    w.state["devices"]["locks"][door]["locked"] = False
    return {"door": door, "locked": False}


def get_home_status(w: World, device_type: str = "all") -> dict:
    d = w.state["devices"]
    parts = {"thermostat": d["thermostat"], "lights": d["lights"], "locks": d["locks"]}
    if device_type != "all":
        parts = {device_type: parts[device_type]}
    return {k: v for k, v in parts.items()}


def energy_usage(w: World, period: str) -> dict:
    r = w.rng("energy", period, TODAY.isoformat())
    days = {"day": 1, "week": 7, "month": 30}[period]
    kwh = round(sum(r.uniform(6, 14) for _ in range(days)), 1)
    return {"period": period, "kwh": kwh, "estimated_cost_usd": round(kwh * 0.17, 2)}


ROOM = p_enum("room", "Room name.", ROOMS, label="room")
DOOR = p_enum("door", "Which door.", DOORS, say=phrases(DOOR_WORDS), label="door")

TOOLS = [
    ToolSpec(
        "set_thermostat", "smart_home", "Set the home thermostat's target temperature and, optionally, its mode.",
        (p_num("temperature", "Target temperature.", lambda r, w: float(r.choice((18, 19, 20, 21, 22, 23, 24))),
               label="target temperature"),
         p_enum("unit", "Unit of the temperature.", ("celsius", "fahrenheit"), default="celsius", sample_from=("celsius",),
                say=phrases({"celsius": ("°C", "degrees Celsius")})),
         p_enum("mode", "Operating mode.", ("heat", "cool", "auto"), required=False,
                say=phrases({"heat": ("heating mode", "heat"), "cool": ("cooling mode", "cool"), "auto": ("auto mode", "auto")}))),
        set_thermostat,
        templates=("Set the thermostat to {temperature}[ {unit}][ in {mode}].", "Make it {temperature}[ {unit}] in here[, {mode}].",
                   "Change the heating to {temperature}[ {unit}].", "Adjust the thermostat[ to {temperature}][ {unit}][ and switch to {mode}]."),
        gist="set the thermostat", siblings=("turn_on_lights", "get_current_weather", "set_volume"),
    ),
    ToolSpec(
        "turn_on_lights", "smart_home", "Turn on the lights in a room, optionally dimmed or colored.",
        (ROOM, p_int("brightness", "Brightness percent, 1-100.", lambda r, w: r.choice((20, 30, 50, 60, 75)), default=100,
                     say=lambda v, r: r.choice((f"{v}%", f"{v} percent"))),
         p_enum("color", "Light color.", COLORS, required=False)),
        turn_on_lights,
        templates=("Turn on the lights in the {room}[ at {brightness}][, {color}].", "Switch the {room} lights on[ to {brightness} brightness].",
                   "Lights on in the {room}[, make them {color}].", "Can you turn the lights on[ in the {room}]?"),
        gist="turn lights on", siblings=("turn_off_lights", "set_thermostat"),
    ),
    ToolSpec(
        "turn_off_lights", "smart_home", "Turn off the lights in a room.", (ROOM,), turn_off_lights,
        templates=("Turn off the lights in the {room}.", "Switch off the {room} lights.", "Lights off in the {room}, please.",
                   "Kill the lights[ in the {room}]."),
        gist="turn lights off", siblings=("turn_on_lights", "lock_door"),
    ),
    ToolSpec(
        "lock_door", "smart_home", "Lock a door.", (DOOR,), lock_door,
        templates=("Lock the {door}.", "Make sure the {door} is locked.", "Lock up[ the {door}], please."),
        gist="lock a door", siblings=("unlock_door", "turn_off_lights"),
    ),
    ToolSpec(
        "unlock_door", "smart_home", "Unlock a door.", (DOOR,), unlock_door,
        templates=("Unlock the {door}.", "Open the lock on the {door}.", "Let me in[ through the {door}]."),
        gist="unlock a door", siblings=("lock_door",),
    ),
    ToolSpec(
        "get_home_status", "smart_home", "Report the state of the thermostat, lights and locks.",
        (p_enum("device_type", "Which devices.", ("thermostat", "lights", "locks", "all"), default="all",
                sample_from=("thermostat", "lights", "locks"),
                say=phrases({"thermostat": ("the thermostat", "the heating"), "lights": ("the lights",),
                             "locks": ("the door locks", "the locks")})),),
        get_home_status,
        templates=("What's the status of[ {device_type}] at home?", "Give me a status report for the house[, just {device_type}].",
                   "Is everything at home OK? Show me the status[ of {device_type}]."),
        gist="check the status of home devices", siblings=("lock_door", "set_thermostat"),
    ),
    ToolSpec(
        "smart_home.energy_usage", "smart_home", "Report household electricity use and its cost over a period.",
        (p_enum("period", "Time period.", ("day", "week", "month"), label="time period",
                say=phrases({"day": ("today", "the last day"), "week": ("this week", "the past week"),
                             "month": ("this month", "the past month")})),),
        energy_usage,
        templates=("How much electricity did we use {period}?", "What's my energy consumption for {period}?",
                   "Show the power usage[ for {period}] and what it cost."),
        gist="report electricity usage", siblings=("get_home_status", "set_thermostat"), held_out=True,
    ),
]
