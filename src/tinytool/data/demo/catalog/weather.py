"""Weather: current conditions, forecasts, history, air quality, daylight and alerts."""

from __future__ import annotations

import math
from datetime import date, timedelta

from tinytool.data.demo.catalog.base import ToolError, ToolSpec, p_enum, p_int, p_str, phrases, say_date
from tinytool.data.demo.catalog.common import (
    need_city,
    need_date,
    sample_city,
    sample_future_date,
    sample_past_date,
)
from tinytool.data.demo.catalog.world import TODAY, City, World

CONDITIONS = ("sunny", "partly cloudy", "cloudy", "light rain", "rain", "thunderstorms", "fog", "windy")
_WEIGHTS = (30, 25, 15, 10, 6, 4, 4, 6)

UNIT = p_enum("unit", "Temperature unit.", ("celsius", "fahrenheit"), default="celsius", say=phrases({
    "celsius": ("in Celsius", "in °C", "in degrees Celsius"),
    "fahrenheit": ("in Fahrenheit", "in °F", "in degrees Fahrenheit"),
}))
CITY = p_str("city", "City name, e.g. 'Paris' or 'New York'.", sample_city, label="city")


def _convert(celsius: float, unit: str) -> float:
    return round(celsius * 9 / 5 + 32, 1) if unit == "fahrenheit" else round(celsius, 1)


def day_weather(w: World, c: City, day: date) -> dict:
    """High/low (°C), condition and rain chance of a city on a day; seasonal for dates away from June."""
    r = w.rng("wx", c.name, day.isoformat())
    hemi = 1 if c.lat >= 0 else -1
    amp = 8 * min(1.0, abs(c.lat) / 35)
    seasonal = hemi * amp * (math.cos(2 * math.pi * (day.month - 7) / 12) - math.cos(2 * math.pi / 12))
    high = c.climate + seasonal + r.gauss(0, 2.5)
    low = high - r.uniform(5, 10)
    cond = r.choices(CONDITIONS, _WEIGHTS)[0]
    rain = {"light rain": 70, "rain": 90, "thunderstorms": 85}.get(cond, r.choice((0, 5, 10, 20, 30)))
    return {"high": round(high, 1), "low": round(low, 1), "condition": cond, "precip_chance": rain,
            "humidity": r.randint(30, 90), "wind_kph": r.randint(3, 40)}


def get_current_weather(w: World, city: str, unit: str = "celsius") -> dict:
    c = need_city(w, city)
    d = day_weather(w, c, TODAY)
    now = (d["high"] * 2 + d["low"]) / 3
    return {"city": c.name, "temperature": _convert(now, unit), "unit": unit, "condition": d["condition"],
            "humidity": d["humidity"], "wind_kph": d["wind_kph"]}


def get_weather_forecast(w: World, city: str, days: int = 3, unit: str = "celsius") -> dict:
    c = need_city(w, city)
    if not 1 <= days <= 7:
        raise ToolError("'days' must be between 1 and 7")
    out = []
    for k in range(days):
        day = TODAY + timedelta(days=k)
        d = day_weather(w, c, day)
        out.append({"date": day.isoformat(), "high": _convert(d["high"], unit), "low": _convert(d["low"], unit),
                    "condition": d["condition"], "precip_chance": d["precip_chance"]})
    return {"city": c.name, "unit": unit, "forecast": out}


def get_historical_weather(w: World, city: str, date: str) -> dict:
    c = need_city(w, city)
    day = need_date(date)
    if day >= TODAY:
        raise ToolError("'date' must be in the past; use a forecast for future dates")
    d = day_weather(w, c, day)
    precip = round(w.rng("wxmm", c.name, date).uniform(0.5, 25), 1) if d["precip_chance"] >= 70 else 0.0
    return {"city": c.name, "date": date, "high_c": d["high"], "low_c": d["low"], "condition": d["condition"],
            "precipitation_mm": precip}


def get_air_quality(w: World, city: str) -> dict:
    c = need_city(w, city)
    r = w.rng("aqi", c.name, TODAY.isoformat())
    aqi = r.randint(12, 180)
    category = ("good" if aqi <= 50 else "moderate" if aqi <= 100 else "unhealthy for sensitive groups"
                if aqi <= 150 else "unhealthy")
    return {"city": c.name, "aqi": aqi, "category": category, "dominant_pollutant": r.choice(("pm2.5", "pm10", "o3", "no2"))}


def get_sunrise_sunset(w: World, city: str, date: str | None = None) -> dict:
    c = need_city(w, city)
    day = need_date(date) if date else TODAY
    # Day length from latitude and solar declination (standard approximation), centred on 12:45 local time.
    n = day.timetuple().tm_yday
    decl = math.radians(23.44) * math.sin(2 * math.pi * (284 + n) / 365)
    x = -math.tan(math.radians(c.lat)) * math.tan(decl)
    hours = 24.0 if x < -1 else 0.0 if x > 1 else 2 * math.degrees(math.acos(x)) / 15
    noon = 12 * 60 + 45
    rise, sset = round(noon - hours * 30), round(noon + hours * 30)
    return {"city": c.name, "date": day.isoformat(), "sunrise": f"{rise // 60:02d}:{rise % 60:02d}",
            "sunset": f"{sset // 60:02d}:{sset % 60:02d}", "day_length_hours": round(hours, 2)}


