"""`casper serve`: run, stop or inspect the background service for a data dir."""

from __future__ import annotations

import logging
from datetime import tzinfo
from pathlib import Path
from typing import Annotated, Any

import typer

from casper.cli.base import Home, Json, Verbose, _stderr, app, config, guarded, print_json
from casper.dates.zones import iso, local_tz

# inside the commands: `casper --help` imports every command module; the work loads when it runs


@app.command()
@guarded
def serve(
    stop: Annotated[bool, typer.Option("--stop", help="stop the running service")] = False,
    status: Annotated[
        bool, typer.Option("--status", help="pid, uptime, memory, what is loaded")
    ] = False,
    idle_minutes: Annotated[
        float | None,
        typer.Option(
            "--idle-minutes", help="exit after this long idle; 0: never (default: config)"
        ),
    ] = None,
    no_auto_index: Annotated[
        bool,
        typer.Option("--no-auto-index", help="don't index new messages as they arrive"),
    ] = False,
    install: Annotated[
        bool,
        typer.Option("--install", help="start the service at login (macOS LaunchAgent)"),
    ] = False,
    uninstall: Annotated[
        bool, typer.Option("--uninstall", help="remove the LaunchAgent --install wrote")
    ] = False,
    home: Home = None,
    json: Json = False,
    verbose: Verbose = False,
) -> None:
    """Keep the index current and the models warm for search/ask/chat/show/stats/contacts
    (foreground).

    Those commands start it in the background by themselves; CASPER_SERVICE=0 or
    --no-service runs them in-process instead. While it runs it indexes new messages as they
    arrive in chat.db (auto_index in config.toml; --no-auto-index).
    """
    from casper.service import client

    cfg = config(home)
    if install or uninstall:
        _launch_agent(cfg.data_dir, install=install)
        return
    if status:
        doc = client.status(cfg.data_dir)
        if json:
            print_json(doc)
        else:
            _print_status(doc, local_tz(cfg.timezone))
        return
    if stop:
        pid = client.stop(cfg.data_dir)
        _stderr().print("no casper service was running" if pid is None else f"stopped (pid {pid})")
        return

    from casper.service.server import AlreadyRunning
    from casper.service.server import serve as run_service

    logging.getLogger("casper.service").setLevel(logging.DEBUG if verbose else logging.INFO)
    try:
        run_service(cfg.data_dir, idle_minutes=idle_minutes, auto_index=not no_auto_index)
    except AlreadyRunning as exc:
        from casper.cli.guard import say_lines

        say_lines(exc.message, exc.hint)
        raise typer.Exit(client.ALREADY_RUNNING_EXIT) from None


def _print_status(doc: dict[str, Any], tz: tzinfo) -> None:
    from casper.app.freshness import duration_text
    from casper.cli.render import console
    from casper.service import protocol

    c = console()
    if not doc.get("running"):
        c.print(f"casper service: not running ({doc.get('data_dir')})")
        return
    if "pid" not in doc:
        c.print(f"casper service: running another version ({doc.get('version')})")
        return
    loaded = doc["loaded"]
    embedder = loaded["embedder"]
    if embedder and loaded.get("embedder_on"):
        embedder += f" ({loaded['embedder_on']})"
    models = [m for m in (embedder, loaded["reranker"], *loaded["engines"]) if m]
    c.print(f"casper service: running, pid {doc['pid']}, up {duration_text(doc['uptime_s'])}")
    c.print(
        f"  memory {doc['rss_mb']} MB · requests {doc['requests']} · in flight {doc['inflight']}"
    )
    c.print(f"  loaded: {', '.join(models) or 'nothing yet'}; index open: {loaded['index']}")
    c.print(f"  index generation {doc['index_generation']} · socket {doc['socket']}")
    for line in auto_index_lines(doc.get("auto_index") or {}, tz):
        c.print("  " + line, soft_wrap=True, markup=True)  # auto_index_lines escapes its data
    if doc["version"] != protocol.build_id():
        c.print("  [yellow]another version than this casper: it restarts on the next command[/]",
                markup=True)  # fmt: skip


def auto_index_lines(auto: dict[str, Any], tz: tzinfo) -> list[str]:
    """The auto-index part of `casper serve --status`: on/off and its state, how current the
    index is (newest message indexed, lag), the last run and its duration, failures."""
    from rich.markup import escape

    from casper.app.freshness import duration_text

    if not auto.get("enabled"):
        return [f"auto-index: off ({auto.get('off_reason') or 'off'})"]
    through = (iso(auto.get("indexed_through"), tz) or "?")[:19].replace("T", " ")
    lag = duration_text(auto["lag_s"])
    lines = [f"auto-index: {auto['state']} · indexed through {through} · lag {lag}"]
    run = auto.get("last_run")
    if run:
        at = (iso(run["at"], tz) or "?")[11:19]
        what = run["outcome"] + (f", {run['messages_new']} new" if run["messages_new"] else "")
        lines.append(f"  last run {at} ({what}) took {run['duration_s']:.2f} s")
    if auto.get("failures"):
        retry = auto.get("retry_in_s")
        when = f"; next try in {duration_text(retry)}" if retry is not None else ""
        error = escape(str((run or {}).get("error") or "?"))
        lines.append(f"  [yellow]failing ({auto['failures']} in a row{when}): {error}[/]")
        if run and run.get("hint"):
            lines.append(f"  [dim]hint: {escape(run['hint'])}[/]")
    return lines


def _launch_agent(home: Path, *, install: bool) -> None:
    """--install: stop a running service (the agent's takes over), write and load the agent;
    --uninstall: unload and remove it."""
    from casper.service import client, launchagent

    err = _stderr()
    if install:
        launchagent.require_macos("--install")
        client.stop(home)
        path = launchagent.install(home)
        err.print(f"installed {path}: the casper service starts at login (and now)")
        return
    gone = launchagent.uninstall(home)
    err.print(f"removed {gone}" if gone else "no casper LaunchAgent was installed for this home")
