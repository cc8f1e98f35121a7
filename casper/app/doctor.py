"""`casper doctor`: can we read chat.db and the AddressBook, and does every file of the data dir
still read?

Each check is its own function returning {name, status ok|warn|fail, detail, hint}
(casper.app.doctor_check); a check never raises (what it could not read is its finding). The
store and the index are probed for real (casper.store.health, casper.index.health): the store
passes SQLite's quick_check, every data file of the index is read, each search leg answers a
query, a vector is read back.

Imports: ingest, casper.store, casper.index, casper.indexer, casper.config, casper.datadir,
casper.app (the doctor_* checks, optional_models). Returns plain dicts; the CLI renders them (and
exits 1 when one failed).
"""

from __future__ import annotations

import logging
import os
import platform
import sqlite3
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import ingest
from casper import datadir
from casper.app.doctor_check import check
from casper.app.doctor_privacy import privacy_checks
from casper.app.doctor_schema import schema_checks
from casper.app.doctor_service import server_check, service_checks
from casper.app.doctor_trust import trust_checks
from casper.app.documents import Check, DoctorCounts, DoctorReport
from casper.app.optional_models import engine_notice, model_probe, reranker_notice
from casper.config import Config
from casper.dates.zones import iso, local_tz
from casper.errors import ConfigError, DataDamaged
from casper.index.chunk_index import vector_status_at
from casper.index.health import manifest_damage, probe
from casper.indexer import identity
from casper.indexer.exclude import counter
from casper.indexer.reconcile import last_reconciled
from casper.store.db import Store
from casper.store.health import sqlite_problem
from ingest.errors import IngestError, full_disk_access_hint

REBUILD_HINT = DataDamaged.default_hint


@contextmanager
def _quiet(logger: str) -> Iterator[None]:
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def run_checks(
    cfg: Config,
    service: dict[str, Any] | None = None,
    login_agent: bool = False,
    refused: Sequence[ConfigError] = (),
) -> DoctorReport:
    """Every check as {name, status ok|warn|fail, detail, hint}, plus raw counts. `service`:
    the running service's status ({"running": False} when none), for the auto-index and service
    access lines (casper.app.doctor_service); `login_agent`: a LaunchAgent starts it at login;
    `refused`: what casper.config.checked_config refused in config.toml (those settings are at
    their defaults for the other checks)."""
    counts: DoctorCounts = {}
    checks = [_python_check(), *_config_checks(cfg, refused)]
    checks += [_chat_db_check(cfg, counts), _contacts_check(cfg)]
    with _quiet("ingest"):  # the chat.db and contacts checks say what does not open
        checks += schema_checks(cfg, counts)  # what was skipped to read Apple-only syntax
    if cfg.store_path.exists():
        checks.append(_data_dir_check(cfg))
        checks += _store_checks(cfg, counts)
        checks += _history_checks(cfg)
        checks.append(_index_check(cfg, counts))
        checks += _index_probe_checks(cfg)
    else:
        checks.append(
            check("store", "warn", f"nothing indexed in {cfg.data_dir}", "run `casper index`")
        )
    checks += _small_file_checks(cfg)
    checks += privacy_checks(cfg)  # the ceiling and who is kept out (casper.app.doctor_privacy)
    checks.append(_engine_check(cfg))
    checks.append(_reranker_check(cfg))
    checks += trust_checks(cfg)  # telemetry off, the model cache owner-only and unchanged
    if service is not None:
        checks.extend(service_checks(cfg, service, login_agent))
    return {"checks": checks, "counts": counts}


def failed(report: DoctorReport) -> bool:
    """True when a check failed (`casper doctor` then exits 1, with --json too)."""
    return any(check["status"] == "fail" for check in report["checks"])


def _python_check() -> Check:
    detail = f"{platform.python_version()} on {platform.system()} {platform.machine()}"
    return check("python", "ok", detail)


def _config_checks(cfg: Config, refused: Sequence[ConfigError]) -> list[Check]:
    """config.toml: every value is one its setting accepts (one line per refused value)."""
    if refused:
        return [check("config", "fail", exc.message, exc.hint) for exc in refused]
    path = cfg.data_dir / "config.toml"
    detail = f"{path} reads, every value accepted" if path.exists() else "defaults (no file)"
    return [check("config", "ok", detail)]


def _chat_db_check(cfg: Config, counts: DoctorCounts) -> Check:
    try:
        conn = ingest.open_chat_db(cfg.chat_db)
        caps = ingest.Capabilities.probe(conn)
        state = ingest.snapshot_state(conn, caps)
        conn.close()
    except IngestError as exc:
        return check("chat.db", "fail", exc.message, exc.hint)
    counts["chat_db_rows"] = state.message_count
    rows = f"{state.message_count:,} rows (messages, reactions, events)"
    return check("chat.db", "ok", f"{cfg.chat_db} readable, {rows}")


