"""`casper index` handed to the running service: the run happens in the service, with the
embedder it already holds (no model load in the command: 0.9 s instead of a minute under load,
docs/performance.md), its progress, notices and any wait for the index lock streamed back as
events the command shows as if it ran there.

It holds no data lock while it runs (its embedding calls take it batch by batch, as auto-index
runs do), so searches go on meanwhile.

Imports: casper.app.documents, casper.dates.zones, casper.errors, casper.service.autoindex; the
server's handler (its `answer` reports errors as for any request) and its Service (`svc`: its
locks, runtime, auto-index) arrive as arguments.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Protocol, cast

from casper.app.documents import index_json
from casper.dates.zones import local_tz
from casper.errors import BadRequest, CasperError
from casper.events import notice
from casper.service.autoindex import AutoIndexer

if TYPE_CHECKING:
    from casper.app.documents import IndexDoc
    from casper.events import Emit, HolderJson
    from casper.service.protocol import Frame


class Handler(Protocol):
    """The server's connection handler, as far as a hand-over uses it."""

    def send(self, frame: Frame) -> None: ...
    def send_error(self, exc: CasperError) -> None: ...
    def answer(self, svc: Any, cmd: str, produce: Callable[[], object]) -> None: ...


INDEX = "index"  # the request's name


def serve_index(handler: Handler, svc: Any, args: dict[str, object]) -> None:
    """Answer one `index` request on `handler`'s connection: events, then the result."""
    if args:
        handler.send_error(BadRequest(f"bad arguments for {INDEX}: it takes none"))
        return
    handler.answer(svc, INDEX, lambda: index_for_client(svc, handler.send))


def index_for_client(svc: Any, emit: Emit) -> IndexDoc:
    """The run (AutoIndexer.index_now; a service started with --no-auto-index runs it all the
    same), reported through `emit`; the `index --json` document, plus `ran_in`."""
    with svc.data_lock:
        cfg = svc.current_runtime().cfg
    auto = svc.auto if svc.auto is not None else AutoIndexer(svc, svc.home)
    report = auto.index_now(
        cfg,
        progress=lambda stage, done, total: emit(
            {"event": "progress", "stage": stage, "done": done, "total": total}
        ),
        announce=lambda text: emit(notice(text)),
        on_wait=lambda other: emit(
            # the lock's Holder as it is (its fields are HolderJson's, read back by the CLI)
            {"event": "waiting", "holder": cast("HolderJson", asdict(other)) if other else None}
        ),
    )
    return {**index_json(report, local_tz(cfg.timezone)), "ran_in": {"pid": os.getpid()}}
