"""Seeded, schema-accurate synthetic chat.db files and AddressBooks for tests, demo and eval."""

from __future__ import annotations

from ingest.synthetic.addressbook import Card, addressbook_path, write_addressbook
from ingest.synthetic.apple import load_schema
from ingest.synthetic.bulk import BulkInfo, append_messages, build_bulk_chat_db
from ingest.synthetic.demo import (
    DEMO_TIMEZONE,
    DemoCorpus,
    DemoToggles,
    build_demo_corpus,
    build_tiny_corpus,
)
from ingest.synthetic.writer import OWNER_EMAIL, ChatDbWriter

__all__ = [
    "DEMO_TIMEZONE",
    "OWNER_EMAIL",
    "BulkInfo",
    "Card",
    "ChatDbWriter",
    "DemoCorpus",
    "DemoToggles",
    "addressbook_path",
    "append_messages",
    "build_bulk_chat_db",
    "build_demo_corpus",
    "build_tiny_corpus",
    "load_schema",
    "write_addressbook",
]
