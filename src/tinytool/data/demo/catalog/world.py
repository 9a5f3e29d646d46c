"""The seeded in-memory world every demo tool reads and writes.

`World(seed)` builds the same contacts, accounts, calendar, files, products, orders, inbox,
hotels, music library and devices for the same seed. Values that would be too many to store
(weather for any city and day, flights for any route and date, places near any point) are derived on
demand from ``(seed, key)`` so they are just as deterministic. Everything a tool may change lives in
``world.state``; `World.copy` clones that part only, so a fresh world for each multi-step task costs
little.
"""

from __future__ import annotations

import math
import pickle
import random
import zlib
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache
from typing import Any

TODAY = date(2025, 6, 2)  # a Monday; the demo world's "now"


@dataclass(frozen=True, slots=True)
class City:
    name: str
    country: str
    country_code: str
    continent: str
    lat: float
    lon: float
    currency: str
    airport: str
    climate: float  # typical June mid-day temperature, °C


CITIES: tuple[City, ...] = tuple(City(*row) for row in (
    ("Paris", "France", "FR", "Europe", 48.8566, 2.3522, "EUR", "CDG", 22),
    ("London", "United Kingdom", "GB", "Europe", 51.5072, -0.1276, "GBP", "LHR", 20),
    ("Berlin", "Germany", "DE", "Europe", 52.52, 13.405, "EUR", "BER", 21),
    ("Madrid", "Spain", "ES", "Europe", 40.4168, -3.7038, "EUR", "MAD", 28),
    ("Rome", "Italy", "IT", "Europe", 41.9028, 12.4964, "EUR", "FCO", 27),
    ("Amsterdam", "Netherlands", "NL", "Europe", 52.3676, 4.9041, "EUR", "AMS", 19),
    ("Lisbon", "Portugal", "PT", "Europe", 38.7223, -9.1393, "EUR", "LIS", 25),
    ("Vienna", "Austria", "AT", "Europe", 48.2082, 16.3738, "EUR", "VIE", 23),
    ("Zurich", "Switzerland", "CH", "Europe", 47.3769, 8.5417, "CHF", "ZRH", 21),
    ("Oslo", "Norway", "NO", "Europe", 59.9139, 10.7522, "NOK", "OSL", 18),
    ("Stockholm", "Sweden", "SE", "Europe", 59.3293, 18.0686, "SEK", "ARN", 19),
    ("Dublin", "Ireland", "IE", "Europe", 53.3498, -6.2603, "EUR", "DUB", 17),
    ("Istanbul", "Turkey", "TR", "Europe", 41.0082, 28.9784, "TRY", "IST", 26),
    ("New York", "United States", "US", "North America", 40.7128, -74.006, "USD", "JFK", 25),
    ("Chicago", "United States", "US", "North America", 41.8781, -87.6298, "USD", "ORD", 24),
    ("San Francisco", "United States", "US", "North America", 37.7749, -122.4194, "USD", "SFO", 19),
    ("Seattle", "United States", "US", "North America", 47.6062, -122.3321, "USD", "SEA", 20),
    ("Toronto", "Canada", "CA", "North America", 43.6532, -79.3832, "CAD", "YYZ", 23),
    ("Mexico City", "Mexico", "MX", "North America", 19.4326, -99.1332, "MXN", "MEX", 24),
    ("São Paulo", "Brazil", "BR", "South America", -23.5505, -46.6333, "BRL", "GRU", 22),
    ("Buenos Aires", "Argentina", "AR", "South America", -34.6037, -58.3816, "ARS", "EZE", 15),
    ("Tokyo", "Japan", "JP", "Asia", 35.6762, 139.6503, "JPY", "HND", 25),
    ("Seoul", "South Korea", "KR", "Asia", 37.5665, 126.978, "KRW", "ICN", 26),
    ("Singapore", "Singapore", "SG", "Asia", 1.3521, 103.8198, "SGD", "SIN", 31),
    ("Bangkok", "Thailand", "TH", "Asia", 13.7563, 100.5018, "THB", "BKK", 33),
    ("Mumbai", "India", "IN", "Asia", 19.076, 72.8777, "INR", "BOM", 31),
    ("Dubai", "United Arab Emirates", "AE", "Asia", 25.2048, 55.2708, "AED", "DXB", 38),
    ("Sydney", "Australia", "AU", "Oceania", -33.8688, 151.2093, "AUD", "SYD", 17),
    ("Cairo", "Egypt", "EG", "Africa", 30.0444, 31.2357, "EGP", "CAI", 34),
    ("Cape Town", "South Africa", "ZA", "Africa", -33.9249, 18.4241, "ZAR", "CPT", 18),
    ("Nairobi", "Kenya", "KE", "Africa", -1.2921, 36.8219, "KES", "NBO", 23),
))

