"""Math (dotted names like BFCL's ``math.hypot``): geometry, number theory, statistics, algebra, units."""

from __future__ import annotations

import math
import statistics
from random import Random

from tinytool.data.demo.catalog.base import (
    ToolError,
    ToolSpec,
    p_array,
    p_bool,
    p_enum,
    p_int,
    p_num,
    phrases,
    say_list,
    say_number,
)
from tinytool.data.demo.catalog.world import World

# unit -> (dimension, factor to the dimension's base unit); temperatures are handled apart
UNITS = {"km": ("length", 1000.0), "m": ("length", 1.0), "mi": ("length", 1609.344), "ft": ("length", 0.3048),
         "kg": ("mass", 1.0), "g": ("mass", 0.001), "lb": ("mass", 0.45359237), "oz": ("mass", 0.028349523125),
         "l": ("volume", 1.0), "gal": ("volume", 3.785411784), "c": ("temperature", 1.0), "f": ("temperature", 1.0)}
UNIT_WORDS = {"km": ("km", "kilometers"), "m": ("meters", "m"), "mi": ("miles",), "ft": ("feet", "ft"),
              "kg": ("kg", "kilograms"), "g": ("grams", "g"), "lb": ("pounds", "lbs"), "oz": ("ounces", "oz"),
              "l": ("liters", "litres"), "gal": ("gallons", "US gallons"), "c": ("degrees Celsius", "°C"),
              "f": ("degrees Fahrenheit", "°F")}


def _nums(r: Random, w: World) -> list:
    k = r.randint(4, 7)
    if r.random() < 0.5:
        return [r.randint(1, 99) for _ in range(k)]
    return [round(r.uniform(1, 60), 1) for _ in range(k)]


def _check_numbers(numbers: list) -> list[float]:
    if not numbers or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in numbers):
        raise ToolError("'numbers' must be a non-empty list of numbers")
    return numbers


def hypot(w: World, x: float, y: float, z: float | None = None) -> dict:
    v = math.hypot(x, y) if z is None else math.hypot(x, y, z)
    return {"result": round(v, 6)}


def factorial(w: World, n: int) -> dict:
    if not 0 <= n <= 170:
        raise ToolError("'n' must be between 0 and 170")
    return {"result": math.factorial(n)}


def gcd(w: World, a: int, b: int) -> dict:
    return {"result": math.gcd(a, b)}


def lcm(w: World, a: int, b: int) -> dict:
    return {"result": math.lcm(a, b)}


def mean(w: World, numbers: list) -> dict:
    return {"result": round(statistics.fmean(_check_numbers(numbers)), 6)}


def median(w: World, numbers: list) -> dict:
    return {"result": statistics.median(_check_numbers(numbers))}


def std_dev(w: World, numbers: list, sample: bool = True) -> dict:
    xs = _check_numbers(numbers)
    if sample and len(xs) < 2:
        raise ToolError("a sample standard deviation needs at least two numbers")
    return {"result": round(statistics.stdev(xs) if sample else statistics.pstdev(xs), 6)}


def solve_quadratic(w: World, a: float, b: float, c: float) -> dict:
    if a == 0:
        raise ToolError("'a' must be non-zero for a quadratic")
    disc = b * b - 4 * a * c
    if disc < 0:
        re_, im = -b / (2 * a), math.sqrt(-disc) / (2 * a)
        return {"roots": [f"{round(re_, 6)}+{round(abs(im), 6)}i", f"{round(re_, 6)}-{round(abs(im), 6)}i"], "real": False}
    s = math.sqrt(disc)
    return {"roots": sorted({round((-b + s) / (2 * a), 6), round((-b - s) / (2 * a), 6)}), "real": True}


def percent_change(w: World, old_value: float, new_value: float) -> dict:
    if old_value == 0:
        raise ToolError("'old_value' must be non-zero")
    return {"percent_change": round((new_value - old_value) / abs(old_value) * 100, 4)}


