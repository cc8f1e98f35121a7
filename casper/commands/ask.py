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
from casper.errors import CasperError

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
            what = "answering" if event.get("final") else f"thinking (step {event['iteration']})"
            self._status(f"{what} …")
        elif kind == "tool":
            args = jsonlib.dumps(event.get("arguments", {}), ensure_ascii=False)
            label = "looking up" if event.get("prefetch") else "→"
            self.console.print(f"[cyan]{label} {escape(event['name'])}[/] [dim]{escape(args)}[/]")
        elif kind == "tool_done":
            found = event.get("messages", event.get("found", 0))
            note = (
                f"{found} messages"
                if found
                else ("ok" if event.get("ok") else event.get("summary") or "failed")
            )
            took = f" ({event['elapsed_s']:.1f}s)" if "elapsed_s" in event else ""
            self.console.print(f"  [dim]← {escape(note)}{took}[/]")
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
    quiet: bool = False,
) -> dict[str, Any]:
    """Answer one question and print it (answer, then citations); returns the JSON shape.

    `elapsed_s` is the wall time of the whole answer including loading the model; `load_s` is
    the loading part (0 when a warm service or session already holds the model).
    """
    from casper.commands.transport import Session

    question = check_question(question)
    check_iterations(max_iterations)
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
            ts = (c.get("ts") or "date unknown")[:16].replace("T", " ")
            console.print(
                f"  [dim]#{c['rowid']}[/] {ts}  "
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
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """One question through the agent, with cited messages."""
    from casper.commands.transport import Session

    check_iterations(max_iterations)
    check_question(question)
    cfg = config(home)
    ask_once(
        cfg,
        question,
        json=json,
        no_llm=no_llm,
        model=model,
        max_iterations=max_iterations,
        session=Session(cfg, no_service=no_service),
        quiet=quiet,
    )


@app.command()
@guarded
def chat(
    model: Annotated[str | None, typer.Option("--model", help="MLX model id or local path")] = None,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="answer from search alone")] = False,
    home: Home = None,
    quiet: Quiet = False,
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
        try:
            last = ask_once(
                cfg,
                line,
                json=False,
                no_llm=no_llm,
                model=model,
                history=history.as_hints(),
                session=session,
                quiet=quiet,
            )
        except CasperError as exc:  # one bad turn (e.g. an overlong paste) must not end the chat
            err.print(f"[red]error:[/] {exc.message}", highlight=False)
            if exc.hint:
                err.print(f"[dim]hint: {exc.hint}[/]", highlight=False)
            continue
        history.add(line, last["answer"])
        history.save()