# Units of currency per one US dollar (a demo snapshot, jittered per seed).
USD_RATES = {
    "USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 156.3, "CHF": 0.90, "CAD": 1.37, "AUD": 1.51,
    "INR": 83.4, "SGD": 1.35, "MXN": 17.0, "BRL": 5.1, "SEK": 10.5, "NOK": 10.6, "KRW": 1365.0,
    "AED": 3.67, "THB": 36.7, "TRY": 32.2, "ZAR": 18.4, "EGP": 47.1, "ARS": 890.0, "KES": 130.0,
}
CURRENCY_NAMES = {
    "USD": "US dollars", "EUR": "euros", "GBP": "British pounds", "JPY": "Japanese yen", "CHF": "Swiss francs",
    "CAD": "Canadian dollars", "AUD": "Australian dollars", "INR": "Indian rupees", "SGD": "Singapore dollars",
    "MXN": "Mexican pesos", "BRL": "Brazilian reais", "SEK": "Swedish kronor", "NOK": "Norwegian kroner",
    "KRW": "South Korean won", "AED": "UAE dirhams", "THB": "Thai baht", "TRY": "Turkish lira",
    "ZAR": "South African rand", "EGP": "Egyptian pounds", "ARS": "Argentine pesos", "KES": "Kenyan shillings",
}

FIRST_NAMES = ("Alice", "Ben", "Carla", "Daniel", "Elena", "Farid", "Grace", "Hiro", "Isabel", "Jonas",
               "Kavya", "Liam", "Maya", "Noah", "Olivia", "Priya", "Quentin", "Rosa", "Samuel", "Tara",
               "Umar", "Valentina", "Wei", "Ximena", "Yusuf", "Zoe", "Marco", "Nadia")
LAST_NAMES = ("Moreno", "Okafor", "Lindqvist", "Tanaka", "Fischer", "Haddad", "Novak", "Costa", "Schmidt",
              "Kowalski", "Nguyen", "Romero", "Dubois", "Patel", "O'Brien", "Ivanova", "Silva", "Kim",
              "Andersen", "Rossi", "Mensah", "García", "Chen", "Murphy", "Yilmaz", "Bianchi", "Larsen", "Sato")
EMAIL_DOMAINS = ("example.com", "example.org", "example.net", "mail.example.com")

MERCHANTS = (
    ("FreshMart", "groceries"), ("Green Basket Market", "groceries"), ("Corner Bakery", "groceries"),
    ("Bella Trattoria", "dining"), ("Sushi Go", "dining"), ("Daily Grind Coffee", "dining"),
    ("Metro Transit", "transport"), ("QuickRide", "transport"), ("Shell Station", "transport"),
    ("City Power & Light", "utilities"), ("AquaPure Water", "utilities"), ("FiberNet Internet", "utilities"),
    ("CineMax", "entertainment"), ("StreamFlix", "entertainment"), ("Gamezone", "entertainment"),
    ("UrbanWear", "shopping"), ("HomeGoods Depot", "shopping"), ("Bookworm", "shopping"),
    ("SkyHigh Airlines", "travel"), ("Harbor Hotel", "travel"),
    ("Wellness Pharmacy", "health"), ("Downtown Dental", "health"),
)
TX_CATEGORIES = ("groceries", "dining", "transport", "utilities", "entertainment", "shopping", "travel",
                 "health", "income", "transfer")
PAYEES = ("City Power & Light", "AquaPure Water", "FiberNet Internet", "Metro Mobile", "Greenfield Property Mgmt",
          "SafeHome Insurance")

EVENT_TITLES = (
    ("Team standup", "work"), ("Project review", "work"), ("1:1 with manager", "work"), ("Sprint planning", "work"),
    ("Client call", "work"), ("Design workshop", "work"), ("Budget meeting", "work"), ("Quarterly all-hands", "work"),
    ("Dentist appointment", "personal"), ("Yoga class", "personal"), ("Dinner with friends", "personal"),
    ("Piano lesson", "personal"), ("Haircut", "personal"), ("Parent-teacher meeting", "personal"),
    ("Car service", "personal"), ("Book club", "personal"),
)
LOCATIONS = ("Room 4B", "Main conference room", "Zoom", "Café Lumen", "Downtown clinic", "Community center",
             "Google Meet", "Office lobby")

