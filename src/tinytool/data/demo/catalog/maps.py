"""Maps (dotted names, as BFCL uses them): geocoding, distances, directions, nearby places, elevation."""

from __future__ import annotations

import zlib
from random import Random

from tinytool.data.demo.catalog.base import (
    ToolError,
    ToolSpec,
    p_array,
    p_enum,
    p_int,
    p_num,
    p_str,
    phrases,
)
from tinytool.data.demo.catalog.world import (
    LANDMARKS,
    PLACE_NAMES,
    PLACE_PREFIXES,
    STREETS,
    World,
    haversine_km,
)

MODES = ("driving", "walking", "cycling", "transit")
SPEED_KMH = {"driving": 55.0, "walking": 4.8, "cycling": 15.0, "transit": 28.0}
ROAD_FACTOR = {"driving": 1.25, "walking": 1.15, "cycling": 1.2, "transit": 1.3}
CATEGORY_WORDS = {"restaurant": ("restaurants", "places to eat"), "cafe": ("cafés", "coffee shops"),
                  "pharmacy": ("pharmacies", "drugstores"), "gas_station": ("gas stations", "petrol stations"),
                  "atm": ("ATMs", "cash machines"), "supermarket": ("supermarkets", "grocery stores"),
                  "hospital": ("hospitals",), "museum": ("museums",), "park": ("parks",)}


def locate(w: World, text: str) -> tuple[float, float, str]:
    """Coordinates of a landmark, a city (name or airport code) or a street address ending in a known city."""
    t = text.strip()
    for name, (city, lat, lon) in LANDMARKS.items():
        if t.lower() in (name.lower(), f"{name}, {city}".lower()):
            return lat, lon, city
    c = w.city(t)
    if c is None and "," in t:
        c = w.city(t.rsplit(",", 1)[1])
        if c is not None:
            h = zlib.crc32(t.lower().encode())
            dlat, dlon = ((h % 2001) - 1000) / 25000, (((h >> 11) % 2001) - 1000) / 25000
            return round(c.lat + dlat, 5), round(c.lon + dlon, 5), c.name
    if c is None:
        raise ToolError(f"could not find a location for '{text}'")
    return c.lat, c.lon, c.name


def _continent(w: World, city: str) -> str:
    c = w.city(city)
    return c.continent if c else {"Barcelona": "Europe"}.get(city, "?")


def geocode(w: World, address: str) -> dict:
    lat, lon, city = locate(w, address)
    return {"address": address, "latitude": lat, "longitude": lon, "city": city}


def _nearest_city(w: World, lat: float, lon: float):
    return min(w.cities, key=lambda c: haversine_km(lat, lon, c.lat, c.lon))


def _check_coords(latitude: float, longitude: float) -> None:
    if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
        raise ToolError("latitude must be in [-90, 90] and longitude in [-180, 180]")


def reverse_geocode(w: World, latitude: float, longitude: float) -> dict:
    _check_coords(latitude, longitude)
    c = _nearest_city(w, latitude, longitude)
    km = haversine_km(latitude, longitude, c.lat, c.lon)
    if km > 60:
        return {"latitude": latitude, "longitude": longitude, "address": None, "nearest_city": c.name,
                "distance_km": round(km, 1)}
    r = w.rng("revgeo", round(latitude, 4), round(longitude, 4))
    return {"latitude": latitude, "longitude": longitude,
            "address": f"{r.randint(1, 250)} {r.choice(STREETS)}, {c.name}", "city": c.name, "country": c.country}


def _route(w: World, origin: str, destination: str, mode: str) -> tuple[float, float, str, str]:
    la, lo, ca = locate(w, origin)
    lb, lob, cb = locate(w, destination)
    km = haversine_km(la, lo, lb, lob) * ROAD_FACTOR[mode]
    if mode != "transit" and mode != "driving" and km > 150:
        raise ToolError(f"no {mode} route: the places are {round(km)} km apart")
    if _continent(w, ca) != _continent(w, cb):
        raise ToolError(f"no {mode} route between {ca} and {cb}")
    return km, km / SPEED_KMH[mode] * 60, ca, cb


def distance(w: World, origin: str, destination: str, mode: str = "driving") -> dict:
    km, minutes, _, _ = _route(w, origin, destination, mode)
    return {"origin": origin, "destination": destination, "mode": mode, "distance_km": round(km, 1),
            "duration_minutes": round(minutes)}


