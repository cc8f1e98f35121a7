"""Test hygiene for every test: a private CASPER_HOME, offline model hubs, no real chat.db,
no background service."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.paths import CHATDB_FIXTURES

# What Casper derives from models (the embedder's onnxruntime copy, exported and checked once),
# kept for every test run on this machine, as tests/smollm2.py keeps its model: read at import,
# before the autouse fixture points HOME at a temp dir
MODEL_CACHE = (
    Path(os.environ.get("CASPER_TEST_CACHE") or Path.home() / ".cache" / "casper-tests")
    / "model-cache"
)

# fixtures of the service tests (an indexed demo home, services that always stop); import-time
# network probes run before sockets are blocked (see tests/network_guard.py); pytester for the
# tests of the test helpers themselves
pytest_plugins = ["tests.service_helpers", "tests.network_guard", "pytester"]


def pytest_configure(config: pytest.Config) -> None:
    """Fail at once, with the fix, when the shared fixtures are not where the tests look; build
    the CLI's click command once per app instead of at every CliRunner call."""
    _cache_typer_command()
    # in-process for the whole session too: module- and session-scoped fixtures run outside the
    # per-test monkeypatch below, and a command there must not auto-start a background service
    # (it would load the real models and outlive the test run)
    os.environ["CASPER_SERVICE"] = "0"
    # offline before any Hugging Face import, as `casper` itself does (cli.base.go_offline):
    # their constants read the environment once, at import, and a library imported while the
    # tests are collected would otherwise look the hub up (pytest-socket blocks it, and warns)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    if not CHATDB_FIXTURES.is_dir():
        raise pytest.UsageError(
            f"test fixtures not found at {CHATDB_FIXTURES.parent.parent}: clone next to the "
            "shared/ folder (as CI does) or set CASPER_SHARED=/path/to/shared"
        )


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point CASPER_HOME (and HOME) at a temp dir so no test can touch real data."""
    home = tmp_path / "casper-home"
    monkeypatch.setenv("CASPER_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("CASPER_CACHE", str(MODEL_CACHE))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    # in-process by default, so CliRunner tests see their fake backends and no test leaves a
    # background service behind; tests/integration/test_service*.py switch it on
    monkeypatch.setenv("CASPER_SERVICE", "0")
    monkeypatch.delenv("CASPER_CHAT_DB", raising=False)
    monkeypatch.delenv("CASPER_CONTACTS", raising=False)
    return home


def _cache_typer_command() -> None:
    """typer's CliRunner builds the click command from the app on every `invoke` (reading every
    option's type hints: ~0.1–0.27 CPU-s a call here, more than most commands take), where the
    real `casper` builds it once per process. The command is the same object each time, so it is
    built once per app (the test processes of tests/damage.py do the same for their calls)."""
    import functools

    import typer.testing

    typer.testing._get_command = functools.cache(typer.testing._get_command)  # type: ignore[attr-defined]
