"""`casper serve`: run, stop or inspect the background service for a data dir."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from casper.cli.base import Home, Json, Verbose, _stderr, app, config, guarded, print_json


@app.command()
@guarded
def serve(
    stop: Annotated[bool, typer.Option("--stop", help="stop the running service")] = False,
    status: Annotated[
        bool, typer.Option("--status", help="pid, uptime, memory, what is loaded")
    ] = False,
    idle_minutes: Annotated[
        float | None,
        typer.Option("--idle-minutes", help="exit after this long idle (default: config)"),
    ] = None,
    home: Home = None,
    json: Json = False,
    verbose: Verbose = False,
) -> None:
    """Keep the index and models warm for search/ask/chat/show/stats/contacts (foreground).

    Those commands start it in the background by themselves; CASPER_SERVICE=0 or
    --no-service runs them in-process instead.
    """
    from casper.service import client

    cfg = config(home)
    if status:
        doc = client.status(cfg.data_dir)
        if json:
            print_json(doc)
        else:
            _print_status(doc)
        return
    if stop:
        pid = client.stop(cfg.data_dir)
        _stderr().print("no casper service was running" if pid is None else f"stopped (pid {pid})")
        return
    import logging

    from casper.service.server import AlreadyRunning
    from casper.service.server import serve as run_service

    logging.getLogger("casper.service").setLevel(logging.DEBUG if verbose else logging.INFO)
    try:
        run_service(cfg.data_dir, idle_minutes=idle_minutes)
    except AlreadyRunning as exc:
        err = _stderr()
        err.print(f"[red]error:[/] {exc.message}", soft_wrap=True)
        err.print(f"[yellow]hint:[/] {exc.hint}", soft_wrap=True)
        raise typer.Exit(client.ALREADY_RUNNING_EXIT) from None


def _print_status(doc: dict[str, Any]) -> None:
    from rich.console import Console

    from casper.service import protocol

    c = Console()
    if not doc.get("running"):
        c.print(f"casper service: not running ({doc.get('data_dir')})")
        return
    if "pid" not in doc:
        c.print(f"casper service: running another version ({doc.get('version')})")
        return
    loaded = doc["loaded"]
    models = [m for m in (loaded["embedder"], loaded["reranker"], *loaded["engines"]) if m]
    c.print(f"casper service: running, pid {doc['pid']}, up {_dur(doc['uptime_s'])}")
    c.print(
        f"  memory {doc['rss_mb']} MB · requests {doc['requests']} · in flight {doc['inflight']}"
    )
    c.print(f"  loaded: {', '.join(models) or 'nothing yet'}; index open: {loaded['index']}")
    c.print(f"  index generation {doc['index_generation']} · socket {doc['socket']}")
    if doc["version"] != protocol.build_id():
        c.print("  [yellow]another version than this casper: it restarts on the next command[/]")


def _dur(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
