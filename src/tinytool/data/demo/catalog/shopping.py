"""Shopping: product search and details, cart, orders, returns and shopping lists."""

from __future__ import annotations

from datetime import timedelta
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
    p_object,
    p_str,
    phrases,
    say_usd,
)
from tinytool.data.demo.catalog.world import (
    CITIES,
    INGREDIENT_QUERIES,
    PRODUCT_CATEGORIES,
    SEARCH_TERMS,
    STREETS,
    TODAY,
    World,
)

LIST_NAMES = ("groceries", "hardware", "party", "camping")
HOUSEHOLD = ("paper towels", "dish soap", "batteries", "light bulbs", "trash bags", "coffee", "toothpaste", "sponges")
RETURN_REASONS = ("damaged", "wrong_item", "no_longer_needed", "too_small", "too_large")


def matches(product: dict, query: str) -> bool:
    hay = f"{product['name']} {product['brand']} {product['category']}".lower().replace("-", " ")
    return all(tok in hay for tok in query.lower().replace("-", " ").split())


def _need_product(w: World, product_id: str) -> dict:
    return need_id(w.product_index, product_id, "product")


def _need_order(w: World, order_id: str) -> dict:
    return need_id(w.state["orders"], order_id, "order")


def search_products(w: World, query: str, max_price: float | None = None, category: str | None = None,
                    in_stock_only: bool = True, sort_by: str = "relevance") -> dict:
    found = [p for p in w.products if matches(p, query) and (max_price is None or p["price"] <= max_price)
             and (category is None or p["category"] == category) and (not in_stock_only or p["stock"] > 0)]
    key = {"price_asc": lambda p: p["price"], "price_desc": lambda p: -p["price"], "rating": lambda p: -p["rating"]}
    if sort_by in key:
        found.sort(key=key[sort_by])
    return {"query": query, "results": [{"product_id": p["product_id"], "name": p["name"], "price": p["price"],
                                         "rating": p["rating"], "in_stock": p["stock"] > 0} for p in found[:5]]}


def get_product_details(w: World, product_id: str) -> dict:
    p = _need_product(w, product_id)
    return dict(p, in_stock=p["stock"] > 0)


def add_to_cart(w: World, product_id: str, quantity: int = 1) -> dict:
    p = _need_product(w, product_id)
    if quantity < 1:
        raise ToolError("'quantity' must be at least 1")
    if p["stock"] < quantity:
        raise ToolError(f"only {p['stock']} of '{p['name']}' in stock")
    w.state["cart"].append({"product_id": product_id, "quantity": quantity})
    total = sum(w.product_index[i["product_id"]]["price"] * i["quantity"] for i in w.state["cart"])
    return {"status": "added", "product_id": product_id, "name": p["name"], "quantity": quantity,
            "cart_items": len(w.state["cart"]), "cart_total": round(total, 2)}


def place_order(w: World, shipping_address: dict, express_shipping: bool = False) -> dict:
    cart = w.state["cart"]
    if not cart:
        raise ToolError("the cart is empty")
    total = sum(w.product_index[i["product_id"]]["price"] * i["quantity"] for i in cart) + (15.0 if express_shipping else 0.0)
    oid = w.next_id("ORD-", 5, sorted(shipping_address.items()))
    eta = (TODAY + timedelta(days=1 if express_shipping else 4)).isoformat()
    w.state["orders"][oid] = {"order_id": oid, "status": "processing", "items": list(cart), "carrier": "UPS",
                              "estimated_delivery": eta, "returnable": False}
    w.state["cart"] = []
    return {"status": "placed", "order_id": oid, "total": round(total, 2), "estimated_delivery": eta,
            "ship_to": f"{shipping_address.get('street')}, {shipping_address.get('city')}"}


def track_order(w: World, order_id: str) -> dict:
    o = _need_order(w, order_id)
    return {k: o[k] for k in ("order_id", "status", "carrier", "estimated_delivery")}


