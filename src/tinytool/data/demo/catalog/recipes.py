"""Recipes: search, details, scaling, nutrition, cooking-unit conversion and wine pairing."""

from __future__ import annotations

from random import Random

from tinytool.data.demo.catalog.base import (
    ToolError,
    ToolSpec,
    need_id,
    p_array,
    p_bool,
    p_enum,
    p_int,
    p_num,
    p_str,
    phrases,
)
from tinytool.data.demo.catalog.world import CUISINES, NUTRITION, World

COOK_UNITS_ML = {"cup": 236.588, "tbsp": 14.787, "tsp": 4.929, "ml": 1.0}
COOK_UNITS_G = {"g": 1.0, "oz": 28.3495}
DENSITY_G_PER_ML = {"flour": 0.53, "sugar": 0.85, "butter": 0.96, "water": 1.0, "milk": 1.03, "rice": 0.78, "honey": 1.42}
CUISINE_WORDS = {c: c.replace("_", " ").title() for c in CUISINES}
WINES = {"fish": "a crisp Sauvignon Blanc", "shrimp": "an Albariño", "salmon": "a Pinot Noir", "beef": "a Cabernet Sauvignon",
         "chicken": "a Chardonnay", "pizza": "a Chianti", "pasta": "a Sangiovese", "curry": "an off-dry Riesling",
         "spicy": "a Gewürztraminer", "mushroom": "a Pinot Noir", "salad": "a Rosé", "cheese": "a Port",
         "dessert": "a Moscato", "lamb": "a Syrah", "tacos": "a Tempranillo"}
DISHES = ("grilled salmon", "beef stew", "margherita pizza", "mushroom risotto", "chicken curry", "shrimp tacos",
          "lamb chops", "pesto pasta", "greek salad", "chocolate cake", "cheese board", "spicy noodles")


def _need_recipe(w: World, recipe_id: str) -> dict:
    return need_id(w.recipe_index, recipe_id, "recipe")


def search_recipes(w: World, ingredients: list, cuisine: str | None = None, max_minutes: int | None = None,
                   vegetarian: bool = False) -> dict:
    if not ingredients:
        raise ToolError("'ingredients' must list at least one ingredient")
    want = [i.lower() for i in ingredients]
    found = [x for x in w.recipes
             if all(any(q in ing["name"] for ing in x["ingredients"]) for q in want)
             and (cuisine is None or x["cuisine"] == cuisine) and (max_minutes is None or x["minutes"] <= max_minutes)
             and (not vegetarian or x["vegetarian"])]
    return {"results": [{k: x[k] for k in ("recipe_id", "name", "cuisine", "minutes", "vegetarian")} for x in found[:5]]}


def get_recipe(w: World, recipe_id: str) -> dict:
    x = _need_recipe(w, recipe_id)
    return {**x, "ingredients": [dict(i) for i in x["ingredients"]]}


def scale_recipe(w: World, recipe_id: str, servings: int) -> dict:
    x = _need_recipe(w, recipe_id)
    if servings < 1:
        raise ToolError("'servings' must be at least 1")
    f = servings / x["servings"]
    return {"recipe_id": recipe_id, "name": x["name"], "servings": servings,
            "ingredients": [{"name": i["name"], "quantity": round(i["quantity"] * f, 2), "unit": i["unit"]}
                            for i in x["ingredients"]]}


def get_nutrition_info(w: World, food: str, grams: float = 100) -> dict:
    row = NUTRITION.get(food.lower())
    if row is None:
        raise ToolError(f"no nutrition data for '{food}'")
    if grams <= 0:
        raise ToolError("'grams' must be positive")
    f = grams / 100
    kcal, protein, carbs, fat = row
    return {"food": food, "grams": grams, "calories": round(kcal * f, 1), "protein_g": round(protein * f, 1),
            "carbs_g": round(carbs * f, 1), "fat_g": round(fat * f, 1)}


def convert_cooking_units(w: World, amount: float, from_unit: str, to_unit: str, ingredient: str | None = None) -> dict:
    def to_ml_or_g(u: str) -> tuple[str, float]:
        return ("ml", COOK_UNITS_ML[u]) if u in COOK_UNITS_ML else ("g", COOK_UNITS_G[u])

    (ka, fa), (kb, fb) = to_ml_or_g(from_unit), to_ml_or_g(to_unit)
    base = amount * fa
    if ka != kb:
        if ingredient is None or ingredient.lower() not in DENSITY_G_PER_ML:
            raise ToolError("converting between volume and weight needs a known 'ingredient' "
                            f"({', '.join(DENSITY_G_PER_ML)})")
        d = DENSITY_G_PER_ML[ingredient.lower()]
        base = base * d if ka == "ml" else base / d
    return {"amount": amount, "from_unit": from_unit, "to_unit": to_unit, "result": round(base / fb, 2)}


def suggest_wine_pairing(w: World, dish: str) -> dict:
    d = dish.lower()
    for key, wine in WINES.items():
        if key in d:
            return {"dish": dish, "wine": wine}
    r = w.rng("wine", d)
    return {"dish": dish, "wine": r.choice(sorted(set(WINES.values())))}


def _ingredients(r: Random, w: World) -> list:
    x = r.choice(w.recipes)
    names = [i["name"] for i in x["ingredients"]]
    return r.sample(names, r.choice((1, 2, 2)))


def _fix_cook(args: dict, r: Random, w: World) -> None:
    if args["from_unit"] == args["to_unit"]:
        args["to_unit"] = r.choice([u for u in (*COOK_UNITS_ML, *COOK_UNITS_G) if u != args["from_unit"]])
    cross = (args["from_unit"] in COOK_UNITS_ML) != (args["to_unit"] in COOK_UNITS_ML)
    if cross:
        args["ingredient"] = r.choice(sorted(DENSITY_G_PER_ML))