def convert_units(w: World, value: float, from_unit: str, to_unit: str) -> dict:
    (da, fa), (db, fb) = UNITS[from_unit], UNITS[to_unit]
    if da != db:
        raise ToolError(f"cannot convert {da} ({from_unit}) to {db} ({to_unit})")
    if da == "temperature":
        out = value * 9 / 5 + 32 if (from_unit, to_unit) == ("c", "f") else (value - 32) * 5 / 9 if from_unit != to_unit else value
    else:
        out = value * fa / fb
    return {"value": value, "from_unit": from_unit, "to_unit": to_unit, "result": round(out, 4)}


def _fix_units(args: dict, r: Random, w: World) -> None:
    dim = UNITS[args["from_unit"]][0]
    same = [u for u, (d, _) in UNITS.items() if d == dim and u != args["from_unit"]]
    if UNITS[args["to_unit"]][0] != dim or args["to_unit"] == args["from_unit"]:
        args["to_unit"] = r.choice(same)


def _fix_quadratic(args: dict, r: Random, w: World) -> None:
    if args["a"] == 0:
        args["a"] = 1


def _coef(r: Random, w: World) -> int:
    return r.choice((-5, -4, -3, -2, -1, 1, 2, 3, 4, 5, 6, 7))


def _say_nums(v: list, r: Random) -> str:
    return say_list(v, r, say_number) if r.random() < 0.7 else "[" + ", ".join(say_number(x, r) for x in v) + "]"


def _side(r: Random, w: World) -> float:
    return float(r.randint(2, 30)) if r.random() < 0.7 else round(r.uniform(1, 20), 1)


NUMBERS = p_array("numbers", "The data values.", {"type": "number"}, _nums, say=_say_nums, label="list of numbers")
INT_A = p_int("a", "First integer.", lambda r, w: r.randint(4, 400), label="first number")
INT_B = p_int("b", "Second integer.", lambda r, w: r.randint(4, 400), label="second number")

