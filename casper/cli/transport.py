"""Where a command's work runs: in the warm background service (default) or in this process.

`CASPER_SERVICE=0` or `--no-service` run in-process. When the service can't be reached or
started, or dies mid-request, the command runs here instead (one dim line on stderr says so),
so a user never waits on a broken service. Only stdlib (and rich, lazily) on the service path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast, overload

from casper.cli.guard import stderr_console as _stderr
from casper.config import Config

if TYPE_CHECKING:
    from casper.app.documents import (
        AskDoc,
        ContactJson,
        Document,
        SearchDoc,
        ShowDoc,
        StatsDoc,
        ToolDoc,
    )
    from casper.app.requests import (
        AskRequest,
        ContactsRequest,
        Request,
        SearchRequest,
        ShowRequest,
        StatsRequest,
        ToolRequest,
    )
    from casper.app.runtime import Runtime
    from casper.events import Emit, Event
    from casper.service.client import Sent

# inside: a request loads only the side it runs on (the service client or the in-process handlers)

_OFF = {"0", "false", "no", "off"}


def service_enabled(no_service: bool = False) -> bool:
    return not no_service and os.environ.get("CASPER_SERVICE", "1").strip().lower() not in _OFF


def print_notice(event: Event) -> None:
    """The default event sink: notices on stderr; progress events are for richer views."""
    if event["event"] != "notice":
        return
    from rich.markup import escape

    err = _stderr()
    # one line each (the terminal wraps it, not us), in the `notice:` / `hint:` shape
    err.print(f"[yellow]notice:[/] {escape(event['text'])}", soft_wrap=True, markup=True)
    hint = event.get("hint")
    if hint:
        err.print(f"[dim]hint: {escape(hint)}[/]", soft_wrap=True, markup=True)


class Session:
    """Runs commands for one CLI invocation or one `casper chat` session.

    With the service on, each command is a request to it; if it can't be used (or dies), the
    session falls back to its own Runtime for the rest of its life, so models load once; like
    the service, it reopens the data when a `casper index` run published since the last command.
    """

    def __init__(self, cfg: Config, *, no_service: bool = False) -> None:
        self.cfg = cfg
        self.use_service = service_enabled(no_service)
        self.runtime: Runtime | None = None

    def execute(
        self, cmd: str, args: Mapping[str, object], on_event: Emit = print_notice
    ) -> Document:
        """Check one command's arguments (casper.app.requests), then `answer` it."""
        from casper.app.requests import parse

        return self.answer(parse(cmd, args), on_event)

    # each request's document (casper.app.handlers answers it, here or in the service)
    @overload
    def answer(
        self, request: SearchRequest, on_event: Emit = ..., sent: Sent | None = ...
    ) -> SearchDoc: ...
    @overload
    def answer(
        self, request: ContactsRequest, on_event: Emit = ..., sent: Sent | None = ...
    ) -> list[ContactJson]: ...
    @overload
    def answer(
        self, request: StatsRequest, on_event: Emit = ..., sent: Sent | None = ...
    ) -> StatsDoc: ...
    @overload
    def answer(
        self, request: ShowRequest, on_event: Emit = ..., sent: Sent | None = ...
    ) -> ShowDoc: ...
    @overload
    def answer(
        self, request: AskRequest, on_event: Emit = ..., sent: Sent | None = ...
    ) -> AskDoc: ...
    @overload
    def answer(
        self, request: ToolRequest, on_event: Emit = ..., sent: Sent | None = ...
    ) -> ToolDoc: ...
    @overload
    def answer(
        self, request: Request, on_event: Emit = ..., sent: Sent | None = ...
    ) -> Document: ...

    def answer(
        self, request: Request, on_event: Emit = print_notice, sent: Sent | None = None
    ) -> Document:
        """Run one checked request and return its `--json` document, wherever it runs. A data
        dir with nothing indexed is said here, before a service is started for it. `sent`: the
        same request, already sent to the running service (the thin path); its answer is used
        when it is this request, else it is dropped unread."""
        if not self.cfg.store_path.exists() or (not self._service_up() and not _indexed(self.cfg)):
            from casper.cli.invocation import missing_index

            if sent is not None:
                sent.close()
            _check_dates(self.cfg, request)  # a mistyped date is said first
            raise missing_index(self.cfg)
        if self.use_service:
            from casper.app.requests import wire
            from casper.service import client

            cmd, args = wire(request)
            try:
                # the document the service's handlers.answer made for this request
                if sent is not None and sent.matches(cmd, args):
                    return cast("Document", sent.answer(on_event))
                if sent is not None:
                    sent.close()  # another request than the one sent: its answer is not read
                doc = client.call(self.cfg.data_dir, cmd, args, on_event=on_event)
                return cast("Document", doc)
            except client.ServiceUnavailable as exc:
                _say(f"{exc}; running in this process")
            except client.ServiceLost as exc:
                _say(f"{exc}; running it again in this process")
            self.use_service = False
        from casper.app import handlers
        from casper.app.runtime import Runtime

        if self.runtime is None:
            self.runtime = Runtime(self.cfg)
        else:
            self.runtime.refresh()  # a long `casper chat` follows `casper index` runs
        return handlers.answer(self.runtime, request, emit=on_event)

    def _service_up(self) -> bool:
        """A service already answers (its socket is there): what it serves was indexed."""
        if not self.use_service:
            return False
        from casper.service import protocol

        return protocol.socket_path(self.cfg.data_dir).exists()


def _indexed(cfg: Config) -> bool:
    """The store holds a history an index run read (a first run that failed before reading
    anything, in an earlier version, left an empty one): asked before a service is started
    for it or data is opened here, never on the way to a running service."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"{cfg.store_path.absolute().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute(
                "SELECT 1 FROM meta WHERE key IN ('source', 'watermark_rowid') "
                "UNION ALL SELECT 1 FROM messages LIMIT 1"
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return True  # a store that does not read: the command names the damage
    return row is not None


def execute(
    cmd: str,
    args: Mapping[str, object],
    cfg: Config,
    *,
    no_service: bool = False,
    on_event: Emit = print_notice,
) -> Document:
    """One command, once: through the service unless it is switched off or unusable."""
    return Session(cfg, no_service=no_service).execute(cmd, args, on_event)


def _check_dates(cfg: Config, request: Request) -> None:
    """The check a handler makes before it opens the data: the request's dates."""
    from casper.dates.ranges import date_range
    from casper.dates.zones import local_tz

    since, until = getattr(request, "since", None), getattr(request, "until", None)
    if since or until:
        date_range(since, until, local_tz(cfg.timezone), locale=cfg.locale)


def _say(text: str) -> None:
    from rich.text import Text  # rich loads when something is printed

    _stderr().print(Text(text, style="dim"), soft_wrap=True)