def return_item(w: World, order_id: str, reason: str) -> dict:
    o = _need_order(w, order_id)
    if o["status"] == "return_requested":
        raise ToolError(f"a return for order {order_id} is already open")
    if not o["returnable"]:
        raise ToolError(f"order {order_id} cannot be returned yet (status: {o['status']})")
    o["status"] = "return_requested"
    return {"status": "return_requested", "order_id": order_id, "reason": reason, "return_label": w.next_id("RMA-", 6, (order_id, reason))}


def add_to_shopping_list(w: World, items: list, list_name: str = "groceries") -> dict:
    if not items or not all(isinstance(i, str) for i in items):
        raise ToolError("'items' must be a non-empty list of strings")
    lst = w.state["shopping_lists"].setdefault(list_name, [])
    added = [i for i in items if i not in lst]
    lst.extend(added)
    return {"list_name": list_name, "added": added, "items": list(lst)}


def _search_term(r: Random, w: World) -> str:
    return r.choice(SEARCH_TERMS)


def _fix_category(args: dict, r: Random, w: World) -> None:
    if "category" in args:
        hits = [p for p in w.products if matches(p, args["query"])]
        if hits:
            args["category"] = hits[0]["category"]


def _address(r: Random, w: World) -> dict:
    c = r.choice(CITIES)
    return {"street": f"{r.randint(1, 250)} {r.choice(STREETS)}", "city": c.name,
            "postal_code": f"{r.randint(10000, 99999)}", "country": c.country}


def say_address(v: dict, r: Random) -> str:
    if r.random() < 0.5:
        return f"{v['street']}, {v['postal_code']} {v['city']}, {v['country']}"
    return f"{v['street']}, {v['city']} {v['postal_code']}, {v['country']}"


PRODUCT_ID = p_str("product_id", "Product id, e.g. 'P-10231'.",
                   lambda r, w: r.choice([p for p in w.products if p["stock"] >= 5])["product_id"], label="product id")
ORDER_ID = p_str("order_id", "Order id, e.g. 'ORD-55012'.", lambda r, w: r.choice(sorted(w.state["orders"])),
                 label="order number")

