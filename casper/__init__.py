"""Casper: ask questions about your own iMessage history, on your Mac."""

__version__ = "0.1.0"
