"""Runnable end-to-end scripts: ``python -m funcgrad.examples.<name>``."""