TOOLS = [
    ToolSpec(
        "search_products", "shopping", "Search the store's catalog by keywords, with optional filters and sorting.",
        (p_str("query", "Search keywords.", _search_term, label="search term"),
         p_num("max_price", "Maximum price in USD.", lambda r, w: float(r.choice((25, 50, 100, 150, 300))), say=say_usd,
               required=False),
         p_enum("category", "Product category.", PRODUCT_CATEGORIES, required=False),
         p_bool("in_stock_only", "Only items in stock.", {True: (", in stock only", " that are in stock right now"),
                                                           False: (", including out-of-stock items", " even if sold out")},
                default=True),
         p_enum("sort_by", "Result order.", ("relevance", "price_asc", "price_desc", "rating"), default="relevance",
                say=phrases({"relevance": "sorted by relevance", "price_asc": ("cheapest first", "sorted by price, low to high"),
                             "price_desc": ("most expensive first", "priciest first"),
                             "rating": ("best rated first", "sorted by rating")}))),
        search_products,
        templates=(
            "Search for {query}[ under {max_price}][{in_stock_only}][, {sort_by}].",
            "Find me {query}[ in the {category} section][ for less than {max_price}][, {sort_by}].",
            "Show me some {query} options[ below {max_price}][{in_stock_only}].",
            "I'm shopping for {query}[, {sort_by}].",
            "Search the store[ for {query}][ under {max_price}].",
        ),
        dev_templates=("Got any {query} for me[ under {max_price}]?",),
        gist="search the store's products", siblings=("get_product_details", "add_to_cart", "search_recipes"),
        fix=_fix_category,
    ),
    ToolSpec(
        "get_product_details", "shopping", "Get full details (price, rating, stock, brand) of one product.",
        (PRODUCT_ID,), get_product_details,
        templates=("Tell me more about product {product_id}.", "What's the price and rating of {product_id}?",
                   "Is {product_id} in stock?", "Show me the details[ for item {product_id}]."),
        gist="look up a product's details", siblings=("search_products", "track_order"),
    ),
    ToolSpec(
        "add_to_cart", "shopping", "Add a product to the shopping cart.",
        (PRODUCT_ID, p_int("quantity", "How many.", lambda r, w: r.randint(2, 4), default=1)),
        add_to_cart,
        templates=("Add[ {quantity} of] {product_id} to my cart.", "Put {product_id} in the cart[, quantity {quantity}].",
                   "I'll take[ {quantity} units of] {product_id}.", "Add an item to my cart[: {product_id}]."),
        gist="add a product to the cart", siblings=("add_to_shopping_list", "place_order"),
    ),
    ToolSpec(
        "place_order", "shopping", "Check out the current cart and ship it to an address.",
        (p_object("shipping_address", "Where to ship.", {
            "street": {"type": "string"}, "city": {"type": "string"}, "postal_code": {"type": "string"},
            "country": {"type": "string"}}, _address, say_address, label="shipping address"),
         p_bool("express_shipping", "Use express shipping (+$15).",
                {True: (" with express shipping", ", express delivery please"),
                 False: (" with standard shipping", ", regular delivery is fine")})),
        place_order,
        templates=("Check out my cart and ship it to {shipping_address}[{express_shipping}].",
                   "Place the order[ for delivery to {shipping_address}][{express_shipping}].",
                   "Order everything in my cart, deliver to {shipping_address}[{express_shipping}]."),
        gist="check out and place an order", siblings=("add_to_cart", "track_order"),
    ),
    ToolSpec(
        "track_order", "shopping", "Get the shipping status and delivery estimate of an order.",
        (ORDER_ID,), track_order,
        templates=("Where is my order {order_id}?", "Track order {order_id}.", "When will {order_id} arrive?",
                   "Has my package[ ({order_id})] shipped yet?"),
        gist="track an order", siblings=("return_item", "get_flight_status", "place_order"),
    ),
    ToolSpec(
        "return_item", "shopping", "Start a return for a delivered order.",
        (p_str("order_id", "Order id of a delivered order.",
               lambda r, w: r.choice(sorted(k for k, o in w.state["orders"].items() if o["returnable"])),
               label="order number"),
         p_enum("reason", "Why it is being returned.", RETURN_REASONS, say=phrases({
             "damaged": ("it arrived damaged", "the item is broken"), "wrong_item": ("they sent the wrong item",),
             "no_longer_needed": ("I don't need it anymore",), "too_small": ("it's too small",),
             "too_large": ("it's too big",)}), label="reason for the return")),
        return_item,
        templates=("Return order {order_id}, {reason}.", "I want to send back {order_id} because {reason}.",
                   "Start a return for {order_id}[ — {reason}]."),
        gist="return an order", siblings=("track_order",), held_out=True, axes=("order_id",),
    ),
    ToolSpec(
        "add_to_shopping_list", "shopping", "Add items to a named shopping list (a note, not the store cart).",
        (p_array("items", "Items to add.", {"type": "string"},
                 lambda r, w: r.sample(INGREDIENT_QUERIES + HOUSEHOLD, r.randint(2, 4)), label="list of items"),
         p_str("list_name", "Which list.", lambda r, w: r.choice(LIST_NAMES), default="groceries")),
        add_to_shopping_list,
        templates=("Add {items} to my[ {list_name}] list.", "Put {items} on the[ {list_name}] shopping list.",
                   "I need to remember to buy {items}[ — add them to the {list_name} list].",
                   "Add a few things to my shopping list[: {items}]."),
        gist="add items to a shopping list", siblings=("add_to_cart", "create_reminder"),
    ),
]