def directions(w: World, origin: str, destination: str, mode: str = "driving", avoid: list | None = None) -> dict:
    km, minutes, _, _ = _route(w, origin, destination, mode)
    bad = set(avoid or ()) - {"tolls", "highways", "ferries"}
    if bad:
        raise ToolError(f"cannot avoid {sorted(bad)}; choose from tolls, highways, ferries")
    r = w.rng("dir", origin, destination, mode)
    road = "local roads" if "highways" in (avoid or ()) else r.choice(("the A1", "Route 9", "the ring road", "the E45"))
    steps = [f"Head {r.choice(('north', 'south', 'east', 'west'))} on {r.choice(STREETS)}",
             f"Turn {r.choice(('left', 'right'))} onto {r.choice(STREETS)}",
             f"Continue on {road} for {round(km * 0.8, 1)} km" if mode == "driving" else f"Continue for {round(km * 0.8, 1)} km",
             f"Arrive at {destination}"]
    return {"origin": origin, "destination": destination, "mode": mode, "distance_km": round(km, 1),
            "duration_minutes": round(minutes), "avoid": list(avoid or []), "steps": steps}


def nearby_places(w: World, latitude: float, longitude: float, category: str, radius_m: int = 1000) -> dict:
    _check_coords(latitude, longitude)
    if not 50 <= radius_m <= 50000:
        raise ToolError("'radius_m' must be between 50 and 50000")
    r = w.rng("nearby", round(latitude, 3), round(longitude, 3), category)
    places = []
    for _ in range(r.randint(2, 6)):
        d = r.randint(40, 5000)
        if d <= radius_m:
            places.append({"name": f"{r.choice(PLACE_PREFIXES)} {r.choice(PLACE_NAMES[category])}", "distance_m": d,
                           "rating": round(r.uniform(3.0, 4.9), 1)})
    places.sort(key=lambda p: p["distance_m"])
    return {"category": category, "radius_m": radius_m, "places": places}


def elevation(w: World, latitude: float, longitude: float) -> dict:
    _check_coords(latitude, longitude)
    c = _nearest_city(w, latitude, longitude)
    r = w.rng("elev", round(latitude, 3), round(longitude, 3))
    base = {"Mexico City": 2240, "Nairobi": 1795, "Zurich": 408, "Madrid": 657}.get(c.name, 30)
    return {"latitude": latitude, "longitude": longitude, "elevation_m": base + r.randint(0, 120)}


def _address(r: Random, w: World) -> str:
    k = r.random()
    if k < 0.3:
        return r.choice(sorted(LANDMARKS))
    c = r.choice(w.cities)
    return c.name if k < 0.5 else f"{r.randint(1, 250)} {r.choice(STREETS)}, {c.name}"


def _fix_route(args: dict, r: Random, w: World) -> None:
    """Walking/cycling stay inside one city; other modes stay on one continent."""
    mode = args.get("mode", "driving")
    c = r.choice([x for x in w.cities if sum(y.continent == x.continent for y in w.cities) > 1])
    if mode in ("walking", "cycling"):
        args["origin"] = f"{r.randint(1, 250)} {r.choice(STREETS)}, {c.name}"
        args["destination"] = f"{r.randint(1, 250)} {r.choice(STREETS)}, {c.name}"
        while args["destination"] == args["origin"]:
            args["destination"] = f"{r.randint(1, 250)} {r.choice(STREETS)}, {c.name}"
    else:
        same = [x for x in w.cities if x.continent == c.continent and x != c]
        args["origin"], args["destination"] = c.name, r.choice(same).name
        if r.random() < 0.3:
            args["origin"] = f"{r.randint(1, 250)} {r.choice(STREETS)}, {c.name}"


def _lat(r: Random, w: World) -> float:
    return round(r.choice(w.cities).lat + r.uniform(-0.05, 0.05), 4)


def _fix_coords(args: dict, r: Random, w: World) -> None:
    c = r.choice(w.cities)
    args["latitude"] = round(c.lat + r.uniform(-0.04, 0.04), 4)
    args["longitude"] = round(c.lon + r.uniform(-0.04, 0.04), 4)


def say_radius(v: int, r: Random) -> str:
    if v >= 1000 and r.random() < 0.6:
        return f"{v / 1000:g} km"
    return r.choice((f"{v} m", f"{v} meters", f"{v} metres"))


