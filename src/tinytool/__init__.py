"""tinytool: small models, good tool calls."""

__version__ = "0.1.0"
