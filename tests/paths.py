"""Locations of the shared, read-only test fixtures (never copied into the repo)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CHATDB_FIXTURES = SHARED / "fixtures" / "chatdb"
