"""`casper ask` and `casper chat`: the agent with a live progress view on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from casper.cli.base import (
    Home,
    Json,
    NoService,
    Verbose,
    app,
    config,
    default_of,
    guarded,
    print_json,
)
from casper.config import Config, llm_server

if TYPE_CHECKING:
    from casper.app.documents import AskDoc
    from casper.cli.transport import Session

# inside the commands: `casper --help` imports every command module; the work loads when it runs

Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="no usage footer")]
# what every search of the answer is kept to: `search`'s options, with its meaning
Person = Annotated[str | None, typer.Option("--person", help="name, handle or id")]
ChatOption = Annotated[str | None, typer.Option("--chat", help="chat name or id")]
Since = Annotated[str | None, typer.Option("--since", help="ISO date or phrase")]
Until = Annotated[str | None, typer.Option("--until", help="ISO date or phrase (whole day)")]
Model = Annotated[
    str | None,
    typer.Option("--model", help="MLX model id or local path; with --base-url, the server's name"),
]
BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="answer with an OpenAI-compatible server on this machine, e.g. "
        "http://127.0.0.1:8080/v1 \\[default: setting llm_base_url, else MLX]",
    ),
]


def checked_server(cfg: Config, base_url: str | None) -> str | None:
    """The model server this command would send to, refused (before anything connects or the
    service starts) when its host is not this machine and `allow_remote_llm` is off."""
    url = base_url or cfg.llm_base_url
    return llm_server(url, allow_remote=cfg.allow_remote_llm)[0] if url else None


def ask_once(
    cfg: Config,
    question: str,
    *,
    json: bool,
    no_llm: bool = False,
    history: tuple[str, ...] = (),
    quiet: bool = False,
    show_sources: bool = True,
    model: str | None = None,
    base_url: str | None = None,
    max_iterations: int | None = None,
    session: Session | None = None,
    scope: dict[str, str | None] | None = None,
) -> AskDoc:
    """Answer one question and print it (answer, then citations); returns the JSON shape.

    The work runs in the service or in-process (casper.cli.transport); this only renders
    the dict events and the final document, so both paths look the same. `elapsed_s` is the
    wall time of the whole answer including loading the model; `load_s` is the loading part.
    """
    from casper.app.requests import AskRequest, parse_as
    from casper.cli.live import AskView
    from casper.cli.transport import Session

    args = {
        "question": question,
        "model": model,
        "base_url": base_url,
        "max_iterations": max_iterations,
        "no_llm": no_llm,
        "history": list(history),
        **{k: v for k, v in (scope or {}).items() if v is not None},
    }
    request = parse_as(AskRequest, "ask", args)  # checked once, before anything starts
    question = request.question  # stripped
    if not no_llm:
        checked_server(cfg, base_url)
    session = session or Session(cfg)
    # its clock starts before anything loads
    view = AskView(quiet=json, footer=not (json or quiet))
    with view.doing("searching your messages" if no_llm else "thinking"):
        data: AskDoc = session.answer(request, on_event=view)
    if json:
        print_json(data)
        return data
    from casper.cli.invocation import command_line
    from casper.cli.render import print_answer

    said = words_line(data)
    if said:  # before the answer: the messages below are not about those words
        view({"event": "notice", "text": said})
    print_answer(
        data, question, sources=show_sources, show_command=command_line(cfg.data_dir, "show")
    )
    if not quiet:
        view.finish(data)
    return data


def words_line(doc: AskDoc) -> str | None:
    """`no message contains 'birthday'` / `none of the messages found contains 'license'`:
    the question's words the answer's messages do not hold, so they are not taken as its."""
    nowhere, elsewhere = doc.get("words_not_found") or [], doc.get("words_not_in_hits") or []
    parts = []
    if nowhere:
        parts.append(f"no message contains {_quoted(nowhere)}")
    if elsewhere:
        parts.append(f"none of the messages found contains {_quoted(elsewhere)}")
    return "; ".join(parts) or None


def _quoted(words: list[str]) -> str:
    said = [repr(w) for w in words]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " or " + said[-1]


@app.command()
@guarded
def ask(
    question: Annotated[str, typer.Argument(help="your question")],
    model: Model = None,
    base_url: BaseUrl = None,
    max_iterations: Annotated[
        int | None,
        typer.Option(
            "--max-iterations",
            help=f"model calls in the tool loop {default_of('max_iterations')}",
        ),
    ] = None,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="answer from search alone")] = False,
    person: Person = None,
    chat: ChatOption = None,
    since: Since = None,
    until: Until = None,
    home: Home = None,
    json: Json = False,
    quiet: Quiet = False,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """One question through the agent, with cited messages."""
    from casper.cli.transport import Session

    cfg = config(home)
    ask_once(
        cfg,
        question,
        json=json,
        no_llm=no_llm,
        quiet=quiet,
        model=model,
        base_url=base_url,
        max_iterations=max_iterations,
        session=Session(cfg, no_service=no_service),
        scope={"person": person, "chat": chat, "since": since, "until": until},
    )


@app.command()
@guarded
def chat(
    model: Model = None,
    base_url: BaseUrl = None,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="answer from search alone")] = False,
    person: Person = None,
    chat: ChatOption = None,
    since: Since = None,
    until: Until = None,
    home: Home = None,
    quiet: Quiet = False,
    no_service: NoService = False,
    verbose: Verbose = False,
) -> None:
    """A REPL with line editing and history: /help, /sources, /clear, /quit."""
    from casper.app.requests import ContactsRequest
    from casper.cli.repl import run_repl
    from casper.cli.transport import Session

    cfg = config(home)
    if not no_llm:
        checked_server(cfg, base_url)  # refused before the REPL starts
    # one session for the whole REPL: the service, or one in-process Runtime that loads the
    # store, index, embedder, reranker and model once, not once per turn
    session = Session(cfg, no_service=no_service)
    # for resolving follow-ups
    people = [p["name"] for p in session.answer(ContactsRequest())]
    run_repl(
        cfg,
        lambda question, hints: ask_once(
            cfg, question, json=False, no_llm=no_llm, history=hints, quiet=quiet,
            show_sources=False, model=model, base_url=base_url, session=session,
            scope={"person": person, "chat": chat, "since": since, "until": until},
        ),
        names=people,
    )  # fmt: skip