RECIPE_ID = p_str("recipe_id", "Recipe id, e.g. 'R-104'.", lambda r, w: r.choice(w.recipes)["recipe_id"], label="recipe id")
UNITS = tuple(COOK_UNITS_ML) + tuple(COOK_UNITS_G)
UNIT_WORDS = {"cup": ("cups",), "tbsp": ("tablespoons", "tbsp"), "tsp": ("teaspoons", "tsp"), "ml": ("ml", "milliliters"),
              "g": ("grams", "g"), "oz": ("ounces", "oz")}

TOOLS = [
    ToolSpec(
        "search_recipes", "recipes", "Find recipes that use the given ingredients, with optional filters.",
        (p_array("ingredients", "Ingredients the recipe must use.", {"type": "string"}, _ingredients, label="list of ingredients"),
         p_enum("cuisine", "Cuisine.", CUISINES, required=False, say=phrases(CUISINE_WORDS)),
         p_int("max_minutes", "Maximum total time in minutes.", lambda r, w: r.choice((20, 30, 45, 60)), required=False),
         p_bool("vegetarian", "Only vegetarian recipes.", {True: (", vegetarian only", " (vegetarian, please)"),
                                                          False: (", meat is fine", " (doesn't have to be vegetarian)")})),
        search_recipes,
        templates=("Find recipes with {ingredients}[ under {max_minutes} minutes][{vegetarian}].",
                   "What can I cook with {ingredients}[ in {max_minutes} minutes or less]?",
                   "Suggest a[ {cuisine}] recipe that uses {ingredients}[{vegetarian}].",
                   "I have {ingredients} — any[ {cuisine}] dinner ideas?",
                   "Look up recipes[ that use {ingredients}][, ready in {max_minutes} minutes]."),
        gist="search for recipes", siblings=("get_recipe", "search_products"),
    ),
    ToolSpec(
        "get_recipe", "recipes", "Get a recipe's ingredients, servings and time by its id.",
        (RECIPE_ID,), get_recipe,
        templates=("Show me recipe {recipe_id}.", "What ingredients do I need for {recipe_id}?",
                   "How do I make recipe {recipe_id}?", "Give me the full recipe[ for {recipe_id}]."),
        gist="get a recipe's details", siblings=("search_recipes", "scale_recipe"),
    ),
    ToolSpec(
        "scale_recipe", "recipes", "Rescale a recipe's ingredient quantities to a number of servings.",
        (RECIPE_ID, p_int("servings", "Target number of servings.", lambda r, w: r.randint(2, 12), label="number of servings")),
        scale_recipe,
        templates=("Scale recipe {recipe_id} to {servings} servings.",
                   "I'm cooking {recipe_id} for {servings} people — adjust the quantities.",
                   "Adjust the recipe[ {recipe_id}] for {servings} servings.",
                   "How much of everything do I need to make {recipe_id} for {servings}?"),
        gist="rescale a recipe", siblings=("get_recipe", "convert_cooking_units"),
    ),
    ToolSpec(
        "get_nutrition_info", "recipes", "Get calories, protein, carbs and fat for an amount of a food.",
        (p_str("food", "Food name, e.g. 'banana'.", lambda r, w: r.choice(sorted(NUTRITION)), label="food"),
         p_num("grams", "Amount in grams.", lambda r, w: float(r.choice((30, 50, 80, 150, 200, 250))), default=100)),
        get_nutrition_info,
        templates=("How many calories are in[ {grams} grams of] {food}?", "Nutrition facts for {food}[, {grams} g].",
                   "How much protein is in[ {grams} g of] {food}?", "What are the macros of[ {grams} grams of] {food}?"),
        gist="look up nutrition facts", siblings=("search_recipes", "get_recipe"),
    ),
    ToolSpec(
        "convert_cooking_units", "recipes",
        "Convert kitchen measures (cups, tablespoons, teaspoons, ml, grams, ounces); volume-to-weight needs the ingredient.",
        (p_num("amount", "Quantity to convert.", lambda r, w: r.choice((0.5, 1.0, 1.5, 2.0, 3.0, 250.0))),
         p_enum("from_unit", "Unit of the amount.", UNITS, say=phrases(UNIT_WORDS), label="source unit"),
         p_enum("to_unit", "Unit to convert to.", UNITS, say=phrases(UNIT_WORDS), label="target unit"),
         p_str("ingredient", "Ingredient, for volume/weight conversions.", lambda r, w: r.choice(sorted(DENSITY_G_PER_ML)),
               required=False)),
        convert_cooking_units,
        templates=("How many {to_unit} is {amount} {from_unit}[ of {ingredient}]?",
                   "Convert {amount} {from_unit}[ of {ingredient}] to {to_unit}.",
                   "The recipe says {amount} {from_unit}[ of {ingredient}]; what's that in {to_unit}?"),
        axes=('amount',), substitutes=('convert_units',), gist="convert cooking measurements", siblings=("convert_units", "scale_recipe"), held_out=True, fix=_fix_cook,
    ),
    ToolSpec(
        "suggest_wine_pairing", "recipes", "Suggest a wine that goes with a dish.",
        (p_str("dish", "The dish being served.", lambda r, w: r.choice(DISHES), label="dish"),), suggest_wine_pairing,
        templates=("What wine goes with {dish}?", "Suggest a wine pairing for {dish}.", "Red or white with {dish}?",
                   "Which wine should I serve[ with {dish}]?"),
        gist="suggest a wine pairing", siblings=("search_recipes",),
    ),
]

