"""kopt's version (one place: the package, its model files and reports read it here)."""
__version__ = "0.1.0"
