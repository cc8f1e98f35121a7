"""`casper doctor`: environment and data health, each check with its status and a hint."""

from __future__ import annotations

import typer

from casper.cli.base import Home, Json, Verbose, app, guarded, print_json
from casper.config import checked_config

# inside the commands: `casper --help` imports every command module; the work loads when it runs


@app.command()
@guarded
def doctor(home: Home = None, json: Json = False, verbose: Verbose = False) -> None:
    """Environment and data health: chat.db access, counts, decode rate, coverage."""
    from casper.app.doctor import failed, run_checks
    from casper.service import client, launchagent

    # every value of config.toml checked; one that is refused is shown, the rest still run
    cfg, refused = checked_config(home)
    report = run_checks(
        cfg, client.status(cfg.data_dir), launchagent.installed(cfg.data_dir), refused
    )
    if json:
        print_json(report)
        if failed(report):
            raise typer.Exit(1)
        return
    from rich.markup import escape

    from casper.cli.render import console

    c = console()
    for check in report["checks"]:
        mark = {"ok": "[green]✓[/]", "warn": "[yellow]![/]", "fail": "[red]✗[/]"}[check["status"]]
        c.print(mark + f" {escape(check['name'])}: {escape(str(check['detail']))}", markup=True)
        hint = check.get("hint")
        if hint:
            c.print(f"   [dim]hint: {escape(hint)}[/]", markup=True)
    if failed(report):
        raise typer.Exit(1)
