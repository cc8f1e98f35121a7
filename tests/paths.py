"""Locations of the shared, read-only test fixtures (never copied into the repo).

They live in `shared/` beside the checkout (as on CI), or wherever $CASPER_SHARED points.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CASPER_SHARED") or REPO.parent / "shared")
CHATDB_FIXTURES = SHARED / "fixtures" / "chatdb"