PRODUCTS = (
    ("Wireless Noise-Cancelling Headphones", "electronics", "Sonora", 199.0),
    ("Bluetooth Speaker Mini", "electronics", "Sonora", 49.0), ("USB-C Charging Cable 2m", "electronics", "Voltix", 12.0),
    ("27-inch 4K Monitor", "electronics", "Pixelon", 329.0), ("Mechanical Keyboard", "electronics", "Keyforge", 119.0),
    ("Wireless Mouse", "electronics", "Keyforge", 29.0), ("Portable Power Bank 20000mAh", "electronics", "Voltix", 39.0),
    ("Smart Watch Series 5", "electronics", "Pixelon", 249.0), ("Noise-Cancelling Earbuds", "electronics", "Sonora", 129.0),
    ("Drip Coffee Maker", "kitchen", "BrewHaus", 59.0), ("Espresso Machine", "kitchen", "BrewHaus", 289.0),
    ("Chef's Knife 8-inch", "kitchen", "Steelcraft", 79.0), ("Non-Stick Frying Pan", "kitchen", "Steelcraft", 34.0),
    ("Electric Kettle", "kitchen", "BrewHaus", 39.0), ("Blender Pro 1200W", "kitchen", "Mixwell", 99.0),
    ("Cast Iron Skillet", "kitchen", "Steelcraft", 45.0), ("Air Fryer 5L", "kitchen", "Mixwell", 119.0),
    ("Yoga Mat", "sports", "FlexFit", 25.0), ("Adjustable Dumbbells", "sports", "FlexFit", 149.0),
    ("Running Shoes", "sports", "Stride", 110.0), ("Insulated Water Bottle", "sports", "Stride", 22.0),
    ("Camping Tent 2-Person", "sports", "Trailhead", 139.0), ("Hiking Backpack 40L", "sports", "Trailhead", 89.0),
    ("Cotton T-Shirt", "clothing", "UrbanWear", 18.0), ("Rain Jacket", "clothing", "Trailhead", 95.0),
    ("Wool Socks 3-Pack", "clothing", "UrbanWear", 19.0), ("Denim Jeans", "clothing", "UrbanWear", 59.0),
    ("LED Desk Lamp", "home", "Lumo", 35.0), ("Memory Foam Pillow", "home", "Dreamwell", 42.0),
    ("Robot Vacuum", "home", "Cleanbot", 259.0), ("Scented Candle Set", "home", "Lumo", 24.0),
    ("Throw Blanket", "home", "Dreamwell", 38.0), ("Paperback Novel: The Quiet Harbor", "books", "Northlight Press", 14.0),
    ("Cookbook: Weeknight Dinners", "books", "Northlight Press", 27.0), ("Board Game: Island Traders", "toys", "Playforge", 44.0),
    ("Building Blocks 500 pcs", "toys", "Playforge", 36.0), ("Jigsaw Puzzle 1000 pcs", "toys", "Playforge", 21.0),
)
PRODUCT_CATEGORIES = ("electronics", "kitchen", "sports", "clothing", "home", "books", "toys")
SEARCH_TERMS = ("headphones", "speaker", "monitor", "keyboard", "mouse", "coffee maker", "espresso machine",
                "knife", "frying pan", "kettle", "blender", "yoga mat", "dumbbells", "running shoes",
                "water bottle", "tent", "backpack", "rain jacket", "socks", "desk lamp", "pillow",
                "robot vacuum", "candle", "blanket", "cookbook", "board game", "puzzle", "earbuds", "power bank",
                "smart watch", "air fryer", "skillet", "jeans", "t-shirt")

STREETS = ("Main Street", "Park Avenue", "Station Road", "Market Square", "Harbor Lane", "Elm Street",
           "King Street", "River Road", "Oak Avenue", "Church Street", "Mill Lane", "Victoria Road")
LANDMARKS = {
    "Eiffel Tower": ("Paris", 48.8584, 2.2945), "Louvre Museum": ("Paris", 48.8606, 2.3376),
    "Big Ben": ("London", 51.5007, -0.1246), "British Museum": ("London", 51.5194, -0.127),
    "Brandenburg Gate": ("Berlin", 52.5163, 13.3777), "Colosseum": ("Rome", 41.8902, 12.4922),
    "Sagrada Família": ("Barcelona", 41.4036, 2.1744), "Rijksmuseum": ("Amsterdam", 52.36, 4.8852),
    "Central Park": ("New York", 40.7829, -73.9654), "Statue of Liberty": ("New York", 40.6892, -74.0445),
    "Golden Gate Bridge": ("San Francisco", 37.8199, -122.4783), "CN Tower": ("Toronto", 43.6426, -79.3871),
    "Tokyo Tower": ("Tokyo", 35.6586, 139.7454), "Sydney Opera House": ("Sydney", -33.8568, 151.2153),
    "Burj Khalifa": ("Dubai", 25.1972, 55.2744), "Gateway of India": ("Mumbai", 18.922, 72.8347),
    "Space Needle": ("Seattle", 47.6205, -122.3493), "Millennium Park": ("Chicago", 41.8826, -87.6226),
}
PLACE_NAMES = {
    "restaurant": ("Trattoria", "Bistro", "Kitchen", "Grill", "Brasserie", "Diner"),
    "cafe": ("Coffee House", "Espresso Bar", "Tea Room", "Café", "Roasters"),
    "pharmacy": ("Pharmacy", "Chemist", "Drugstore"),
    "gas_station": ("Fuel Stop", "Gas & Go", "Petrol Station"),
    "atm": ("ATM", "Cash Point"),
    "supermarket": ("Market", "Grocer", "Supermarket", "Food Hall"),
    "hospital": ("General Hospital", "Medical Center", "Clinic"),
    "museum": ("Museum", "Gallery", "Exhibition Hall"),
    "park": ("Park", "Gardens", "Green"),
}
PLACE_PREFIXES = ("Blue", "Golden", "Corner", "Old Town", "Riverside", "Sunny", "Central", "Little", "Royal",
                  "Green", "Harbor", "Maple")

HOTEL_NAMES = ("Grand {c} Hotel", "The {c} Riverside Inn", "Hotel Lumière {c}", "{c} Central Suites",
               "The Maple House {c}", "Harbor View {c}", "Budget Stay {c}")
AMENITIES = ("wifi", "pool", "gym", "parking", "breakfast", "spa")
AIRLINES = (("LH", "Lufthansa"), ("AF", "Air France"), ("BA", "British Airways"), ("UA", "United"),
            ("DL", "Delta"), ("KL", "KLM"), ("IB", "Iberia"), ("EK", "Emirates"), ("JL", "Japan Airlines"),
            ("SQ", "Singapore Airlines"), ("AC", "Air Canada"), ("QF", "Qantas"), ("TK", "Turkish Airlines"))

ARTISTS = ("The Paper Lanterns", "Nova Reyes", "Blue Harbor", "Kite Theory", "Mira Solberg", "DJ Atlas",
           "The Velvet Hours", "Orchid Lane", "Samir & the Tides", "Juniper Vale")
