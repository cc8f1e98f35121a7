"""`casper doctor`'s service lines: how current the index is (and the auto-index's last run),
whether the service can read chat.db (macOS: Full Disk Access for the interpreter it runs), and
whether the model server `llm_base_url` names answers.

The CLI passes what it learned from the running service (`casper serve --status`'s document, or
{"running": False}) and whether a LaunchAgent is installed; a service that is not running is
judged from the data and its last record (`auto_index.json`).

Imports: stdlib, ingest (errors), casper.config, casper.store, casper.dates, casper.app (freshness,
doctor_check).
"""

from __future__ import annotations

import sqlite3
import sys
import time
from dataclasses import replace
from datetime import tzinfo
from typing import Any

from casper.app.doctor_check import Check, check
from casper.app.freshness import Freshness, access_hint, duration_text, load_state, measure
from casper.app.runtime import make_engine
from casper.config import DEFAULT_LLM, Config, llm_server
from casper.dates.zones import iso, local_tz
from casper.errors import CasperError
from casper.store.db import Store
from ingest.errors import IngestError


def service_checks(cfg: Config, service: dict[str, Any], login_agent: bool) -> list[Check]:
    """The "auto-index" line (when something is indexed) and, when a service runs or starts at
    login, the "service access" line."""
    checks = []
    live = service.get("auto_index") if service.get("pid") else None
    record = live if live is not None else load_state(cfg.data_dir)
    if cfg.store_path.exists():
        checks.append(auto_index_check(cfg, service, live, record))
    access = service_access_check(service, live, record, login_agent)
    if access is not None:
        checks.append(access)
    return checks


def auto_index_check(
    cfg: Config,
    service: dict[str, Any],
    live: dict[str, Any] | None,
    record: dict[str, Any] | None,
) -> Check:
    """Newest message indexed, the lag behind chat.db, the last automatic run and its duration;
    a failing auto-index (with its error and hint) or an index left behind is a warning."""
    tz = local_tz(cfg.timezone)
    fresh = _fresh(cfg)
    now = time.time()
    if fresh is None:
        where = "newest indexed message unknown (chat.db unreadable here)"
    else:
        through = (iso(fresh.indexed_through, tz) or "nothing")[:16].replace("T", " ")
        where = f"indexed through {through}, lag {duration_text(fresh.lag_s(now))}"
        if fresh.behind:
            where += f" ({fresh.unindexed} chat.db rows not indexed yet)"
    last = _last_run(record, tz)
    if live is None:
        how = "service not running: `casper index` updates it, or a running service does"
        if not service.get("running"):
            how += " (`casper serve --install` starts one at login)" if _mac() else ""
        status = "warn" if fresh is not None and fresh.behind else "ok"
        hint = "run `casper index`" if status == "warn" else None
        return check("auto-index", status, f"{how}; {where}{last}", hint)
    if not live.get("enabled"):
        status = "warn" if fresh is not None and fresh.behind else "ok"
        detail = f"off in the running service ({live.get('off_reason')}); {where}"
        hint = "run `casper index`" if status == "warn" else None
        return check("auto-index", status, detail, hint)
    if live.get("failures"):
        run = live.get("last_run") or {}
        retry = live.get("retry_in_s")
        when = f", next try in {duration_text(retry)}" if retry is not None else ""
        detail = f"failing ({live['failures']} in a row{when}): {run.get('error')}; {where}{last}"
        return check("auto-index", "warn", detail, run.get("hint"))
    return check("auto-index", "ok", f"on (service pid {service['pid']}); {where}{last}")


def service_access_check(
    service: dict[str, Any],
    live: dict[str, Any] | None,
    record: dict[str, Any] | None,
    login_agent: bool,
) -> Check | None:
    """Can the service read chat.db? It runs as its own program (at login, not from this
    terminal), so macOS asks Full Disk Access of its interpreter, not of the terminal's app."""
    if live is None and not login_agent:
        return None  # no service of its own: commands run with this terminal's access
    run = (record or {}).get("last_run") or {}
    exe = (record or {}).get("executable")
    if run.get("no_access"):
        return check(
            "service access", "fail",
            f"the service ({exe or 'its interpreter'}) cannot read chat.db: {run.get('error')}",
            access_hint(exe),
        )  # fmt: skip
    if live is None:
        return check(
            "service access", "warn", "a LaunchAgent is installed but the service is not running",
            "log out and in, or run `casper serve --install` again; its log is service.log in "
            "the data dir",
        )  # fmt: skip
    if run.get("outcome") in ("indexed", "up to date"):
        return check("service access", "ok", f"the service reads chat.db ({exe})")
    return check(
        "service access", "ok" if not run else "warn",
        f"the service ({exe}) has not read chat.db yet"
        + (f": {run.get('error')}" if run.get("error") else ""),
        run.get("hint"),
    )  # fmt: skip


def _fresh(cfg: Config) -> Freshness | None:
    try:
        store = Store.open(cfg.store_path, create=False)
    except Exception:  # noqa: BLE001 - the store check above reports a store that won't open
        return None
    try:
        return measure(cfg, store)
    except (IngestError, sqlite3.Error):
        return None
    finally:
        store.close()


def _last_run(record: dict[str, Any] | None, tz: tzinfo) -> str:
    run = (record or {}).get("last_run")
    if not run:
        return ""
    at = (iso(run["at"], tz) or "?")[:16].replace("T", " ")
    return f"; last auto-run {at} ({run['outcome']}) took {run['duration_s']:.2f} s"


def _mac() -> bool:
    return sys.platform == "darwin"


SERVER_PROBE_S = 5.0  # doctor waits this long at most for a model server to answer


def server_check(cfg: Config) -> Check:
    """The OpenAI-compatible server `llm_base_url` names: refused (a remote host without
    `allow_remote_llm`), answering (and what it serves), or not answering. One GET of its
    model list; no message text is sent."""
    name = "language model"
    try:
        url, local = llm_server(cfg.llm_base_url or "", allow_remote=cfg.allow_remote_llm)
    except CasperError as exc:
        return check(name, "fail", exc.message, exc.hint)
    model = "its only model" if cfg.llm_model == DEFAULT_LLM else cfg.llm_model
    where = f"{model} from the OpenAI-compatible server at {url}"
    try:
        engine = make_engine(replace(cfg, llm_timeout_s=min(cfg.llm_timeout_s, SERVER_PROBE_S)))
        probe = getattr(engine, "check", None)
        said = probe() if probe is not None else "built"
    except CasperError as exc:
        hint = exc.hint or "answers come from search alone until it answers"
        return check(name, "warn", f"{where}: {exc.message}", hint)
    if local:
        return check(name, "ok", f"{where}: {said}")
    return check(
        name, "warn",
        f"{where}: {said}; it is NOT this machine: questions and the messages found for them "
        "leave it (allow_remote_llm = true)",
        "run the model server on this Mac and remove allow_remote_llm to keep them here",
    )  # fmt: skip