LAT = p_num("latitude", "Latitude in decimal degrees.", _lat, label="latitude")
LON = p_num("longitude", "Longitude in decimal degrees.", lambda r, w: round(r.uniform(-120, 140), 4), label="longitude")
MODE = p_enum("mode", "Travel mode.", MODES, default="driving", say=phrases({
    "driving": ("by car", "driving"), "walking": ("on foot", "walking"), "cycling": ("by bike", "cycling"),
    "transit": ("by public transport", "by transit")}))

TOOLS = [
    ToolSpec(
        "maps.geocode", "maps", "Convert an address, landmark or city into latitude/longitude coordinates.",
        (p_str("address", "Street address, landmark or city.", _address, label="address"),), geocode,
        templates=("What are the coordinates of {address}?", "Geocode {address}.", "Find the latitude and longitude of {address}.",
                   "Where exactly is {address} on the map?", "Get the GPS coordinates[ for {address}]."),
        gist="get coordinates for an address", siblings=("maps.reverse_geocode", "maps.nearby_places"),
    ),
    ToolSpec(
        "maps.reverse_geocode", "maps", "Find the street address at given coordinates.",
        (LAT, LON), reverse_geocode,
        templates=("What's the address at {latitude}, {longitude}?", "Which street is at latitude {latitude}, longitude {longitude}?",
                   "Reverse geocode the point ({latitude}, {longitude})."),
        axes=(), gist="find the address at coordinates", siblings=("maps.geocode", "maps.elevation"), fix=_fix_coords,
    ),
    ToolSpec(
        "maps.distance", "maps", "Get the travel distance and time between two places for a travel mode.",
        (p_str("origin", "Start address or city.", _address, label="starting point"),
         p_str("destination", "End address or city.", _address, label="destination"), MODE),
        distance,
        templates=("How far is it from {origin} to {destination}[ {mode}]?",
                   "What's the distance between {origin} and {destination}[ {mode}]?",
                   "How long does it take to get from {origin} to {destination}[ {mode}]?",
                   "Distance[ from {origin}] to {destination}[, {mode}]?"),
        dev_templates=("Roughly how many km separate {origin} and {destination}[ {mode}]?",),
        gist="get the distance between two places", siblings=("maps.directions", "maps.geocode"),
        substitutes=("maps.directions",), fix=_fix_route,
    ),
    ToolSpec(
        "maps.directions", "maps", "Get turn-by-turn directions between two places.",
        (p_str("origin", "Start address or city.", _address, label="starting point"),
         p_str("destination", "End address or city.", _address, label="destination"), MODE,
         p_array("avoid", "Road features to avoid.", {"type": "string", "enum": ["tolls", "highways", "ferries"]},
                 lambda r, w: sorted(r.sample(("tolls", "highways", "ferries"), r.randint(1, 2))), required=False)),
        directions,
        templates=("Give me directions from {origin} to {destination}[ {mode}][, avoiding {avoid}].",
                   "How do I get from {origin} to {destination}[ {mode}]?",
                   "Navigate[ from {origin}] to {destination}[ and avoid {avoid}].",
                   "Route me from {origin} to {destination}[ {mode}][ with no {avoid}]."),
        gist="get turn-by-turn directions", siblings=("maps.distance",), fix=_fix_route,
    ),
    ToolSpec(
        "maps.nearby_places", "maps", "Find places of a category (restaurants, pharmacies, ...) near coordinates.",
        (LAT, LON, p_enum("category", "Kind of place.", tuple(PLACE_NAMES), say=phrases(CATEGORY_WORDS),
                          label="type of place"),
         p_int("radius_m", "Search radius in meters.", lambda r, w: r.choice((300, 500, 1000, 2000, 5000)), default=1000,
               say=say_radius)),
        nearby_places,
        templates=("Find {category} near {latitude}, {longitude}[ within {radius_m}].",
                   "Are there any {category} within[ {radius_m} of] {latitude}, {longitude}?",
                   "Show me {category} close to the coordinates {latitude}, {longitude}[, radius {radius_m}].",
                   "What's nearby[ at {latitude}, {longitude}]? I'm looking for {category}."),
        axes=('category',), gist="find places nearby", siblings=("maps.geocode", "search_hotels"), fix=_fix_coords,
    ),
    ToolSpec(
        "maps.elevation", "maps", "Get the ground elevation in meters above sea level at coordinates.",
        (LAT, LON), elevation,
        templates=("What's the elevation at {latitude}, {longitude}?", "How high above sea level is {latitude}, {longitude}?",
                   "Altitude of the point ({latitude}, {longitude})?"),
        axes=(), gist="get the elevation of a point", siblings=("maps.reverse_geocode",), held_out=True, fix=_fix_coords,
    ),
]

