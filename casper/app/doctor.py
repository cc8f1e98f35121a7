"""`casper doctor`: can we read chat.db and the AddressBook, and how healthy is the index?

Imports: ingest, casper.store, casper.config. Returns plain dicts; the CLI renders them.
"""

from __future__ import annotations

import logging
import os
import platform
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import ingest
from casper.config import Config
from casper.dates.zones import iso, local_tz
from casper.store.db import Store
from ingest.errors import IngestError, full_disk_access_hint


@contextmanager
def _quiet(logger: str) -> Iterator[None]:
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _check(name: str, status: str, detail: str, hint: str | None = None) -> dict[str, Any]:
    return {"name": name, "status": status, "detail": detail, "hint": hint}


def run_checks(cfg: Config) -> dict[str, Any]:
    """Every check as {name, status ok|warn|fail, detail, hint}, plus raw counts."""
    checks: list[dict[str, Any]] = []
    counts: dict[str, Any] = {}
    checks.append(
        _check(
            "python",
            "ok",
            f"{platform.python_version()} on {platform.system()} {platform.machine()}",
        )
    )
    try:
        conn = ingest.open_chat_db(cfg.chat_db)
        caps = ingest.Capabilities.probe(conn)
        state = ingest.snapshot_state(conn, caps)
        conn.close()
        counts["chat_db_rows"] = state.message_count
        checks.append(
            _check("chat.db", "ok", f"{cfg.chat_db} readable, {state.message_count} rows")
        )
    except IngestError as exc:
        checks.append(_check("chat.db", "fail", exc.message, exc.hint))
    with _quiet("ingest"):  # the check below says it, with the fix
        contacts = ingest.load_contacts(cfg.contacts)
    named = 0
    if not contacts and cfg.store_path.exists():
        store = Store.open(cfg.store_path)
        named = store.named_people()
        store.close()
    checks.append(
        _check(
            "contacts",
            "ok" if contacts else "fail" if named else "warn",
            f"{len(contacts)} cards at {cfg.contacts}"
            if contacts
            else f"no AddressBook cards at {cfg.contacts}"
            + (f"; the index has {named} names from one" if named else ""),
            None
            if contacts
            else f"{full_disk_access_hint()}; or pass `casper index --contacts PATH` "
            "(remembered); until then names show as handles",
        )
    )
    if cfg.store_path.exists():
        mode = stat.S_IMODE(os.stat(cfg.data_dir).st_mode)
        checks.append(
            _check(
                "data dir",
                "ok" if mode == 0o700 else "warn",
                f"{cfg.data_dir} mode {mode:o}",
                None if mode == 0o700 else f"chmod 700 {cfg.data_dir}",
            )
        )
        store = Store.open(cfg.store_path)
        total = store.messages_total()  # counted as `casper index` counts them
        failures = int(store.meta_float("decode_failures"))
        first, last = store.coverage()
        tz = local_tz(cfg.timezone)
        undated = store.undated_count()
        counts.update(
            messages=total, undated=undated, people=len(store.people()), decode_failures=failures
        )
        rate = 1 - failures / total if total else 1.0
        checks.append(
            _check(
                "store",
                "ok",
                f"{total} messages"
                + (f" ({undated} without a date)" if undated else "")
                + f", {counts['people']} people, decode rate {rate:.2%}",
            )
        )
        checks.append(
            _check(
                "coverage", "ok", f"{(iso(first, tz) or '?')[:10]} → {(iso(last, tz) or '?')[:10]}"
            )
        )
        counts["coverage"] = {"first": iso(first, tz), "last": iso(last, tz)}
        checks.append(_index_check(cfg, counts))
        store.close()
    else:
        checks.append(
            _check("store", "warn", f"nothing indexed in {cfg.data_dir}", "run `casper index`")
        )
    checks.append(_engine_check(cfg))
    checks.append(_reranker_check(cfg))
    return {"checks": checks, "counts": counts}


def _engine_check(cfg: Config) -> dict[str, Any]:
    """The chat model without loading it: known missing (the notice `ask` said once, with the
    whole reason), absent from the local cache, or where it would load from."""
    from casper.app.optional_models import engine_notice, model_probe

    model = cfg.llm_model
    probe = model_probe(model)
    notice = engine_notice(cfg, model)
    if notice is not None and notice.get("probe") == probe:
        since = notice.get("since", "?")
        return _check(
            "language model", "warn", f"unavailable since {since}: {notice['reason']}",
            notice.get("hint") or None,
        )  # fmt: skip
    if probe.endswith(":absent"):
        return _check(
            "language model", "warn", f"{model} is not in the local model cache",
            "run `casper pull` once while online (answers come from search alone until then)",
        )  # fmt: skip
    return _check("language model", "ok", f"{model} (found locally)")


def _reranker_check(cfg: Config) -> dict[str, Any]:
    """The reranker's state without loading it: off, known missing (the notice search said once),
    or where it would load from."""
    from casper.app.optional_models import model_probe, reranker_notice

    if not cfg.rerank or not cfg.rerank_model:
        return _check("reranker", "ok", "off (rerank = false)")
    hint = "run `casper pull` once while online, or set rerank = false in config.toml"
    notice = reranker_notice(cfg)
    if notice is not None and notice.get("probe") == model_probe(cfg.rerank_model):
        since = notice.get("since", "?")
        return _check("reranker", "warn", f"unavailable since {since}: {notice['reason']}", hint)
    if model_probe(cfg.rerank_model).endswith(":absent"):
        return _check("reranker", "warn", f"{cfg.rerank_model} is not in the local cache", hint)
    return _check("reranker", "ok", f"{cfg.rerank_model} (found locally)")


def _index_check(cfg: Config, counts: dict[str, Any]) -> dict[str, Any]:
    """Present, and how much of it is searchable semantically (vectors_done / vectors_total)."""
    if not cfg.index_dir.exists():
        return _check("search index", "warn", "missing", "run `casper index`")
    from casper.index.chunk_index import vector_status_at

    status = vector_status_at(cfg.index_dir)
    if status is None:
        return _check(
            "search index", "warn", "present but from an older version",
            "run `casper index --rebuild`",
        )  # fmt: skip
    done, total = status
    counts.update(vectors_done=done, vectors_total=total)
    if done < total:
        share = int(100 * done / total)
        return _check(
            "search index", "warn",
            f"{total} chunks, semantic index {share} % built ({done}/{total} vectors)",
            "run `casper index` to embed the rest (it continues where it stopped)",
        )  # fmt: skip
    return _check("search index", "ok", f"{total} chunks, all with vectors")
