"""`casper doctor`'s privacy lines: the ceiling on what an MCP client (or a model server on
another machine) is shown, and the people and chats kept out (`exclude`): what each entry
names, how many rows were removed for them, and whether the index has caught up with
config.toml.

Imports: casper.config, casper.store, casper.indexer.exclude, casper.app.doctor_check.
"""

from __future__ import annotations

from casper.app.doctor_check import check
from casper.app.documents import Check
from casper.config import Config
from casper.dates.zones import iso, local_tz
from casper.indexer.exclude import last_purge, stored_entries
from casper.store.db import Store
from casper.vocab import Privacy

SHOWN: dict[Privacy, str] = {
    "full": "full message text",
    "redacted": "message text with phone numbers, emails, links, long numbers and street "
    "addresses masked",
    "aggregate": "ids, dates, senders and counts, never a message's text",
}


def privacy_checks(cfg: Config) -> list[Check]:
    """The privacy line, and the exclusions line when any are set or were applied."""
    checks = [
        check(
            "privacy",
            "ok",
            f"{cfg.privacy}: MCP clients and model servers on other machines are shown "
            + SHOWN[cfg.privacy],
            None
            if cfg.privacy != "full"
            else 'privacy = "redacted" or "aggregate" in '
            "config.toml (or `casper mcp --privacy …`) to show them less",
        )
    ]
    applied, purged = _applied(cfg)
    wanted = list(dict.fromkeys(cfg.exclude))
    if not wanted and not applied:
        return checks
    hint = "run `casper index` (a running service does it by itself within seconds)"
    if applied is not None and applied != wanted:
        checks.append(check(
            "kept out", "warn",
            f"config.toml keeps out {_listed(wanted) or 'nobody'}, the index was built keeping "
            f"out {_listed(applied) or 'nobody'}", hint,
        ))  # fmt: skip
        return checks
    if applied is None:
        checks.append(check("kept out", "warn", f"{_listed(wanted)}: not applied yet", hint))
        return checks
    named: dict[str, list[str]] = purged.get("named", {}) if purged else {}
    parts = []
    for entry in wanted:
        names = named.get(entry)
        parts.append(f"{entry} ({', '.join(names)})" if names else f"{entry} (names nobody)")
    detail = "; ".join(parts)
    if purged.get("rows"):
        when = (iso(purged.get("at"), local_tz(cfg.timezone)) or "?")[:16].replace("T", " ")
        detail += f"; {purged['rows']:,} of their rows removed from the store and the index "
        detail += f"(last {when})"
    nobody = [entry for entry in wanted if named and not named.get(entry)]
    if nobody:
        return [*checks, check(
            "kept out", "warn", detail,
            "an entry is a name on a card, chat:<the chat's name> or a phone/email; "
            "`casper contacts` and `casper chats` list them",
        )]  # fmt: skip
    return [*checks, check("kept out", "ok", detail)]


def _listed(entries: list[str]) -> str:
    return ", ".join(entries)


def _applied(cfg: Config) -> tuple[list[str] | None, dict]:
    """(the entries the store was last indexed keeping out, what was removed for them)."""
    if not cfg.store_path.exists():
        return None, {}
    try:
        store = Store.open(cfg.store_path, create=False)
    except Exception:  # noqa: BLE001 - damaged or outdated: the store's own line says why
        return None, {}
    try:
        return stored_entries(store), last_purge(store)
    finally:
        store.close()
