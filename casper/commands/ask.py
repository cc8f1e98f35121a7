"""`casper ask` and `casper chat`: the agent with a live progress view on stderr.

The work runs in the service or in-process (casper.commands.transport); this module only
renders the dict events and the final document, so both paths look the same.
"""

from __future__ import annotations

import json as jsonlib
from typing import Annotated, Any

import typer

from casper.commands.base import (
    Home,
    Json,
    NoService,
    Verbose,
    _stderr,
    app,
    config,
    guarded,
    print_json,
)
from casper.config import Config


class LiveView:
    """Renders agent events on stderr: thinking, tool calls with arguments, results, answering.

    Notices (model unavailable, rerank off) are printed even off a terminal; progress only on one.
    """

    def __init__(self, enabled: bool) -> None:
        self.console = _stderr()
        self.enabled = enabled and self.console.is_terminal
        self.status: Any = None

    def __call__(self, event: dict[str, Any]) -> None:
        from rich.markup import escape

        kind = event.get("event")
        if kind == "notice":
            from casper.commands.transport import print_notice

            self.stop()
            print_notice(event)
            return
        if not self.enabled:
            return
        if kind == "loading":
            self._status(f"loading {event['what']} …")
        elif kind == "step":
            self._status(f"thinking (step {event['iteration']}) …")
        elif kind == "tool":
            args = jsonlib.dumps(event.get("arguments", {}), ensure_ascii=False)
            self.console.print(f"[cyan]→ {escape(event['name'])}[/] [dim]{escape(args)}[/]")
        elif kind == "tool_done":
            found = event.get("found", 0)
            note = (
                f"{found} messages"
                if found
                else ("ok" if event.get("ok") else event.get("summary") or "failed")
            )
            self.console.print(f"  [dim]← {escape(note)}[/]")
        elif kind == "answering":
            self._status("answering …")

    def _status(self, text: str) -> None:
        if self.status is None:
            self.status = self.console.status(text)
            self.status.start()
        else:
            self.status.update(text)

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None


def ask_once(
    cfg: Config,
    question: str,
    *,
    json: bool,
    no_llm: bool = False,
    history: tuple[str, ...] = (),
    model: str | None = None,
    max_iterations: int | None = None,
    session: Any = None,
) -> dict[str, Any]:
    """Answer one question and print it (answer, then citations); returns the JSON shape."""
    from casper.commands.transport import Session

    session = session or Session(cfg)
    args = {
        "question": question,
        "model": model,
        "max_iterations": max_iterations,
        "no_llm": no_llm,
        "history": list(history),
    }
    view = LiveView(enabled=not json)
    try:
        data = session.execute("ask", args, on_event=view)
    finally:
        view.stop()
    if json:
        print_json(data)
    else:
        _print_answer(data)
    return data


def _print_answer(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    console.print(escape(data["answer"]))
    if data["citations"]:
        console.print("\n[bold]Sources[/]")
        for c in data["citations"]:
            console.print(
                f"  [dim]#{c['rowid']}[/] {c['ts'][:16].replace('T', ' ')}  "
                f"[cyan]{escape(c['sender'])}[/]: {escape(c['text'][:120])}"
            )
        console.print("[dim]open one with: casper show ID[/]")


@app.command()
@guarded
def ask(
    question: Annotated[str, typer.Argument(help="your question")],
    model: Annotated[str | None, typer.Option("--model", help="MLX model id or local path")] = None,
    max_iterations: Annotated[
        int | None, typer.Option("--max-iterations", help="model calls in the tool loop")
    ] = None,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="answer from search alone")] = False,
    home: Home = None,
    json: Json = False,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """One question through the agent, with cited messages."""
    from casper.commands.transport import Session
    from casper.inputs import require_text

    require_text(question, what="question", example='casper ask "when is the dentist?"')

    cfg = config(home)
    ask_once(
        cfg,
        question,
        json=json,
        no_llm=no_llm,
        model=model,
        max_iterations=max_iterations,
        session=Session(cfg, no_service=no_service),
    )


@app.command()
@guarded
def chat(
    model: Annotated[str | None, typer.Option("--model", help="MLX model id or local path")] = None,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="answer from search alone")] = False,
    home: Home = None,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """A REPL with history: /sources, /clear, /quit."""
    from casper.commands.transport import Session
    from casper.history import History

    cfg = config(home)
    # one session for the whole REPL: the service, or one in-process Runtime that loads the
    # store, index, embedder, reranker and model once, not once per turn
    session = Session(cfg, no_service=no_service)
    history = History.load(cfg.chat_history_path, budget_tokens=cfg.history_token_budget)
    err = _stderr()
    err.print("[dim]casper chat — /sources, /clear, /quit[/]")
    last: dict[str, Any] | None = None
    while True:
        try:
            line = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            break
        if not line:
            continue
        if line in ("/quit", "/exit"):
            break
        if line == "/clear":
            history.clear()
            err.print("[dim]history cleared[/]")
            continue
        if line == "/sources":
            _print_answer({"answer": "", "citations": (last or {}).get("citations", [])})
            continue
        last = ask_once(
            cfg,
            line,
            json=False,
            no_llm=no_llm,
            model=model,
            history=history.as_hints(),
            session=session,
        )
        history.add(line, last["answer"])
        history.save()