SONG_WORDS_A = ("Midnight", "Golden", "Paper", "Electric", "Quiet", "Neon", "Silver", "Summer", "Broken", "Wild")
SONG_WORDS_B = ("Tram", "Static", "Hearts", "Rivers", "Skyline", "Letters", "Echoes", "Garden", "Highway", "Lights")
GENRES = ("pop", "rock", "jazz", "electronic", "indie", "hip-hop", "classical", "folk")

STOCKS = {"AAPL": 212.0, "MSFT": 438.0, "GOOGL": 176.0, "AMZN": 185.0, "NVDA": 118.0, "TSLA": 182.0,
          "META": 497.0, "NFLX": 641.0, "IBM": 169.0, "INTC": 31.0, "KO": 63.0, "DIS": 101.0}
STOCK_NAMES = {"AAPL": "Apple", "MSFT": "Microsoft", "GOOGL": "Alphabet", "AMZN": "Amazon", "NVDA": "Nvidia",
               "TSLA": "Tesla", "META": "Meta", "NFLX": "Netflix", "IBM": "IBM", "INTC": "Intel",
               "KO": "Coca-Cola", "DIS": "Disney"}

ROOMS = ("living room", "bedroom", "kitchen", "office", "bathroom", "hallway")
DOORS = ("front", "back", "garage")
CHANNELS = ("general", "random", "engineering", "design", "marketing", "support", "travel-planning")

NATIONALITIES = ("United States", "United Kingdom", "Germany", "France", "India", "Japan", "Brazil", "Canada",
                 "Australia", "Mexico", "South Africa", "Kenya")
# (nationality, destination) pairs that need no visa; everything else needs an e-visa or a visa.
VISA_FREE_ZONES = ({"Germany", "France", "Italy", "Spain", "Netherlands", "Portugal", "Austria", "Ireland",
                    "Sweden", "Norway", "Switzerland"},)
VISA_FREE_PASSPORTS = {"United States", "United Kingdom", "Germany", "France", "Japan", "Canada", "Australia"}

RECIPES = (
    ("Shakshuka", "middle_eastern", 30, 2, True, [("eggs", 4, "pcs"), ("canned tomatoes", 400, "g"), ("onion", 1, "pcs"), ("bell pepper", 1, "pcs"), ("cumin", 1, "tsp"), ("olive oil", 2, "tbsp")]),
    ("Pad Thai", "thai", 35, 2, False, [("rice noodles", 200, "g"), ("shrimp", 200, "g"), ("eggs", 2, "pcs"), ("bean sprouts", 100, "g"), ("peanuts", 40, "g"), ("lime", 1, "pcs"), ("fish sauce", 2, "tbsp")]),
    ("Margherita Pizza", "italian", 45, 4, True, [("pizza dough", 500, "g"), ("canned tomatoes", 200, "g"), ("mozzarella", 250, "g"), ("basil", 10, "g"), ("olive oil", 1, "tbsp")]),
    ("Chicken Tikka Masala", "indian", 60, 4, False, [("chicken breast", 600, "g"), ("yogurt", 150, "g"), ("canned tomatoes", 400, "g"), ("cream", 100, "ml"), ("garam masala", 2, "tsp"), ("onion", 1, "pcs"), ("rice", 300, "g")]),
    ("Greek Salad", "greek", 15, 2, True, [("tomatoes", 3, "pcs"), ("cucumber", 1, "pcs"), ("feta", 150, "g"), ("olives", 60, "g"), ("red onion", 1, "pcs"), ("olive oil", 2, "tbsp")]),
    ("Mushroom Risotto", "italian", 40, 3, True, [("arborio rice", 300, "g"), ("mushrooms", 250, "g"), ("parmesan", 60, "g"), ("vegetable stock", 1000, "ml"), ("onion", 1, "pcs"), ("butter", 30, "g")]),
    ("Beef Tacos", "mexican", 25, 4, False, [("ground beef", 500, "g"), ("tortillas", 8, "pcs"), ("lettuce", 100, "g"), ("tomatoes", 2, "pcs"), ("cheddar", 100, "g"), ("lime", 1, "pcs")]),
    ("Buttermilk Pancakes", "american", 20, 4, True, [("flour", 250, "g"), ("buttermilk", 400, "ml"), ("eggs", 2, "pcs"), ("butter", 40, "g"), ("sugar", 2, "tbsp"), ("baking powder", 2, "tsp")]),
    ("Minestrone", "italian", 50, 6, True, [("canned tomatoes", 400, "g"), ("carrots", 2, "pcs"), ("celery", 2, "pcs"), ("zucchini", 1, "pcs"), ("small pasta", 150, "g"), ("cannellini beans", 400, "g")]),
    ("Guacamole", "mexican", 10, 4, True, [("avocados", 3, "pcs"), ("lime", 1, "pcs"), ("red onion", 1, "pcs"), ("cilantro", 10, "g"), ("tomatoes", 1, "pcs")]),
    ("Red Lentil Curry", "indian", 35, 4, True, [("red lentils", 300, "g"), ("coconut milk", 400, "ml"), ("onion", 1, "pcs"), ("garlic", 3, "cloves"), ("curry powder", 2, "tbsp"), ("spinach", 100, "g")]),
    ("Salmon Teriyaki", "japanese", 25, 2, False, [("salmon fillets", 2, "pcs"), ("soy sauce", 3, "tbsp"), ("honey", 1, "tbsp"), ("ginger", 10, "g"), ("rice", 200, "g")]),
    ("Chili con Carne", "mexican", 75, 6, False, [("ground beef", 700, "g"), ("kidney beans", 400, "g"), ("canned tomatoes", 800, "g"), ("onion", 2, "pcs"), ("chili powder", 2, "tbsp")]),
    ("Falafel Wraps", "middle_eastern", 40, 4, True, [("chickpeas", 400, "g"), ("flatbreads", 4, "pcs"), ("tahini", 3, "tbsp"), ("parsley", 20, "g"), ("garlic", 2, "cloves"), ("lettuce", 100, "g")]),
    ("Pesto Pasta", "italian", 20, 2, True, [("spaghetti", 250, "g"), ("basil", 40, "g"), ("pine nuts", 30, "g"), ("parmesan", 40, "g"), ("garlic", 1, "cloves"), ("olive oil", 4, "tbsp")]),
    ("Egg Fried Rice", "chinese", 20, 2, True, [("rice", 300, "g"), ("eggs", 3, "pcs"), ("peas", 100, "g"), ("soy sauce", 2, "tbsp"), ("spring onions", 3, "pcs")]),
    ("Tomato Soup", "american", 30, 4, True, [("tomatoes", 8, "pcs"), ("onion", 1, "pcs"), ("vegetable stock", 750, "ml"), ("cream", 50, "ml"), ("basil", 10, "g")]),
    ("Ratatouille", "french", 60, 4, True, [("eggplant", 1, "pcs"), ("zucchini", 2, "pcs"), ("bell pepper", 2, "pcs"), ("tomatoes", 4, "pcs"), ("onion", 1, "pcs"), ("thyme", 5, "g")]),
    ("Kung Pao Chicken", "chinese", 30, 3, False, [("chicken thighs", 500, "g"), ("peanuts", 60, "g"), ("dried chilies", 8, "pcs"), ("soy sauce", 3, "tbsp"), ("rice vinegar", 1, "tbsp")]),
    ("Banana Bread", "american", 70, 8, True, [("bananas", 3, "pcs"), ("flour", 250, "g"), ("sugar", 120, "g"), ("eggs", 2, "pcs"), ("butter", 100, "g"), ("baking soda", 1, "tsp")]),
)
CUISINES = ("italian", "mexican", "indian", "thai", "japanese", "chinese", "french", "greek", "american",
            "middle_eastern")