TOOLS = [
    ToolSpec(
        "math.hypot", "math", "Euclidean norm sqrt(x² + y² [+ z²]): the hypotenuse of a right triangle or a vector's length.",
        (p_num("x", "First coordinate / leg.", _side), p_num("y", "Second coordinate / leg.", _side),
         p_num("z", "Optional third coordinate.", _side, required=False)),
        hypot,
        templates=("A right triangle has legs {x} and {y}; how long is the hypotenuse?",
                   "Find the length of the vector ({x}, {y}[, {z}]).",
                   "What's the Euclidean norm of the point ({x}, {y}[, {z}])?",
                   "Calculate the hypotenuse for sides of {x} and {y}."),
        axes=(), gist="compute a hypotenuse or vector length", siblings=("maps.distance", "math.solve_quadratic"),
    ),
    ToolSpec(
        "math.factorial", "math", "Compute n! for a non-negative integer n.",
        (p_int("n", "Non-negative integer.", lambda r, w: r.randint(3, 20), label="number"),), factorial,
        templates=("What is {n} factorial?", "Compute the factorial of {n}.", "Calculate the factorial of {n} for me.",
                   "How much is {n}! ?"),
        gist="compute a factorial", siblings=("math.gcd", "math.lcm"),
    ),
    ToolSpec(
        "math.gcd", "math", "Greatest common divisor of two integers.", (INT_A, INT_B), gcd,
        templates=("What's the greatest common divisor of {a} and {b}?", "Find the GCD of {a} and {b}.",
                   "Compute gcd({a}, {b}).", "What is the highest common factor of {a} and {b}?"),
        axes=(), gist="compute a greatest common divisor", siblings=("math.lcm", "math.factorial"),
    ),
    ToolSpec(
        "math.lcm", "math", "Least common multiple of two integers.", (INT_A, INT_B), lcm,
        templates=("What's the least common multiple of {a} and {b}?", "Find the LCM of {a} and {b}.",
                   "Compute lcm({a}, {b}).", "What is the smallest number divisible by both {a} and {b}?"),
        axes=(), gist="compute a least common multiple", siblings=("math.gcd",),
    ),
    ToolSpec(
        "math.mean", "math", "Arithmetic mean of a list of numbers.", (NUMBERS,), mean,
        templates=("What's the average of {numbers}?", "Compute the mean of {numbers}.",
                   "Find the arithmetic mean of these values: {numbers}.", "Average these numbers[: {numbers}]."),
        gist="compute an average", siblings=("math.median", "math.std_dev"),
    ),
    ToolSpec(
        "math.median", "math", "Median (middle value) of a list of numbers.", (NUMBERS,), median,
        templates=("What's the median of {numbers}?", "Find the middle value of {numbers}.",
                   "Compute the median of these values: {numbers}."),
        gist="compute a median", siblings=("math.mean", "math.std_dev"),
    ),
    ToolSpec(
        "math.std_dev", "math", "Standard deviation of a list of numbers (sample by default).",
        (NUMBERS, p_bool("sample", "Sample (n-1) rather than population (n) standard deviation.",
                         {True: (", as a sample", " (sample standard deviation)"),
                          False: (", treating them as the whole population", " (population standard deviation)")})),
        std_dev,
        templates=("What's the standard deviation of {numbers}[{sample}]?", "How spread out are {numbers}[{sample}]?",
                   "Compute the std dev of {numbers}[{sample}]."),
        gist="compute a standard deviation", siblings=("math.mean", "math.median"), held_out=True,
    ),
    ToolSpec(
        "math.solve_quadratic", "math", "Solve a·x² + b·x + c = 0 for x.",
        (p_num("a", "Coefficient of x².", _coef), p_num("b", "Coefficient of x.", _coef),
         p_num("c", "Constant term.", _coef)),
        solve_quadratic,
        templates=("Find the roots of the quadratic with a = {a}, b = {b} and c = {c}.",
                   "Solve the quadratic equation with coefficients a={a}, b={b}, c={c}.",
                   "What are the solutions of ax^2 + bx + c = 0 when a is {a}, b is {b} and c is {c}?"),
        axes=(), gist="solve a quadratic equation", siblings=("math.hypot",), fix=_fix_quadratic,
    ),
    ToolSpec(
        "math.percent_change", "math", "Percentage change from an old value to a new value.",
        (p_num("old_value", "Starting value.", lambda r, w: float(r.randint(10, 500)), label="starting value"),
         p_num("new_value", "Ending value.", lambda r, w: float(r.randint(10, 500)), label="new value")),
        percent_change,
        templates=("What's the percentage change from {old_value} to {new_value}?",
                   "By what percent did it change going from {old_value} to {new_value}?",
                   "It went from {old_value} to {new_value} — what's that in percent?"),
        axes=(), gist="compute a percentage change", siblings=("math.mean", "finance.compound_interest"),
    ),
    ToolSpec(
        "convert_units", "math", "Convert a measurement between units of length, mass, volume or temperature.",
        (p_num("value", "The quantity to convert.", lambda r, w: float(r.choice((1, 5, 10, 12, 26.2, 42, 100, 180, 350))),
               label="value"),
         p_enum("from_unit", "Unit of the value.", tuple(UNITS), say=phrases(UNIT_WORDS), label="source unit"),
         p_enum("to_unit", "Unit to convert to.", tuple(UNITS), say=phrases(UNIT_WORDS), label="target unit")),
        convert_units,
        templates=("Convert {value} {from_unit} to {to_unit}.", "How many {to_unit} is {value} {from_unit}?",
                   "What is {value} {from_unit} in {to_unit}?", "{value} {from_unit} to {to_unit}"),
        axes=('value',), substitutes=('convert_cooking_units',), gist="convert measurement units", siblings=("convert_currency", "convert_cooking_units"), fix=_fix_units,
    ),
]

