"""Locations of the shared, read-only test fixtures (never copied into the repo).

They live in `shared/` beside the checkout (as on CI), or wherever $CASPER_SHARED points. A test
that needs one asks `shared_fixture(path)`: missing, it is skipped on a developer's machine and
fails on CI, so a fixture CI lacks is never a silent green.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CASPER_SHARED") or REPO.parent / "shared")
CHATDB_FIXTURES = SHARED / "fixtures" / "chatdb"


def on_ci() -> bool:
    """CI says so with CI=true (.ci/run sets it; hosted CI services set it too)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def shared_fixture(path: Path) -> Path:
    """`path`, a file or folder of the shared fixtures, when it is there; else the test is
    skipped, or fails when it runs on CI."""
    if path.exists():
        return path
    import pytest

    missing = f"shared fixture {path} not present"
    if on_ci():
        pytest.fail(f"{missing}: on CI (CI=true) every shared fixture must be there", pytrace=False)
    pytest.skip(missing)
