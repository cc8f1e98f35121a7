"""`casper ask` and `casper chat`: the agent with a live progress view on stderr."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import typer

from casper.commands.base import Home, Json, Verbose, _stderr, app, config, default_of, guarded
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


def _zone(cfg: Config) -> ZoneInfo:
    return local_tz(cfg.timezone)  # the zone `index`, `stats` and `search` use too


def _engine(cfg: Config, no_llm: bool, status: Any) -> tuple[Any, str | None]:
    """The model, or (None, why not) — a missing model never ends in a traceback."""
    if no_llm:
        return None, None
    from casper.backends.factory import make_engine
    from casper.errors import ModelUnavailable

    err = _stderr()
    try:
        with status(f"loading {cfg.llm_model}"):
            return make_engine(cfg), None
    except ModelUnavailable as exc:
        from rich.markup import escape  # a model path like "[x]" is not markup

        err.print(f"[yellow]notice:[/] {escape(exc.message)}")
        if exc.hint:
            err.print(f"[dim]hint: {escape(exc.hint)}[/]")
        return None, "the language model is not available"


def ask_once(
    cfg: Config,
    question: str,
    *,
    json: bool,
    no_llm: bool = False,
    history: tuple[str, ...] = (),
    quiet: bool = False,
    show_sources: bool = True,
) -> dict[str, Any]:
    """Answer one question and print it (answer, then citations); returns the JSON shape.

    `elapsed_s` is the wall time of the whole answer including loading the model; `load_s` is
    the loading part.
    """
    import time

    from casper.agent.core import Limits
    from casper.answer import answer_question
    from casper.commands.retrieval import make_retriever, say_notices
    from casper.live import AskView

    question = check_question(question)
    view = AskView(quiet=json)  # its clock starts before anything loads
    tz = _zone(cfg)
    store = open_store(cfg)
    with view.doing("loading the search index"):
        retriever = make_retriever(cfg, store)
    loading = time.perf_counter()
    engine, why = _engine(cfg, no_llm, view.doing)
    load_s = time.perf_counter() - loading
    with view.doing("searching your messages" if engine is None else "thinking"):
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
    say_notices(retriever.notices)
    asked = dataclasses.replace(
        asked, load_s=round(load_s, 3), elapsed_s=round(asked.elapsed_s + load_s, 3)
    )
    data = asked.to_dict()
    if json:
        from casper.render import print_json

        print_json(data)
        return data
    from casper.render_text import print_answer

    print_answer(data, question, sources=show_sources)
    if not quiet:
        view.finish(data)
    return data


@app.command()
@guarded
def ask(
    question: Annotated[str, typer.Argument(help="your question")],
    model: Annotated[str | None, typer.Option("--model", help="MLX model id or local path")] = None,
    max_iterations: Annotated[
        int | None,
        typer.Option(
            "--max-iterations",
            help=f"model calls in the tool loop {default_of('max_iterations')}",
        ),
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
    """A REPL with line editing and history: /help, /sources, /clear, /quit."""
    from casper.repl import run_repl

    cfg = config(home, llm_model=model)
    people = [p.name for p in open_store(cfg).people()]  # for resolving follow-ups
    run_repl(
        cfg,
        lambda question, hints: ask_once(
            cfg, question, json=False, no_llm=no_llm, history=hints, quiet=quiet,
            show_sources=False,
        ),
        names=people,
    )  # fmt: skip
