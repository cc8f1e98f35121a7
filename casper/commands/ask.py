"""`casper ask` and `casper chat`: the agent with a live progress view on stderr."""

from __future__ import annotations

import dataclasses
import json as jsonlib
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import typer

from casper.commands.base import Home, Json, Verbose, _stderr, app, config, guarded
from casper.commands.wiring import open_store
from casper.config import Config
from casper.timeutil import local_tz


def _zone(cfg: Config) -> ZoneInfo:
    return local_tz(cfg.timezone)  # the zone `index`, `stats` and `search` use too


def _engine(cfg: Config, no_llm: bool) -> tuple[Any, str | None]:
    """The model, or (None, why not) — a missing model never ends in a traceback."""
    if no_llm:
        return None, None
    from casper.backends.factory import make_engine
    from casper.errors import ModelUnavailable

    err = _stderr()
    try:
        with err.status(f"loading {cfg.llm_model} …"):
            return make_engine(cfg), None
    except ModelUnavailable as exc:
        err.print(f"[yellow]notice:[/] {exc.message}")
        if exc.hint:
            err.print(f"[dim]hint: {exc.hint}[/]")
        return None, "the language model is not available"


class LiveView:
    """Renders agent events on stderr: thinking, tool calls with arguments, results, answering."""

    def __init__(self, enabled: bool) -> None:
        self.console = _stderr()
        self.enabled = enabled and self.console.is_terminal
        self.status: Any = None

    def __call__(self, event: dict[str, Any]) -> None:
        if not self.enabled:
            return
        from rich.markup import escape

        kind = event.get("event")
        if kind == "step":
            what = "answering" if event.get("final") else f"thinking (step {event['iteration']})"
            self._status(f"{what} …")
        elif kind == "tool":
            args = jsonlib.dumps(event.get("arguments", {}), ensure_ascii=False)
            label = "looking up" if event.get("prefetch") else "→"
            self.console.print(f"[cyan]{label} {event['name']}[/] [dim]{escape(args)}[/]")
        elif kind == "tool_done":
            found = event.get("messages", 0)
            note = f"{found} messages" if found else ("ok" if event["ok"] else "failed")
            self.console.print(f"  [dim]← {escape(note)} ({event['elapsed_s']:.1f}s)[/]")

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
    cfg: Config, question: str, *, json: bool, no_llm: bool = False, history: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Answer one question and print it (answer, then citations); returns the JSON shape."""
    from casper.agent.core import Limits
    from casper.answer import answer_question
    from casper.commands.retrieval import make_retriever

    tz = _zone(cfg)
    store = open_store(cfg)
    retriever = make_retriever(cfg, store)
    engine, why = _engine(cfg, no_llm)
    view = LiveView(enabled=not json)
    try:
        asked = answer_question(
            question,
            store=store,
            search=retriever.search,
            engine=engine,
            tz=tz,
            limits=Limits(max_iterations=cfg.max_iterations),
            history=history,
            unavailable_reason=why,
            on_event=view,
            locale=cfg.locale,
        )
    finally:
        view.stop()
    data = asked.to_dict()
    if json:
        from casper.render import print_json

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
    verbose: Verbose = False,
) -> None:
    """One question through the agent, with cited messages."""
    from casper.inputs import require_text

    require_text(question, what="question", example='casper ask "when is the dentist?"')
    cfg = config(home, llm_model=model, max_iterations=max_iterations)
    ask_once(cfg, question, json=json, no_llm=no_llm)


@app.command()
@guarded
def chat(
    model: Annotated[str | None, typer.Option("--model", help="MLX model id or local path")] = None,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="answer from search alone")] = False,
    home: Home = None,
    verbose: Verbose = False,
) -> None:
    """A REPL with history: /sources, /clear, /quit."""
    from casper.history import History

    cfg = config(home, llm_model=model)
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
            dataclasses.replace(cfg), line, json=False, no_llm=no_llm, history=history.as_hints()
        )
        history.add(line, last["answer"])
        history.save()
