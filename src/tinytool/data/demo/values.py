"""The values generated tools' arguments are drawn from: places, people, organisations, things.

The pools are wide on purpose. With a dozen cities a small model learns to write one of *those* cities rather
than the one in the request (it wrote "Lakes Angeles" for "Los Angeles" after training on a pool that held
"Lakeside Lions"); with hundreds of places and thousands of composed names, copying the request is the only
thing that works. Names of people, companies and teams are composed from parts, so most values are seen once.
"""

from __future__ import annotations

from random import Random

CITIES = (
    "Paris", "Tokyo", "Nairobi", "Lima", "Oslo", "Toronto", "Mumbai", "Cairo", "Sydney", "Berlin", "Madrid", "Seoul",
    "Denver", "Austin", "Lisbon", "Dublin", "Prague", "Hanoi", "Santiago", "Vancouver", "Chicago", "Boston",
    "Istanbul", "Jakarta", "Cape Town", "Helsinki", "Montreal", "Osaka", "Athens", "Auckland", "London", "Rome",
    "New York", "Los Angeles", "San Francisco", "Mexico City", "Buenos Aires", "Sao Paulo", "Rio de Janeiro",
    "Bogota", "Quito", "Havana", "Kingston", "Panama City", "San Jose", "Guatemala City", "Caracas", "Montevideo",
    "Reykjavik", "Edinburgh", "Manchester", "Amsterdam", "Brussels", "Vienna", "Zurich", "Geneva", "Munich",
    "Hamburg", "Copenhagen", "Stockholm", "Warsaw", "Krakow", "Budapest", "Bucharest", "Sofia", "Belgrade",
    "Zagreb", "Ljubljana", "Vilnius", "Riga", "Tallinn", "Kyiv", "Florence", "Venice", "Milan", "Naples",
    "Barcelona", "Seville", "Valencia", "Porto", "Marseille", "Lyon", "Nice", "Casablanca", "Marrakesh", "Tunis",
    "Accra", "Lagos", "Dakar", "Addis Ababa", "Kigali", "Kampala", "Dar es Salaam", "Johannesburg", "Durban",
    "Windhoek", "Dubai", "Abu Dhabi", "Doha", "Riyadh", "Amman", "Beirut", "Tel Aviv", "Tehran", "Karachi",
    "Lahore", "Delhi", "Bangalore", "Chennai", "Kolkata", "Kathmandu", "Colombo", "Dhaka", "Bangkok",
    "Chiang Mai", "Kuala Lumpur", "Singapore", "Manila", "Ho Chi Minh City", "Phnom Penh", "Beijing",
    "Shanghai", "Shenzhen", "Hong Kong", "Taipei", "Kyoto", "Sapporo", "Busan", "Ulaanbaatar", "Almaty",
    "Tashkent", "Baku", "Tbilisi", "Yerevan", "Perth", "Melbourne", "Brisbane", "Adelaide", "Wellington",
    "Christchurch", "Honolulu", "Anchorage", "Calgary", "Ottawa", "Quebec City", "Halifax", "Winnipeg",
    "Edmonton", "Glasgow", "Cardiff", "Belfast", "Bordeaux", "Toulouse", "Strasbourg", "Cologne", "Frankfurt",
    "Dresden", "Salzburg", "Bern", "Basel", "Antwerp", "Rotterdam", "Utrecht", "Gothenburg", "Bergen", "Tampere",
    "Gdansk", "Brno", "Bratislava", "Split", "Dubrovnik", "Thessaloniki", "Izmir", "Antalya", "Alexandria",
    "Luxor", "Zanzibar", "Mombasa", "Cusco", "Arequipa", "Medellin", "Cartagena", "Valparaiso", "Mendoza",
    "Cordoba", "Salvador", "Recife", "Curitiba", "Porto Alegre", "Guadalajara", "Monterrey", "Oaxaca", "Cancun",
)