def _contacts_check(cfg: Config) -> Check:
    with _quiet("ingest"):  # the check says it, with the fix
        contacts = ingest.load_contacts(cfg.contacts)
    if contacts:
        return check("contacts", "ok", f"{len(contacts)} cards at {cfg.contacts}")
    named = 0
    if cfg.store_path.exists():
        try:
            store = Store.open(cfg.store_path)
            named = store.named_people()
            store.close()
        except sqlite3.Error:
            pass  # the store's own check says what is wrong with it
    detail = f"no AddressBook cards at {cfg.contacts}" + (
        f"; the index has {named} names from one" if named else ""
    )
    hint = (
        f"{full_disk_access_hint()}; or pass `casper index --contacts PATH` "
        "(remembered); until then names show as handles"
    )
    return check("contacts", "fail" if named else "warn", detail, hint)


def _data_dir_check(cfg: Config) -> Check:
    mode = stat.S_IMODE(os.stat(cfg.data_dir).st_mode)
    hint = None if mode == 0o700 else f"chmod 700 {cfg.data_dir}"
    return check("data dir", "ok" if mode == 0o700 else "warn", f"{cfg.data_dir} mode {mode:o}",
                  hint)  # fmt: skip


def _store_checks(cfg: Config, counts: DoctorCounts) -> list[Check]:
    """The store passes quick_check, then its counts and coverage."""
    problem = sqlite_problem(cfg.store_path)
    if problem is not None:
        damaged = DataDamaged("the store", cfg.store_path, problem)
        return [check("store", "fail", damaged.message, damaged.hint)]
    try:
        store = Store.open(cfg.store_path)
    except sqlite3.Error as exc:
        return [check("store", "fail", f"{cfg.store_path} does not open: {exc}", REBUILD_HINT)]
    try:
        total = store.messages_total()  # counted as `casper index` counts them
        failures = int(store.meta_float("decode_failures"))
        first, last = store.coverage()
        undated = store.undated_count()
        people = len(store.people())
    except sqlite3.Error as exc:
        return [check("store", "fail", f"{cfg.store_path} does not read: {exc}", REBUILD_HINT)]
    finally:
        store.close()
    if not total and not people:
        # an empty store (an earlier version kept the one a failed first run made): not green
        empty = f"nothing indexed yet in {cfg.data_dir} (an empty store: no run read into it)"
        return [check("store", "warn", empty, "run `casper index` (see the chat.db line)")]
    tz = local_tz(cfg.timezone)
    counts.update({"messages": total, "undated": undated, "people": people,
                   "decode_failures": failures})  # fmt: skip
    rate = 1 - failures / total if total else 1.0
    detail = (
        f"{total:,} messages" + (f" ({undated:,} without a date)" if undated else "")
        + f", {people:,} people, decode rate {rate:.2%}"
    )  # fmt: skip
    counts["coverage"] = {"first": iso(first, tz), "last": iso(last, tz)}
    span = f"{(iso(first, tz) or '?')[:10]} → {(iso(last, tz) or '?')[:10]}"
    return [check("store", "ok", detail), check("coverage", "ok", span)]


def _history_checks(cfg: Config) -> list[Check]:
    """Does chat.db still hold the history the store was read from (by ROWID and guid,
    casper.indexer.identity), and what the last reconciliation of a rewritten one did."""
    try:
        store = Store.open(cfg.store_path)
    except (sqlite3.Error, OSError):
        return []  # the store's own check names it
    try:
        last = last_reconciled(store)
        watermark = int(store.meta_float("watermark_rowid"))
        conn = ingest.open_chat_db(cfg.chat_db, busy_timeout_s=1.0)
        try:
            caps = ingest.Capabilities.probe(conn)
            state = ingest.snapshot_state(conn, caps)
            doubt = identity.suspect(store, conn, state, watermark)
            kept_out = counter(conn, caps, cfg.contacts, cfg.exclude) if doubt else None
            compared = identity.compare(store, conn, caps, watermark, kept_out) if doubt else None
        finally:
            conn.close()
    except (IngestError, sqlite3.Error, OSError):
        return []  # chat.db's line (or the store's) says what does not read
    finally:
        store.close()
    checks = []
    hint = "run `casper index` (a running service does it by itself within seconds)"
    if compared is not None and compared.rewritten:
        checks.append(check(
            "history", "fail",
            f"chat.db's history was rewritten since the last index ({compared.rewritten}): "
            "search may show messages it no longer holds and miss new ones", hint,
        ))  # fmt: skip
    elif compared is not None and (compared.vanished or compared.vanished_reactions):
        gone = len(compared.vanished) + len(compared.vanished_reactions)
        checks.append(check("history", "warn", f"{gone} rows deleted from chat.db are still "
                             "in the index", hint))  # fmt: skip
    if last is not None:
        when = iso(last.get("at"), local_tz(cfg.timezone)) or "?"
        checks.append(check(
            "history rewritten", "ok",
            f"{last.get('reason')}; reconciled {when[:16].replace('T', ' ')}: "
            f"{last.get('vanished')} messages gone, {last.get('new')} new, "
            f"{last.get('renumbered')} renumbered, {last.get('kept')} kept; "
            f"{last.get('vectors_reused', 0)} vectors reused, "
            f"{last.get('vectors_embedded', 0)} embedded",
        ))  # fmt: skip
    return checks


