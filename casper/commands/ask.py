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
from casper.errors import CasperError
from casper.timeutil import local_tz

MAX_QUESTION_CHARS = 2000  # beyond this a question would crowd the evidence out of the prompt
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="no usage footer")]


def check_question(question: str) -> str:
    """The question, stripped; an empty or overlong one is an error with a hint."""
    from casper.inputs import require_text

    require_text(question, what="question", example='casper ask "when is the dentist?"')
    text = question.strip()
    if len(text) > MAX_QUESTION_CHARS:
        raise CasperError(
            f"the question is {len(text):,} characters long (at most {MAX_QUESTION_CHARS:,})",
            hint="ask about one thing in a sentence or two; `casper search` takes keywords",
        )
    return text


def check_iterations(value: int | None) -> None:
    if value is not None and value < 1:
        raise CasperError(
            f"--max-iterations must be at least 1 (got {value})",
            hint="each iteration is one model call; the default is 5",
        )


def usage_footer(data: dict[str, Any]) -> str:
    """One line: iterations, tokens, speed, time to first token, model / tools / load time."""
    u = data.get("usage") or {}
    if data.get("model") is None:
        return f"answered from search alone · total {data.get('elapsed_s', 0):.1f}s"
    parts = [f"{u.get('iterations', 0)} steps"]
    if u.get("prompt_tokens") or u.get("completion_tokens"):
        parts.append(f"{u['prompt_tokens']:,} prompt + {u['completion_tokens']:,} answer tokens")
    if u.get("tokens_per_s"):
        parts.append(f"{u['tokens_per_s']:.1f} tok/s")
    if u.get("first_token_s"):
        parts.append(f"first token {u['first_token_s']:.1f}s")
    parts.append(f"model {u.get('model_s', 0):.1f}s, tools {u.get('tools_s', 0):.1f}s")
    if data.get("load_s"):
        parts.append(f"load {data['load_s']:.1f}s")
    parts.append(f"total {data.get('elapsed_s', 0):.1f}s")
    return " · ".join(parts)


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
    cfg: Config,
    question: str,
    *,
    json: bool,
    no_llm: bool = False,
    history: tuple[str, ...] = (),
    quiet: bool = False,
) -> dict[str, Any]:
    """Answer one question and print it (answer, then citations); returns the JSON shape.

    `elapsed_s` is the wall time of the whole answer including loading the model; `load_s` is
    the loading part.
    """
    import time

    from casper.agent.core import Limits
    from casper.answer import answer_question
    from casper.commands.retrieval import make_retriever, say_notices

    question = check_question(question)
    tz = _zone(cfg)
    store = open_store(cfg)
    retriever = make_retriever(cfg, store)
    loading = time.perf_counter()
    engine, why = _engine(cfg, no_llm)
    load_s = time.perf_counter() - loading
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
    say_notices(retriever.notices)
    asked = dataclasses.replace(
        asked, load_s=round(load_s, 3), elapsed_s=round(asked.elapsed_s + load_s, 3)
    )
    data = asked.to_dict()
    if json:
        from casper.render import print_json

        print_json(data)
    else:
        _print_answer(data)
        if not quiet:
            _stderr().print(f"[dim]{usage_footer(data)}[/]", highlight=False, soft_wrap=True)
    return data


def _print_answer(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    console.print(escape(data["answer"]))
    # a message the answer already shows in full (the retrieval-only answer) is not repeated
    shown = data["answer"]
    sources = [c for c in data["citations"] if not (c["text"] and c["text"][:80] in shown)]
    if sources:
        console.print("\n[bold]Sources[/]")
        for c in sources:
            console.print(
                f"  [dim]#{c['rowid']}[/] {c['ts'][:16].replace('T', ' ')}  "
                f"[cyan]{escape(c['sender'])}[/]: {escape(c['text'][:120])}"
            )
    if data["citations"]:
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
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """One question through the agent, with cited messages."""
    check_iterations(max_iterations)
    check_question(question)
    cfg = config(home, llm_model=model, max_iterations=max_iterations)
    ask_once(cfg, question, json=json, no_llm=no_llm, quiet=quiet)


@app.command()
@guarded
def chat(
    model: Annotated[str | None, typer.Option("--model", help="MLX model id or local path")] = None,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="answer from search alone")] = False,
    home: Home = None,
    quiet: Quiet = False,
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
        try:
            last = ask_once(
                dataclasses.replace(cfg),
                line,
                json=False,
                no_llm=no_llm,
                history=history.as_hints(),
                quiet=quiet,
            )
        except CasperError as exc:  # one bad turn (e.g. an overlong paste) must not end the chat
            err.print(f"[red]error:[/] {exc.message}", highlight=False)
            if exc.hint:
                err.print(f"[dim]hint: {exc.hint}[/]", highlight=False)
            continue
        history.add(line, last["answer"])
        history.save()
