"""`casper chat`: the read-eval-print loop around one `ask` per line.

Line editing and a persistent input history come from prompt_toolkit when stdin is a
terminal (history file in the data dir, 0600); pipes and tests get plain `input()`. Slash
commands never reach the model; a follow-up that leans on "she"/"it" is rewritten with the
previous turn's people, dates and topic (`casper.agent.followup`), and the rewrite is shown; a
follow-up of a count, a ranking or a last contact is that question again for another person or
period.

Imports: stdlib, casper.config, casper.cli (history, render, invocation), casper.agent.followup,
casper.dates.zones; prompt_toolkit lazily; casper.agent.enrich, casper.datadir and the salvage
inside functions (a CLI module imports only light modules at its top, tests/test_layers.py).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from casper.agent.followup import Turn, restate, rewrite, turn_of
from casper.cli.history import History
from casper.cli.invocation import command_line
from casper.cli.render import console, print_sources
from casper.config import Config
from casper.dates.zones import local_tz
from casper.errors import CasperError

if TYPE_CHECKING:
    from prompt_toolkit.history import History as InputHistory
    from rich.console import Console

    from casper.agent.answer_json import AnswerGrounding, Citation
    from casper.app.documents import AskDoc

PROMPT = "you> "
COMMANDS = {
    "/help": "this list",
    "/sources": "the messages the last answer cites",
    "/clear": "forget the conversation so far (history and sources)",
    "/quit": "leave (also /exit, Ctrl-D)",
}
Ask = Callable[[str, tuple[str, ...]], "AskDoc"]  # ask_once: prints, returns the document


def input_history_path(cfg: Config) -> Path:
    return cfg.data_dir / "chat_input_history"


def line_reader(history_file: Path, *, interactive: bool | None = None) -> Callable[[str], str]:
    """prompt_toolkit with history on a terminal, else `input()`. Raises EOFError at the end."""
    if interactive is None:
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if not interactive:
        return input
    try:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory
    except ImportError:  # pragma: no cover - a declared dependency; degrade, don't crash
        return input
    from casper import datadir

    if datadir.problem(history_file, datadir.BY_NAME["chat_input_history"]):
        # a folder in its place, no permission, not UTF-8: kept aside, a new one started
        from casper.indexer.salvage import move_aside

        with contextlib.suppress(OSError):
            move_aside(history_file)
    try:
        history_file.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(history_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        os.chmod(history_file, 0o600)  # typed questions are private, like the messages
        with open(history_file, encoding="utf-8") as fh:  # prompt_toolkit reads it as UTF-8
            fh.read()
        history: InputHistory = FileHistory(str(history_file))
    except (OSError, ValueError):  # a folder in its place, no permission, bytes not UTF-8
        from prompt_toolkit.history import InMemoryHistory

        history = InMemoryHistory()  # `casper doctor` names the file; --rebuild moves it
    session: PromptSession[str] = PromptSession(history=history)
    return lambda prompt: session.prompt(prompt)


@dataclass(frozen=True, slots=True)
class _Answered:
    """The last answer, for /sources: what it cites, the question it answered, its grounding."""

    citations: list[Citation]
    question: str
    grounding: AnswerGrounding | None


@dataclass
class _Session:
    history: History
    last: _Answered | None = None
    turn: Turn | None = None  # what the last question was about, for follow-ups
    show_command: str = "casper show"  # how /sources says to open a cited message


def run_repl(
    cfg: Config,
    ask: Ask,
    *,
    read: Callable[[str], str] | None = None,
    names: Sequence[str] = (),
) -> None:
    """Loop until /quit or end of input; `ask(question, hints)` prints and returns the doc."""
    from rich.text import Text

    from casper.agent.enrich import enrich

    err = console(stderr=True)
    session = _Session(
        History.load(cfg.chat_history_path, budget_tokens=cfg.history_token_budget),
        show_command=command_line(cfg.data_dir, "show"),
    )
    moved = session.history.moved_aside
    if moved is not None:
        err.print(Text(f"notice: the chat history in {cfg.chat_history_path} did not read "
                       f"({moved[1]}): moved aside to {moved[0].name}; this chat starts a new "
                       "one", style="yellow"))  # fmt: skip
    read = read or line_reader(input_history_path(cfg))
    names = sorted(names or (), key=len, reverse=True)  # longest first: full names win
    tz = local_tz(cfg.timezone)
    err.print(Text("casper chat — /help for commands, Ctrl-D to leave", style="dim"))
    saved = session.history.saved
    day = datetime.fromtimestamp(saved, tz).date().isoformat() if saved else None
    # what the model is given of earlier chats is said, never carried silently
    err.print(Text(session.history.opening(day), style="dim"), soft_wrap=True)
    while True:
        try:
            line = read(PROMPT).strip()
        except EOFError:
            sys.stdout.write("\n")  # leave the shell's prompt on a line of its own
            sys.stdout.flush()
            break
        except KeyboardInterrupt:  # Ctrl-C drops the line being typed, like a shell
            continue
        except UnicodeDecodeError:  # a terminal in another encoding: say so, keep the session
            err.print(Text("error: ", "red") + Text("that line is not UTF-8 text"))
            err.print(Text("hint: type it again; set the terminal's encoding to UTF-8", "dim"))
            continue
        if not line:
            continue
        if line.startswith("/"):
            if _command(line, session, err) == "quit":
                break
            continue
        question = line
        said = enrich(line, datetime.now(tz), tz, locale=cfg.locale) if hasattr(tz, "key") else None
        # a count, a ranking or a last contact stays one: only the person or the period changes
        restated = restate(line, session.turn, names, said.phrase if said else None)
        carried = restated or rewrite(line, session.turn, names)
        if carried:  # said before the answer: what the follow-up kept of the last question
            question, note = carried
            err.print(Text(note, style="dim"), soft_wrap=True)
        try:
            doc = ask(question, session.history.as_hints())
        except KeyboardInterrupt:  # Ctrl-C stops this answer, not the session
            err.print(Text("(stopped)", style="dim"))
            continue
        except CasperError as exc:  # one bad turn (e.g. an overlong paste) must not end the chat
            err.print(Text("error: ", "red") + Text(exc.message))
            if exc.hint:
                err.print(Text(f"hint: {exc.hint}", "dim"))
            continue
        session.last = _Answered(doc.get("citations") or [], question, doc.get("grounding"))
        basis = question if restated else line  # a restated question stands on its own
        found = (
            enrich(basis, datetime.now(tz), tz, locale=cfg.locale) if hasattr(tz, "key") else None
        )
        session.turn = turn_of(
            basis, session.last.citations, names, found.date_range if found else None,
            previous=session.turn if carried and not restated else None,
            period=found.phrase if found else None,
        )  # fmt: skip
        session.history.add(line, doc.get("answer", ""))
        session.history.save()


def _command(line: str, session: _Session, err: Console) -> str | None:
    """Run one slash command locally; returns "quit" to end the session."""
    from rich.text import Text

    command = line.split()[0].lower()
    if command in ("/quit", "/exit"):
        return "quit"
    if command == "/help":
        for name, what in COMMANDS.items():
            err.print(Text(f"  {name:<9} {what}"))
        err.print(Text("  anything else is a question about your messages", style="dim"))
    elif command == "/clear":
        session.history.clear()
        session.last, session.turn = None, None
        err.print(Text("history and sources cleared", style="dim"))
    elif command == "/sources":
        if session.last is not None and session.last.citations:
            print_sources(
                session.last.citations, session.last.question, show_command=session.show_command
            )
        else:
            err.print(Text(_no_sources(session.last), style="dim"), soft_wrap=True)
    else:
        err.print(Text(f"unknown command {command} — /help lists them", style="yellow"))
    return None


def _no_sources(last: _Answered | None) -> str:
    """What /sources says when the last answer cites nothing: why, not "ask a question"."""
    if last is None:
        return "no sources yet: ask a question first"
    if last.grounding == "stats":
        return (
            "the last answer came from the precomputed stats (counts and dates), not from "
            "messages: there is nothing to cite; `casper stats NAME` shows them"
        )
    return "the last answer cites no messages"