def weather_alerts(w: World, region: str, severity: str = "any") -> dict:
    c = need_city(w, region)
    r = w.rng("alerts", c.name, TODAY.isoformat())
    alerts = []
    for _ in range(r.choice((0, 1, 1, 2, 3))):
        sev = r.choice(("minor", "moderate", "severe"))
        kind = r.choice(("heat", "thunderstorm", "flood", "high wind", "air stagnation"))
        until = (TODAY + timedelta(days=r.randint(0, 2))).isoformat()
        alerts.append({"type": kind, "severity": sev, "valid_until": until})
    if severity != "any":
        alerts = [a for a in alerts if a["severity"] == severity]
    return {"region": c.name, "alerts": alerts, "count": len(alerts)}

TOOLS = [
    ToolSpec(
        "get_current_weather", "weather",
        "Get the current weather (temperature, condition, humidity, wind) for a city.",
        (CITY, UNIT), get_current_weather,
        templates=(
            "What's the weather like in {city} right now[ {unit}]?",
            "How warm is it in {city} at the moment[ {unit}]?",
            "What's the weather like right now[ in {city}]?",
            "Tell me the current temperature in {city}[ {unit}].",
            "current weather {city}[ {unit}]",
            "Is it raining in {city} right now?",
            "Check the current conditions[ in {city}][, {unit}].",
        ),
        dev_templates=("I'm about to step outside in {city} — what are conditions like[ {unit}]?",),
        gist="get the current weather", siblings=("get_weather_forecast", "get_historical_weather", "get_air_quality"),
        substitutes=("get_weather_forecast",),
    ),
    ToolSpec(
        "get_weather_forecast", "weather",
        "Get a daily weather forecast (highs, lows, conditions, chance of rain) for a city, up to 7 days ahead.",
        (CITY, p_int("days", "Number of days to forecast, 1-7.", lambda r, w: r.randint(2, 7), default=3,
                     label="number of days"), UNIT),
        get_weather_forecast,
        templates=(
            "What's the forecast for {city}[ for the next {days} days][ {unit}]?",
            "Give me the weather forecast for {city}[ over the coming {days} days][, {unit}].",
            "Will it rain in {city} in the next few days?",
            "What's the forecast looking like[ in {city}][ for the next {days} days]?",
            "Show me the[ {days}-day] outlook for {city}[ {unit}].",
        ),
        dev_templates=("Planning a trip to {city}: how will the weather be[ over the next {days} days]?",),
        gist="get a multi-day weather forecast", siblings=("get_current_weather", "weather.alerts", "get_historical_weather"),
    ),
    ToolSpec(
        "get_historical_weather", "weather",
        "Get the recorded weather (high, low, condition, precipitation) of a city on a past date.",
        (CITY, p_str("date", "Past date, YYYY-MM-DD.", sample_past_date, say=say_date, label="date")),
        get_historical_weather,
        templates=(
            "What was the weather in {city} on {date}?",
            "How hot was it in {city} on {date}?",
            "Look up the historical weather for {city}[ on {date}].",
            "Did it rain in {city} on {date}?",
            "I need the weather records for {city}[ from {date}].",
        ),
        gist="look up past weather records", siblings=("get_current_weather", "get_weather_forecast"),
    ),
    ToolSpec(
        "get_air_quality", "weather",
        "Get today's air quality index (AQI), its category and the dominant pollutant for a city.",
        (CITY,), get_air_quality,
        templates=(
            "How's the air quality in {city} today?",
            "What's the AQI in {city}?",
            "Is the air clean enough to go for a run[ in {city}] today?",
            "Check air pollution levels in {city}.",
        ),
        gist="check air quality", siblings=("get_current_weather", "weather.alerts"), held_out=True,
    ),
    ToolSpec(
        "get_sunrise_sunset", "weather",
        "Get sunrise and sunset times and day length for a city on a date (default: today).",
        (CITY, p_str("date", "Date, YYYY-MM-DD (default: today).", sample_future_date, say=say_date,
                     required=False, label="date")),
        get_sunrise_sunset,
        templates=(
            "When does the sun rise in {city}[ on {date}]?",
            "What time is sunset in {city}[ on {date}]?",
            "Sunrise and sunset times for {city}[ on {date}], please.",
            "When is sunset[ in {city}] today?",
        ),
        gist="look up sunrise and sunset times", siblings=("get_current_weather", "get_weather_forecast"),
    ),
    ToolSpec(
        "weather.alerts", "weather",
        "List active weather warnings (heat, storms, floods, wind) for a city or region.",
        (p_str("region", "City or region name.", sample_city, label="city or region"),
         p_enum("severity", "Only alerts of this severity.", ("minor", "moderate", "severe", "any"), default="any",
                sample_from=("minor", "moderate", "severe"))),
        weather_alerts,
        templates=(
            "Are there any[ {severity}] weather warnings for {region}?",
            "Check for[ {severity}] weather alerts in {region}.",
            "Any[ {severity}] storm or heat advisories[ in {region}] right now?",
        ),
        gist="list active weather warnings", siblings=("get_weather_forecast", "get_air_quality"),
    ),
]