INGREDIENT_QUERIES = ("eggs", "canned tomatoes", "onion", "rice", "garlic", "basil", "lime", "chickpeas",
                      "mushrooms", "spinach", "olive oil", "parmesan", "peanuts", "soy sauce", "zucchini",
                      "bell pepper", "cream", "butter", "flour", "ground beef", "tomatoes", "lettuce")

# kcal, protein g, carbs g, fat g per 100 g
NUTRITION = {
    "apple": (52, 0.3, 14.0, 0.2), "banana": (89, 1.1, 23.0, 0.3), "white rice": (130, 2.7, 28.0, 0.3),
    "brown rice": (112, 2.3, 24.0, 0.8), "chicken breast": (165, 31.0, 0.0, 3.6), "salmon": (208, 20.0, 0.0, 13.0),
    "egg": (155, 13.0, 1.1, 11.0), "oats": (389, 16.9, 66.0, 6.9), "almonds": (579, 21.0, 22.0, 50.0),
    "broccoli": (34, 2.8, 7.0, 0.4), "avocado": (160, 2.0, 9.0, 15.0), "whole milk": (61, 3.2, 4.8, 3.3),
    "greek yogurt": (59, 10.0, 3.6, 0.4), "cheddar": (403, 25.0, 1.3, 33.0), "spinach": (23, 2.9, 3.6, 0.4),
    "potato": (77, 2.0, 17.0, 0.1), "sweet potato": (86, 1.6, 20.0, 0.1), "lentils": (116, 9.0, 20.0, 0.4),
    "tofu": (76, 8.0, 1.9, 4.8), "pasta": (131, 5.0, 25.0, 1.1), "dark chocolate": (546, 4.9, 61.0, 31.0),
    "peanut butter": (588, 25.0, 20.0, 50.0), "orange": (47, 0.9, 12.0, 0.1), "beef steak": (271, 25.0, 0.0, 19.0),
}

SMS_TEXTS = ("Running 10 minutes late", "Can you call me when you're free?", "Dinner is at 7 tonight",
             "I picked up the tickets", "Happy birthday!", "Meeting moved to 3 pm", "Don't forget the keys",
             "Landed safely", "See you at the station", "Thanks for today!")
EMAIL_SUBJECTS = ("Quarterly report", "Lunch next week?", "Invoice 4471", "Weekend plans", "Project kickoff",
                  "Updated itinerary", "Feedback on the draft", "Team offsite", "Your order has shipped",
                  "Reminder: dentist appointment", "Photos from the trip", "Budget approval")
EMAIL_BODIES = ("Please find the latest numbers attached.", "Are you free on Thursday for lunch?",
                "Just checking in about the draft — any comments?", "Here is the updated plan for the offsite.",
                "Thanks for your help last week!", "Can we move our call to tomorrow?",
                "Attached are the photos from the trip.", "Let me know if the budget works for you.")
CHAT_TEXTS = ("Deploy is done", "Standup moved to 10:30", "Who has the slides for today?", "Lunch order closes at noon",
              "New build is ready for testing", "Please review my PR", "Office is closed on Friday")

