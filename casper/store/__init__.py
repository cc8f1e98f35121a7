"""Casper's own SQLite store: people, chats, messages with reactions folded in, per-person stats.

May import: casper's leaf modules (config, errors, protocols, records, stats), sqlite3.
"""