#: US cities with their state, for parameters described as "City and state, e.g. Boston, MA"; each city once, so
#: a request that names only the city still fixes the state
US_CITIES = (
    ("Boston", "MA", "Massachusetts"), ("Denver", "CO", "Colorado"), ("Austin", "TX", "Texas"),
    ("Chicago", "IL", "Illinois"), ("Seattle", "WA", "Washington"), ("Miami", "FL", "Florida"),
    ("Phoenix", "AZ", "Arizona"), ("Portland", "OR", "Oregon"), ("Atlanta", "GA", "Georgia"),
    ("Nashville", "TN", "Tennessee"), ("San Diego", "CA", "California"), ("Detroit", "MI", "Michigan"),
    ("Las Vegas", "NV", "Nevada"), ("Baltimore", "MD", "Maryland"), ("Minneapolis", "MN", "Minnesota"),
    ("Columbus", "OH", "Ohio"), ("Salt Lake City", "UT", "Utah"), ("New Orleans", "LA", "Louisiana"),
    ("Los Angeles", "CA", "California"), ("San Francisco", "CA", "California"), ("Sacramento", "CA", "California"),
    ("San Jose", "CA", "California"), ("Houston", "TX", "Texas"), ("Dallas", "TX", "Texas"),
    ("San Antonio", "TX", "Texas"), ("El Paso", "TX", "Texas"), ("New York", "NY", "New York"),
    ("Buffalo", "NY", "New York"), ("Rochester", "NY", "New York"), ("Philadelphia", "PA", "Pennsylvania"),
    ("Pittsburgh", "PA", "Pennsylvania"), ("Cleveland", "OH", "Ohio"), ("Cincinnati", "OH", "Ohio"),
    ("Indianapolis", "IN", "Indiana"), ("Milwaukee", "WI", "Wisconsin"), ("Madison", "WI", "Wisconsin"),
    ("St. Louis", "MO", "Missouri"), ("Kansas City", "MO", "Missouri"), ("Omaha", "NE", "Nebraska"),
    ("Oklahoma City", "OK", "Oklahoma"), ("Tulsa", "OK", "Oklahoma"), ("Albuquerque", "NM", "New Mexico"),
    ("Santa Fe", "NM", "New Mexico"), ("Tucson", "AZ", "Arizona"), ("Boise", "ID", "Idaho"),
    ("Spokane", "WA", "Washington"), ("Anchorage", "AK", "Alaska"), ("Honolulu", "HI", "Hawaii"),
    ("Charlotte", "NC", "North Carolina"), ("Raleigh", "NC", "North Carolina"), ("Charleston", "SC", "South Carolina"),
    ("Richmond", "VA", "Virginia"), ("Orlando", "FL", "Florida"), ("Tampa", "FL", "Florida"),
    ("Jacksonville", "FL", "Florida"), ("Memphis", "TN", "Tennessee"), ("Louisville", "KY", "Kentucky"),
    ("Birmingham", "AL", "Alabama"), ("Hartford", "CT", "Connecticut"), ("Providence", "RI", "Rhode Island"),
    ("Burlington", "VT", "Vermont"), ("Des Moines", "IA", "Iowa"),
)

#: countries and their ISO 3166 alpha-2 codes
COUNTRY_CODES = {
    "France": "FR", "Japan": "JP", "Kenya": "KE", "Peru": "PE", "Norway": "NO", "Canada": "CA", "India": "IN",
    "Egypt": "EG", "Australia": "AU", "Germany": "DE", "Spain": "ES", "Brazil": "BR", "Mexico": "MX",
    "Vietnam": "VN", "Chile": "CL", "Ireland": "IE", "Portugal": "PT", "Greece": "GR", "Finland": "FI",
    "Morocco": "MA", "Italy": "IT", "United Kingdom": "GB", "United States": "US", "China": "CN",
    "South Korea": "KR", "Argentina": "AR", "Colombia": "CO", "Nigeria": "NG", "Ghana": "GH", "Ethiopia": "ET",
    "South Africa": "ZA", "Turkey": "TR", "Poland": "PL", "Sweden": "SE", "Denmark": "DK", "Netherlands": "NL",
    "Belgium": "BE", "Switzerland": "CH", "Austria": "AT", "Czech Republic": "CZ", "Hungary": "HU",
    "Romania": "RO", "Ukraine": "UA", "Thailand": "TH", "Indonesia": "ID", "Philippines": "PH", "Malaysia": "MY",
    "Singapore": "SG", "New Zealand": "NZ", "Iceland": "IS", "Israel": "IL", "Jordan": "JO",
    "Saudi Arabia": "SA", "United Arab Emirates": "AE", "Pakistan": "PK", "Bangladesh": "BD", "Nepal": "NP",
    "Sri Lanka": "LK", "Cuba": "CU", "Uruguay": "UY", "Ecuador": "EC", "Tanzania": "TZ", "Rwanda": "RW",
}
COUNTRIES = tuple(COUNTRY_CODES)