# name -> (size range in bytes, content or None for binary files); {a}/{b} are filled per seed.
FILES = (
    ("/home/user/documents/report_q1.pdf", None), ("/home/user/documents/report_q2.pdf", None),
    ("/home/user/documents/budget_2025.xlsx", None), ("/home/user/documents/resume.docx", None),
    ("/home/user/documents/notes/meeting_notes_0527.txt",
     "Meeting notes 27 May. Decisions: ship version {a}.2 next sprint; hire one designer.\nAction items: Maya drafts the roadmap."),
    ("/home/user/documents/notes/wifi.txt", "Home network: LumenNet-5G\nwifi password: maple-{b}-river"),
    ("/home/user/documents/notes/packing_list.txt", "Packing list: passport, charger, rain jacket, {a} pairs of socks, sunscreen"),
    ("/home/user/documents/notes/ideas.md", "# Ideas\n- weekend hiking trip\n- learn sourdough\n- build a birdhouse for the garden"),
    ("/home/user/documents/invoices/invoice_4471.txt", "Invoice 4471\nClient: Northwind Studio\nAmount due: {b}.00 USD\nDue date: 2025-06-20"),
    ("/home/user/documents/invoices/invoice_4472.txt", "Invoice 4472\nClient: Bluebird Cafe\nAmount due: {a}50.00 USD\nDue date: 2025-06-30"),
    ("/home/user/documents/recipes/grandma_soup.txt", "Grandma's chicken soup: simmer for {a} hours with carrots, celery and dill."),
    ("/home/user/photos/beach_2024.jpg", None), ("/home/user/photos/birthday_party.jpg", None),
    ("/home/user/photos/mountains.png", None), ("/home/user/photos/passport_scan.pdf", None),
    ("/home/user/projects/tinyapp/main.py", "def main():\n    print('hello from tinyapp v{a}')\n\n# TODO: add config loader"),
    ("/home/user/projects/tinyapp/README.md", "# tinyapp\nA tiny demo app. Run with `python main.py`. License: MIT."),
    ("/home/user/projects/tinyapp/requirements.txt", "requests==2.32.3\nrich==13.7.1"),
    ("/home/user/projects/website/index.html", "<html><body><h1>Welcome to my portfolio</h1></body></html>"),
    ("/home/user/projects/website/style.css", "body {{ font-family: sans-serif; color: #333; }}"),
    ("/home/user/downloads/setup.exe", None), ("/home/user/downloads/podcast_ep{a}.mp3", None),
    ("/home/user/downloads/tickets_concert.pdf", None), ("/home/user/downloads/dataset.csv", "id,city,temp\n1,Paris,21\n2,Oslo,14\n3,Cairo,33"),
    ("/home/user/music/playlist_export.m3u", "#EXTM3U\nmidnight_tram.mp3\ngolden_static.mp3"),
)
DIRECTORIES = ("/home/user", "/home/user/documents", "/home/user/documents/notes", "/home/user/documents/invoices",
               "/home/user/documents/recipes", "/home/user/photos", "/home/user/projects", "/home/user/projects/tinyapp",
               "/home/user/projects/website", "/home/user/downloads", "/home/user/music", "/home/user/archive")
FILE_KEYWORDS = ("wifi password", "Northwind", "Bluebird", "roadmap", "sunscreen", "sourdough", "TODO",
                 "License", "portfolio", "dill", "Oslo")


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 6371.0 * 2 * math.asin(math.sqrt(a))


