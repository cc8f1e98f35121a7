"""Test hygiene for every test: a private CASPER_HOME, offline model hubs, no real chat.db."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point CASPER_HOME (and HOME) at a temp dir so no test can touch real data."""
    home = tmp_path / "casper-home"
    monkeypatch.setenv("CASPER_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.delenv("CASPER_CHAT_DB", raising=False)
    monkeypatch.delenv("CASPER_CONTACTS", raising=False)
    return home