FIRST = (
    "Alice", "Bram", "Chen", "Dana", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Keiko", "Maya", "Liam",
    "Noah", "Olivia", "Priya", "Quentin", "Rosa", "Samuel", "Tara", "Umar", "Vera", "Wes", "Ximena", "Yusuf",
    "Zoe", "Aaron", "Bianca", "Carlos", "Divya", "Emeka", "Fatima", "Gustavo", "Hana", "Ivan", "Julia", "Kwame",
    "Lucia", "Mateo", "Nadia", "Oscar", "Paula", "Ravi", "Sofia", "Tomas", "Uma", "Victor", "Wen", "Yara", "Zane",
    "Amara", "Ben", "Chloe", "Diego", "Eva", "Felix", "Giulia", "Henrik", "Isla", "Jamal", "Kenji", "Leila",
)
LAST = (
    "Moreau", "de Vries", "Wei", "Okafor", "Petrova", "Haddad", "Kim", "Silva", "Laurent", "Berg", "Tanaka",
    "O'Brien", "Patel", "Fischer", "Nguyen", "Garcia", "Kowalski", "Andersen", "Rossi", "Novak", "Mensah",
    "Hernandez", "Ivanova", "Schmidt", "Dubois", "Yamamoto", "Singh", "Costa", "Lindqvist", "Murphy", "Adeyemi",
    "Chowdhury", "Romero", "Castillo", "Nakamura", "Park", "Olsen", "Horvat", "Kaya", "Mahlangu", "Ferreira",
    "Bianchi", "Jensen", "Walsh", "Abara", "Santos", "Varga", "Cohen", "Lopez", "Reyes", "Fernandes", "Sato",
    "Morales", "Bauer", "Svensson", "Takahashi", "Kovacs", "Delgado", "Mwangi", "Ortiz", "Hoffman", "Ali",
)

_CO_HEAD = ("Acme", "Globex", "Initech", "Umbrella", "Blue Harbor", "Northwind", "Red Maple", "Silver Oak",
            "Greenfield", "Brightline", "Ironwood", "Cobalt", "Summit", "Evergreen", "Lumen", "Pioneer", "Quantum",
            "Stellar", "Atlas", "Horizon", "Crescent", "Nimbus", "Vertex", "Granite", "Tidewater", "Orchid",
            "Falcon", "Juniper", "Keystone", "Meridian")
_CO_TAIL = ("Corp", "Labs", "Industries", "Foods", "Analytics", "Logistics", "Systems", "Energy", "Health",
            "Capital", "Media", "Robotics", "Textiles", "Motors", "Pharma", "Software", "Partners", "Co", "Group",
            "Holdings")
_MASCOTS = ("Rovers", "United", "Hawks", "Eagles", "Lions", "Strikers", "Wolves", "Comets", "Falcons", "Bears",
            "Tigers", "Sharks", "Rangers", "Titans", "Stallions", "Hornets", "Pirates", "Knights", "Owls", "Bulls")

TICKERS = ("AAPL", "MSFT", "NVDA", "AMZN", "TSLA", "GOOGL", "META", "NFLX", "INTC", "ORCL", "SAP", "SONY", "IBM",
           "AMD", "ADBE", "CRM", "KO", "PEP", "DIS", "NKE", "JPM", "BAC", "WMT", "COST", "XOM", "CVX", "PFE",
           "MRK", "BA", "UBER", "SHOP", "SPOT", "QCOM", "CSCO", "T", "VZ", "F", "GM", "TM", "BABA")
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CAD", "AUD", "CHF", "INR", "BRL", "MXN", "SEK", "NOK", "CNY", "KRW",
              "ZAR", "NZD", "SGD", "HKD", "TRY", "PLN", "DKK", "THB", "IDR", "EGP")
CUISINES = ("Italian", "Thai", "Mexican", "Japanese", "Indian", "Greek", "Ethiopian", "Korean", "Lebanese",
            "Vietnamese", "Peruvian", "French", "Chinese", "Spanish", "Turkish", "Moroccan", "Brazilian",
            "Caribbean", "German", "Nepalese", "Filipino", "Persian", "Georgian", "Cuban")
GENRES = ("jazz", "rock", "hip hop", "classical", "reggae", "folk", "electronic", "blues", "country", "soul",
          "pop", "metal", "punk", "funk", "gospel", "salsa", "techno", "indie", "R&B", "bossa nova")