def _small_file_checks(cfg: Config) -> list[Check]:
    """The data dir's small files (notices, records, histories, the service's and the index's
    lock, pid and log files): one ✗ line for each that cannot be used, nothing when all can."""
    if not cfg.data_dir.is_dir():
        return []
    return [
        check(
            "data files",
            "fail",
            f"{p.file.what} is damaged: {p.path} ({p.problem})",
            "run `casper index --rebuild`: it moves the file aside (kept, renamed "
            "*.damaged-<time>); a new one is written when needed",
        )  # fmt: skip
        for p in datadir.problems(cfg.data_dir)
    ]


def _engine_check(cfg: Config) -> Check:
    """The chat model without loading it: known missing (the notice `ask` said once, with the
    whole reason), absent from the local cache, or where it would load from; or, with
    `llm_base_url`, that server (casper.app.doctor_service.server_check)."""
    if cfg.llm_base_url:
        return server_check(cfg)

    model = cfg.llm_model
    cached = model_probe(model)
    notice = engine_notice(cfg, model)
    if notice is not None and notice.get("probe") == cached:
        since = notice.get("since", "?")
        return check(
            "language model", "warn", f"unavailable since {since}: {notice['reason']}",
            notice.get("hint") or None,
        )  # fmt: skip
    if cached.endswith(":absent"):
        return check(
            "language model", "warn", f"{model} is not in the local model cache",
            "run `casper pull` once while online (answers come from search alone until then)",
        )  # fmt: skip
    return check("language model", "ok", f"{model} (found locally)")


def _reranker_check(cfg: Config) -> Check:
    """The reranker's state without loading it: off, known missing (the notice search said once),
    or where it would load from."""
    if not cfg.rerank or not cfg.rerank_model:
        return check("reranker", "ok", "off (rerank = false)")
    hint = "run `casper pull` once while online, or set rerank = false in config.toml"
    notice = reranker_notice(cfg)
    if notice is not None and notice.get("probe") == model_probe(cfg.rerank_model):
        since = notice.get("since", "?")
        return check("reranker", "warn", f"unavailable since {since}: {notice['reason']}", hint)
    if model_probe(cfg.rerank_model).endswith(":absent"):
        return check("reranker", "warn", f"{cfg.rerank_model} is not in the local cache", hint)
    return check("reranker", "ok", f"{cfg.rerank_model} (found locally)")


def _index_check(cfg: Config, counts: DoctorCounts) -> Check:
    """Present, and how much of it is searchable semantically (vectors_done / vectors_total)."""
    if not cfg.index_dir.exists():
        return check("search index", "warn", "missing", "run `casper index`")

    if manifest_damage(cfg.index_dir) is not None:  # not "from an older version"
        return check("search index", "fail", "does not read (see below)", REBUILD_HINT)

    try:
        status = vector_status_at(cfg.index_dir)
    except (sqlite3.Error, OSError, RuntimeError, ValueError, DataDamaged):
        # what does not read is named by the probes below
        return check("search index", "fail", "does not read (see below)", REBUILD_HINT)
    if status is None:
        return check(
            "search index", "warn", "present but from an older version",
            "run `casper index --rebuild`",
        )  # fmt: skip
    done, total = status
    counts.update({"vectors_done": done, "vectors_total": total})
    if done < total:
        share = int(100 * done / total)
        return check(
            "search index", "warn",
            f"{total:,} chunks, semantic index {share} % built ({done:,}/{total:,} vectors)",
            "run `casper index` to embed the rest (it continues where it stopped)",
        )  # fmt: skip
    return check("search index", "ok", f"{total:,} chunks, all with vectors")


def _index_probe_checks(cfg: Config) -> list[Check]:
    """Every file of the index read for real: one ✗ line per damaged part, else one ✓ line
    listing what was read."""
    probes = probe(cfg.index_dir)
    if not probes:
        return []
    bad = [p.damage for p in probes if p.damage is not None]
    if bad:
        return [check("index files", "fail", d.error().message, REBUILD_HINT) for d in bad]
    read = ", ".join(f"{p.name} ({p.detail})" for p in probes)
    return [check("index files", "ok", f"all read: {read}")]
