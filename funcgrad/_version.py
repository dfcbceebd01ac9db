"""funcgrad's version (here, below every layer that records it: funcgrad/_export.py's manifests)."""

__version__ = "0.1.0"