class World:
    """Seeded state of the demo world. ``World(s)`` is identical for equal ``s``."""

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self.today = TODAY
        r = random.Random(f"tinytool-world:{self.seed}")
        self.cities = CITIES
        self.city_index = {c.name.lower(): c for c in CITIES} | {c.airport.lower(): c for c in CITIES}
        self.rates = {k: (v if k == "USD" else round(v * (1 + r.uniform(-0.03, 0.03)), 4))
                      for k, v in USD_RATES.items()}

        last = list(LAST_NAMES)
        r.shuffle(last)
        self.contacts: list[dict[str, Any]] = []
        phones = r.sample(range(100, 9999), len(FIRST_NAMES))
        for i, first in enumerate(FIRST_NAMES):
            lastname = last[i % len(last)]
            ascii_last = lastname.replace("'", "").replace("í", "i").lower()
            self.contacts.append({
                "name": f"{first} {lastname}",
                "email": f"{first.lower()}.{ascii_last}@{r.choice(EMAIL_DOMAINS)}",
                "phone": f"+1-555-{phones[i]:04d}",
                "city": r.choice(CITIES).name,
            })

        self.products: list[dict[str, Any]] = []
        ids = r.sample(range(10000, 99999), len(PRODUCTS))
        for (name, cat, brand, price), pid in zip(PRODUCTS, ids):
            self.products.append({
                "product_id": f"P-{pid}", "name": name, "category": cat, "brand": brand,
                "price": round(round(price * r.uniform(0.85, 1.15)) - 0.01, 2),
                "rating": round(r.uniform(3.2, 4.9), 1), "stock": r.choice((0, 3, 8, 15, 25, 40)),
            })
        self.product_index = {p["product_id"]: p for p in self.products}

        self.hotels: dict[str, list[dict[str, Any]]] = {}
        for c in CITIES:
            names = r.sample(HOTEL_NAMES, 4)
            self.hotels[c.name] = [{
                "hotel_id": f"HTL-{c.airport}-{k + 1}", "name": n.format(c=c.name), "city": c.name,
                "price_per_night": float(r.randrange(60, 420, 5)), "rating": round(r.uniform(3.0, 4.9), 1),
                "amenities": sorted(r.sample(AMENITIES, r.randint(1, 4))),
            } for k, n in enumerate(names)]
        self.hotel_index = {h["hotel_id"]: h for hs in self.hotels.values() for h in hs}

        self.tracks: list[dict[str, Any]] = []
        used: set[str] = set()
        tids = r.sample(range(1000, 9999), 48)
        while len(self.tracks) < 48:
            title = f"{r.choice(SONG_WORDS_A)} {r.choice(SONG_WORDS_B)}"
            if title in used:
                continue
            used.add(title)
            artist = ARTISTS[len(self.tracks) % len(ARTISTS)]
            self.tracks.append({
                "track_id": f"TRK-{tids[len(self.tracks)]}", "title": title, "artist": artist,
                "album": f"{r.choice(SONG_WORDS_B)} of {r.choice(SONG_WORDS_A)}", "genre": r.choice(GENRES),
                "duration_s": r.randint(150, 320),
            })
        self.track_index = {t["track_id"]: t for t in self.tracks}

        self.stocks = {s: round(p * r.uniform(0.9, 1.1), 2) for s, p in STOCKS.items()}
        self.recipes = [{
            "recipe_id": f"R-{101 + i}", "name": name, "cuisine": cuisine, "minutes": minutes,
            "servings": servings, "vegetarian": veg,
            "ingredients": [{"name": n, "quantity": q, "unit": u} for n, q, u in ingr],
        } for i, (name, cuisine, minutes, servings, veg, ingr) in enumerate(RECIPES)]
        self.recipe_index = {x["recipe_id"]: x for x in self.recipes}

        self.inbox: list[dict[str, Any]] = []
        for k in range(14):
            sender = r.choice(self.contacts)
            self.inbox.append({
                "email_id": f"EM-{301 + k}", "from": sender["email"], "from_name": sender["name"],
                "subject": r.choice(EMAIL_SUBJECTS), "snippet": r.choice(EMAIL_BODIES),
                "date": (TODAY - timedelta(days=k // 2)).isoformat(), "unread": k < 5 or r.random() < 0.3,
                "folder": "spam" if k in (6, 11) else "archive" if k in (9, 12) else "inbox",
            })
        self.email_index = {e["email_id"]: e for e in self.inbox}

        self.state: dict[str, Any] = {
            "accounts": self._make_accounts(r),
            "events": self._make_events(r),
            "files": self._make_files(r),
            "cart": [{"product_id": self.products[3]["product_id"], "quantity": 1}],
            "orders": self._make_orders(r),
            "bookings": {f"BK{code}": booking for code, booking in zip(r.sample(range(100000, 999999), 3), (
                {"type": "hotel", "hotel_id": "HTL-LIS-1", "status": "confirmed"},
                {"type": "flight", "flight_id": "FL-JFK-LHR-0620-1", "status": "confirmed"},
                {"type": "hotel", "hotel_id": "HTL-HND-2", "status": "confirmed"},
            ))},
            "reminders": {},
            "shopping_lists": {"groceries": ["milk", "bread"], "hardware": ["light bulbs"]},
            "playlists": {
                "PL-01": {"name": "Morning Run", "track_ids": [t["track_id"] for t in self.tracks[:4]], "public": True},
                "PL-02": {"name": "Focus", "track_ids": [t["track_id"] for t in self.tracks[10:14]], "public": False},
                "PL-03": {"name": "Dinner Jazz", "track_ids": [t["track_id"] for t in self.tracks[20:23]], "public": False},
            },
            "devices": {
                "thermostat": {"room": "living room", "temperature": 21.0, "unit": "celsius", "mode": "auto"},
                "lights": {room: {"on": room in ("kitchen", "hallway"), "brightness": 80, "color": "warm white"}
                           for room in ROOMS},
                "locks": {d: {"locked": d != "garage"} for d in DOORS},
                "player": {"volume": 35, "now_playing": None},
            },
            "outbox": [],
            "counter": 0,
        }
        self.transaction_index_size = sum(len(a["transactions"]) for a in self.state["accounts"].values())

    # ---- construction helpers -------------------------------------------------------------

    def _make_accounts(self, r: random.Random) -> dict[str, dict[str, Any]]:
        kinds = (("Everyday Checking", "checking", "CHK"), ("Joint Checking", "checking", "CHK"),
                 ("High-Yield Savings", "savings", "SAV"), ("Travel Savings", "savings", "SAV"),
                 ("Rewards Credit Card", "credit", "CRD"))
        accounts = {}
        tx_ids = iter(r.sample(range(100000, 999999), 200))
        for label, kind, prefix in kinds:
            acc_id = f"{prefix}-{r.randint(1000, 9999)}"
            balance = {"checking": r.uniform(800, 6000), "savings": r.uniform(5000, 40000),
                       "credit": -r.uniform(100, 2500)}[kind]
            txs = []
            for _ in range(24 if kind != "savings" else 6):
                day = TODAY - timedelta(days=r.randint(0, 75))
                if kind == "savings":
                    merchant, cat, amount = "Interest", "income", round(r.uniform(5, 60), 2)
                elif r.random() < 0.1 and kind == "checking":
                    merchant, cat, amount = "Acme Corp Payroll", "income", round(r.uniform(2000, 4000), 2)
                else:
                    merchant, cat = r.choice(MERCHANTS)
                    amount = -round(r.uniform(4, 180 if cat != "travel" else 650), 2)
                txs.append({"transaction_id": f"TX-{next(tx_ids)}", "date": day.isoformat(), "merchant": merchant,
                            "category": cat, "amount": amount, "pending": (TODAY - day).days <= 2})
            txs.sort(key=lambda t: (t["date"], t["transaction_id"]), reverse=True)
            accounts[acc_id] = {"account_id": acc_id, "name": label, "type": kind, "currency": "USD",
                                "balance": round(balance, 2), "transactions": txs}
        return accounts

    def _make_events(self, r: random.Random) -> dict[str, dict[str, Any]]:
        events: dict[str, dict[str, Any]] = {}
        seen = set()
        k = 0
        while len(events) < 30:
            day = (TODAY + timedelta(days=r.randint(0, 18))).isoformat()
            title, cal = r.choice(EVENT_TITLES)
            if (day, title) in seen:
                continue
            hour = r.choice((8, 9, 10, 11, 13, 14, 15, 16, 17, 19))
            start = f"{hour:02d}:{r.choice((0, 30)):02d}"
            # keep a day's events from overlapping so free-slot answers are unambiguous
            dur = r.choice((30, 45, 60, 90))
            if any(e["date"] == day and _overlap(e["start_time"], e["duration_minutes"], start, dur)
                   for e in events.values()):
                continue
            seen.add((day, title))
            k += 1
            events[f"EVT-{1000 + k}"] = {
                "event_id": f"EVT-{1000 + k}", "title": title, "date": day, "start_time": start,
                "duration_minutes": dur, "calendar": cal, "location": r.choice(LOCATIONS),
                "attendees": [c["email"] for c in r.sample(self.contacts, r.randint(0, 3))],
            }
        return events

    def _make_files(self, r: random.Random) -> dict[str, dict[str, Any]]:
        a, b = r.randint(2, 9), r.randint(100, 999)
        files = {}
        for path, content in FILES:
            path = path.format(a=a)
            text = content.format(a=a, b=b) if content else None
            size = len(text.encode()) if text else r.randint(40_000, 8_000_000)
            modified = (TODAY - timedelta(days=r.randint(0, 200))).isoformat()
            files[path] = {"path": path, "size_bytes": size, "modified": modified, "content": text}
        return files

    def _make_orders(self, r: random.Random) -> dict[str, dict[str, Any]]:
        orders = {}
        for status in ("delivered", "shipped", "out_for_delivery", "processing", "delivered", "shipped"):
            oid = f"ORD-{r.randint(10000, 99999)}"
            items = [{"product_id": p["product_id"], "quantity": r.randint(1, 2)} for p in r.sample(self.products, 2)]
            eta = (TODAY + timedelta(days={"delivered": -3, "shipped": 2, "out_for_delivery": 0,
                                           "processing": 5}[status])).isoformat()
            orders[oid] = {"order_id": oid, "status": status, "items": items, "carrier": r.choice(("UPS", "DHL", "FedEx")),
                           "estimated_delivery": eta, "returnable": status == "delivered"}
        return orders

    # ---- derived, deterministic values ------------------------------------------------------

    def rng(self, *key: Any) -> random.Random:
        """A generator fixed by (seed, key): the same key always yields the same values."""
        return random.Random(f"{self.seed}|" + "|".join(map(str, key)))

    def city(self, name: str) -> City | None:
        """Resolve a city name or airport code (case-insensitive)."""
        return self.city_index.get(name.strip().lower())

    def next_id(self, prefix: str, width: int = 6, salt: Any = "") -> str:
        """A fresh id for something an action creates; deterministic given the action history and
        ``salt`` (the action's main arguments, so different actions get different ids)."""
        self.state["counter"] += 1
        n = zlib.crc32(f"{self.seed}:{prefix}:{self.state['counter']}:{salt}".encode()) % (10 ** width)
        return f"{prefix}{n:0{width}d}"

    def freeze(self) -> World:
        """Promise not to change this world any more, so `copy` can reuse one snapshot of its state."""
        self._frozen_state = pickle.dumps(self.state, protocol=pickle.HIGHEST_PROTOCOL)
        return self

    def copy(self) -> World:
        """A world with the same static data and its own copy of the mutable ``state``."""
        new = object.__new__(World)
        new.__dict__.update(self.__dict__)
        blob = self.__dict__.get("_frozen_state") or pickle.dumps(self.state, protocol=pickle.HIGHEST_PROTOCOL)
        new.state = pickle.loads(blob)
        new._frozen_state = None
        return new


def _overlap(s1: str, d1: int, s2: str, d2: int) -> bool:
    a = int(s1[:2]) * 60 + int(s1[3:])
    b = int(s2[:2]) * 60 + int(s2[3:])
    return a < b + d2 and b < a + d1


@lru_cache(maxsize=8)
def pristine_world(seed: int) -> World:
    """One untouched world per seed, kept to be copied (never mutate the returned object)."""
    return World(seed).freeze()


def fresh_world(seed: int) -> World:
    """A new world for ``seed``, equal to ``World(seed)`` but built by copying a cached one."""
    return pristine_world(seed).copy()
