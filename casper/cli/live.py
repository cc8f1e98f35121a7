"""`casper ask` while it works: renders the agent's event stream on stderr.

Input is the events shared with the service (casper.events): `loading`, `step`, `tool`,
`tool_done`, `token`, `notice`, and at the end the `ask --json` document (`finish`). On a
terminal: a live area with the step, the elapsed time and the text streaming in; tool calls
stay printed above it with their arguments. The live area is transient: the final answer is
printed once, on stdout, by the caller. Off a terminal: one plain line per tool call. Always: a
usage footer at the end.

Imports: stdlib, casper.cli.render, rich (lazily); casper.app.documents and casper.events for
types only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from casper.cli.render import console as make_console

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.live import Live

    from casper.app.documents import AskDoc
    from casper.events import Event, NoticeEvent, ToolDoneEvent, ToolEvent

STREAM_LINES = 6  # the tail of the streamed text kept visible while the model writes


def fmt_args(arguments: Mapping[str, object], limit: int = 120) -> str:
    """`query="dentist" person="Priya"`: readable, one line, bounded."""
    parts = []
    for key, value in arguments.items():
        text = (
            json.dumps(value, ensure_ascii=False) if not isinstance(value, int | float) else value
        )
        parts.append(f"{key}={text}")
    line = " ".join(str(p) for p in parts)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def usage_footer(doc: AskDoc, wall_s: float | None = None) -> str:
    """`7.9 s · 2 model calls · 1 tool call · 1,180 prompt + 96 completion tokens · 12.3 tok/s
    · model` from the `ask --json` document (its `usage` block when the engine reported one).

    `wall_s`, when given, is the whole wait as the person saw it (loading included)."""
    usage = doc.get("usage") or {}
    parts = [f"{wall_s if wall_s is not None else doc.get('elapsed_s', 0):.1f} s"]
    if doc.get("load_s"):
        parts[0] += f" (loading {doc['load_s']:.1f} s)"
    # requests sent to the engine (the synthesis pass and retries included), not loop steps
    calls = usage.get("model_calls", usage.get("iterations", doc.get("iterations"))) or 0
    if doc.get("model"):
        parts.append(f"{calls} model call{'s' if calls != 1 else ''}")
    tools = len(doc.get("tool_calls") or [])
    if tools:
        parts.append(f"{tools} tool call{'s' if tools != 1 else ''}")
    tokens = doc.get("tokens") or {}
    prompt = usage.get("prompt_tokens", tokens.get("prompt", 0)) or 0
    completion = usage.get("completion_tokens", tokens.get("completion", 0)) or 0
    if prompt or completion:
        parts.append(f"{prompt:,} prompt + {completion:,} completion tokens")
    if usage.get("tokens_per_s"):
        parts.append(f"{usage['tokens_per_s']:.1f} tok/s")
    if usage.get("first_token_s"):
        parts.append(f"first token {usage['first_token_s']:.1f} s")
    parts.append(doc.get("model") or "no model (search only)")
    why = doc.get("why_not_reranked")
    if doc.get("reranked") is False and why and why not in QUIET_RERANK_REASONS:
        parts.append(f"not reranked: {why}")  # wanted, and could not run
    return " · ".join(parts)


# reasons a search ran without the reranker that the user chose or that change nothing
QUIET_RERANK_REASONS = ("no search ran", "--no-rerank", "rerank = false in config.toml")


class _Status:
    """The live area: spinner, what is happening, elapsed seconds, the streaming tail."""

    def __init__(self, started: float, clock: Callable[[], float]) -> None:
        from rich.spinner import Spinner

        self.started = started
        self.clock = clock
        self.doing = "starting …"
        self.stream = ""
        self.spinner = Spinner("dots", style="cyan")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.table import Table
        from rich.text import Text

        head = Table.grid(padding=(0, 1))
        head.add_row(
            self.spinner, Text(self.doing), Text(f"{self.clock() - self.started:.1f}s", "dim")
        )
        yield head
        if self.stream.strip():
            lines = self.stream.strip().splitlines()[-STREAM_LINES:]
            yield Text("\n".join(lines), style="dim")


class AskView:
    """Callable with one event at a time; `finish(doc)` prints the footer."""

    def __init__(
        self,
        *,
        console: Console | None = None,
        live: bool | None = None,
        quiet: bool = False,
        footer: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`footer`: the usage footer will be printed, and it says what the keyed "reranker"
        notice would (that the answer's searches ran without it, and why), every time."""
        self.console = console or make_console(stderr=True)
        self.live_enabled = self.console.is_terminal if live is None else live
        self.quiet = quiet
        self.footer = footer
        self.clock = clock
        self.started = clock()
        self.status = _Status(self.started, clock)
        self.live: Live | None = None

    def __call__(self, event: Event) -> None:
        if self.quiet and event["event"] != "notice":
            return
        if event["event"] == "notice":  # the model could not be loaded: said even off a terminal
            if not (self.footer and event.get("key") == "reranker"):
                self._print_notice(event)
        elif event["event"] == "loading":
            self.status.doing = f"loading {event['what']}".strip()
            self._start()
        elif event["event"] == "step" and event.get("final"):
            self.status.doing = "writing the answer"
            self.status.stream = ""
            self._start()
        elif event["event"] == "step":
            n = event["iteration"]
            self.status.doing = "thinking" if n == 1 else f"thinking (step {n})"
            self.status.stream = ""  # text before a tool call was the model narrating
            self._start()
        elif event["event"] == "tool":
            self._print_tool(event)
            self.status.doing = f"running {event['name']}"
            self.status.stream = ""
        elif event["event"] == "tool_done":
            self._print_done(event)
            self.status.doing = "reading results"
        elif event["event"] == "token":
            self.status.stream += event["text"]
            self.status.doing = "writing the answer"
            self._start()
        self._refresh()

    @contextmanager
    def doing(self, what: str) -> Iterator[None]:
        """Show `what` (a model loading…) with the clock running; quiet afterwards."""
        self.status.doing = what
        self._start()
        try:
            yield
        finally:
            self.stop()  # notices printed next (model unavailable) must not fight the live area

    def _print_tool(self, event: ToolEvent) -> None:
        from rich.text import Text

        line = Text("looking up " if event.get("prefetch") else "→ ", style="cyan")
        line.append(str(event.get("name", "?")), style="cyan bold")
        line.append(" " + fmt_args(event.get("arguments") or {}), style="dim")
        self.console.print(line)

    def _print_done(self, event: ToolDoneEvent) -> None:
        from rich.text import Text

        ok = event.get("ok", True)
        line = Text("  ✓ " if ok else "  ✗ ", style="green" if ok else "red")
        found = event.get("messages")
        note = f" · {found} message{'s' if found != 1 else ''}" if found is not None else ""
        elapsed = float(event.get("elapsed_s") or 0)
        line.append(f"{event.get('name', '?')} {elapsed:.2f}s{note}", "dim")
        self.console.print(line)

    def _print_notice(self, event: NoticeEvent) -> None:
        from rich.text import Text

        # one line each (the terminal wraps it, not us), as casper.cli.transport.print_notice
        line = Text("notice: ", "yellow") + Text(event["text"])
        self.console.print(line, soft_wrap=True)
        hint = event.get("hint")
        if hint:
            self.console.print(Text(f"hint: {hint}", "dim"), soft_wrap=True)

    def _start(self) -> None:
        if self.live is None and self.live_enabled and not self.quiet:
            from rich.live import Live

            self.live = Live(
                self.status,
                console=self.console,
                transient=True,
                refresh_per_second=8,
                vertical_overflow="crop",
            )
            self.live.start()

    def _refresh(self) -> None:
        if self.live is not None:
            self.live.refresh()

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def finish(self, doc: AskDoc) -> None:
        """The run is over: clear the live area and print the usage footer (stderr)."""
        from rich.text import Text

        self.stop()
        if not self.quiet:
            wall = max(self.clock() - self.started, float(doc.get("elapsed_s") or 0))
            # one line, as notices are: the terminal wraps it, and a pipe keeps it whole
            self.console.print(Text(usage_footer(doc, wall), style="dim"), soft_wrap=True)