BOOK_GENRES = ("mystery", "science fiction", "fantasy", "biography", "history", "romance", "poetry", "horror",
               "thriller", "memoir", "travel", "philosophy", "graphic novel", "young adult", "true crime")
LANGUAGES = ("English", "Spanish", "French", "German", "Italian", "Portuguese", "Japanese", "Korean", "Arabic",
             "Hindi", "Dutch", "Swedish", "Mandarin", "Russian", "Turkish", "Polish", "Greek", "Swahili",
             "Vietnamese", "Thai", "Hebrew", "Finnish")
PRODUCTS = ("wireless headphones", "running shoes", "espresso machine", "yoga mat", "desk lamp", "backpack",
            "electric kettle", "mechanical keyboard", "water bottle", "phone case", "air purifier", "tent",
            "standing desk", "robot vacuum", "smart watch", "blender", "hiking boots", "winter jacket",
            "bluetooth speaker", "gaming mouse", "office chair", "rice cooker", "e-reader", "sunglasses",
            "camping stove", "electric toothbrush", "monitor arm", "cast iron skillet", "bike helmet", "duffel bag")
INGREDIENTS = ("chicken", "rice", "spinach", "tomatoes", "garlic", "lentils", "tofu", "mushrooms", "chickpeas",
               "salmon", "potatoes", "eggs", "basil", "lemon", "quinoa", "feta", "beef", "shrimp", "carrots",
               "onions", "bell peppers", "zucchini", "avocado", "black beans", "coconut milk", "ginger",
               "cilantro", "pasta", "oats", "almonds", "apples", "pork", "cabbage", "corn", "honey")
SKILLS = ("Python", "SQL", "data analysis", "project management", "graphic design", "nursing", "accounting",
          "welding", "copywriting", "machine learning", "JavaScript", "carpentry", "public speaking", "UX research",
          "cloud architecture", "bookkeeping", "video editing", "plumbing", "Java", "translation")
TOPICS = ("solar panels", "climate policy", "electric cars", "remote work", "space exploration", "urban gardening",
          "cybersecurity", "public transport", "ocean plastic", "sleep science", "quantum computing",
          "microplastics", "coral reefs", "vaccine research", "the Roman Empire", "renewable energy", "bird migration",
          "artificial intelligence", "the French Revolution", "volcanoes", "honey bees", "minimum wage",
          "cryptocurrency", "black holes", "the Silk Road", "housing prices", "marathon training", "jazz history")
SPORTS = ("football", "basketball", "tennis", "cricket", "baseball", "hockey", "rugby", "volleyball", "golf",
          "badminton", "table tennis", "cycling", "swimming", "handball", "water polo")
ELEMENTS = ("H2O", "CO2", "NaCl", "C6H12O6", "NH3", "CH4", "H2SO4", "CaCO3", "O2", "C2H5OH", "HCl", "NaOH",
            "KMnO4", "C12H22O11", "Fe2O3", "N2", "SO2", "H2O2", "CH3COOH", "MgSO4")
WORDS = ("serendipity", "ephemeral", "ubiquitous", "resilient", "meticulous", "eloquent", "candid", "pragmatic",
         "ambivalent", "benevolent", "cacophony", "diligent", "esoteric", "frugal", "gregarious", "hubris",
         "ineffable", "juxtapose", "laconic", "mellifluous", "nostalgia", "obfuscate", "quixotic", "sonder")
MESSAGES = ("running ten minutes late", "the meeting moved to Friday", "happy birthday!", "can you call me back?",
            "dinner is at 7", "the package arrived", "see you at the station", "don't forget the tickets",
            "the report is ready for review", "I left the keys under the mat", "congrats on the new job!",
            "the flight landed safely", "please send the invoice today", "are we still on for lunch?",
            "the server is back up", "thanks for the flowers")


def person(r: Random) -> str:
    """A full name composed from parts (thousands of them)."""
    return f"{r.choice(FIRST)} {r.choice(LAST)}"


def company(r: Random) -> str:
    return f"{r.choice(_CO_HEAD)} {r.choice(_CO_TAIL)}"


def team(r: Random) -> str:
    """A team named after a city, as clubs are ("Lyon Falcons")."""
    return f"{r.choice(CITIES)} {r.choice(_MASCOTS)}"
