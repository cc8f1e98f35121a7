"""Casper's own storage: the SQLite store (messages, people, stats) and the LanceDB index."""
