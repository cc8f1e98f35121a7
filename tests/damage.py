"""The corruption matrix: every file an indexed data dir holds × {truncated, random bytes, a
folder in its place, unreadable}, and what a user sees afterwards.

For each case a copy of one indexed home (the tiny demo corpus, fake models) gets one file
damaged, then the commands a user would type run: `doctor`, `search`, `stats`, a plain `index`,
`index --rebuild`, and `search` and `stats` again; for the service's files also `contacts`
through the service (started by the command, as a user's first command starts it), for the chat
histories a turn of `casper chat`. `tests/integration/test_damage_matrix.py` asserts on every
case; `python -m tests.damage` prints the table (the figures in docs/reliability.md).

The cases run in two worker processes (the matrix is the slowest part of the suite). A worker
gives up the power to read any file (Linux: CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, also for
what it starts), so a file made unreadable with chmod 000 is unreadable to it as to a user, also
when the tests run as root.

A file is named by its place in the data dir with the parts that change from build to build
replaced: an index folder's uuid by the index's name, a version or fragment number by `N`.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import multiprocessing
import os
import re
import shutil
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from casper.cli import app
from ingest.synthetic.demo import build_tiny_corpus
from tests.helpers import (
    CLI_WITH_HASH_EMBEDDER,
    child_env,
    index_args,
    run_child,
    use_fake_search_models,
)

DAMAGES = ("truncated", "random", "directory", "unreadable")
QUERY = "thanksgiving"
PERSON = "Sam"
WORKERS = 2
SERVICE_FILES = ("service.log", "service.pid", "service.lock")
CHAT_FILES = ("chat_history.json", "chat_input_history")
runner = CliRunner()


@contextmanager
def fake_models() -> Iterator[None]:
    from tests.service_server import SearchThenAnswerEngine

    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        import casper.backends.factory as factory

        mp.setattr(factory, "make_engine", lambda cfg: SearchThenAnswerEngine())
        # no reranker, as on a Mac before `casper pull`: each search has a notice to remember
        # in notices.json (its writes are what a damaged one must survive)
        mp.setattr(factory, "make_reranker", lambda cfg: (None, "not in the local cache"))
        mp.setenv("CASPER_SERVICE", "0")
        yield


def build_home(root: Path) -> Path:
    """The tiny demo corpus in `root/src`, indexed into `root/home` by `casper index` in a
    child process (the hash embedder), so every file is closed as after a real run; then the
    small files a used home holds (casper.datadir), each written as Casper writes it."""
    corpus = build_tiny_corpus(root / "src")
    home = root / "home"
    done = run_child(CLI_WITH_HASH_EMBEDDER, index_args(home, corpus, "--json"), child_env())
    assert done.returncode == 0, done.stderr
    add_small_files(home)
    return home


def add_small_files(home: Path) -> None:
    from casper.app import notices
    from casper.app.freshness import AutoRun, run_json, save_state
    from casper.cli.history import History
    from casper.service import protocol

    # a service started by a command for this home runs no auto-index of its own: the matrix
    # judges what the damage does, not a background run racing the commands
    with (home / "config.toml").open("a") as fh:
        fh.write("auto_index = false\n")
    notices.remember(home, "reranker", {"since": "2024-01-01", "reason": "not cached"})
    save_state(home, {"last_run": run_json(AutoRun(1.7e9, 0.4, "up to date"))})
    history = History(home / "chat_history.json")
    history.add("where is the climbing gym?", "It is on Main Street [#3].")
    history.save()
    for name, text in (
        ("chat_input_history", "\n# 2024-01-01 10:00:00.000000\n+where is the climbing gym?\n"),
        ("service.log", "casper service listening (pid 4242)\nsearch ok in 12.3 ms\n"),
        ("service.pid", f"4242 {protocol.build_id()} {protocol.socket_path(home)}\n"),
        ("service.lock", ""),
    ):
        fd = os.open(home / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)


def _index_names(index_dir: Path) -> dict[str, str]:
    """uuid → name of the table's indexes."""
    from casper.index.lance_import import lancedb

    table = lancedb().connect(str(index_dir)).open_table("chunks")
    return {ix.index_uuid: ix.name for ix in table.list_indices()}


def targets(home: Path) -> dict[str, Path]:
    """Every file in `home`, by its label (see the module doc)."""
    names = _index_names(home / "index.lance")
    found: dict[str, Path] = {}
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        rel = path.relative_to(home).as_posix()
        rel = re.sub(
            r"_indices/([0-9a-f-]{36})/", lambda m: f"_indices/{names.get(m[1], '?')}/", rel
        )
        rel = re.sub(r"/\d+\.manifest$", "/N.manifest", rel)
        rel = re.sub(r"/\d+-[0-9a-f-]+\.txn$", "/N.txn", rel)
        rel = re.sub(r"/data/[0-9a-f]+\.lance$", "/data/N.lance", rel)
        rel = re.sub(r"^index.lance/(\w+)-\d+-\d+\.npy$", r"index.lance/\1-N.npy", rel)
        assert rel not in found, f"two files are both {rel}"
        found[rel] = path
    return found


def damage(path: Path, how: str) -> None:
    """Truncate to half its size, overwrite with as many random bytes (at least 64), put an
    empty folder in its place, or take away every permission (chmod 000)."""
    size = path.stat().st_size
    if how == "truncated":
        with path.open("r+b") as fh:
            fh.truncate(size // 2)
    elif how == "random":
        path.write_bytes(os.urandom(max(size, 64)))
    elif how == "directory":
        path.unlink()
        path.mkdir()
    elif how == "unreadable":
        path.chmod(0)
    else:
        raise ValueError(how)


@dataclass
class Step:
    args: tuple[str, ...]
    code: int
    output: str  # stdout and stderr
    stdout: str
    crashed: str | None  # an exception that escaped the CLI's guard

    @property
    def unexpected(self) -> bool:
        return "unexpected" in self.output or self.crashed is not None


@dataclass
class Case:
    label: str
    how: str
    expected: Answers
    steps: dict[str, Step] = field(default_factory=dict)
    moved: list[str] = field(default_factory=list)  # *.damaged-* in the home afterwards
    stray: list[str] = field(default_factory=list)  # *.tmp* a write left behind
    unusable_after: list[str] = field(default_factory=list)  # small files still damaged

    def names(self, step: Step) -> bool:
        """The error names the damaged file (or the index folder, for LanceDB's own files)."""
        return any(name in step.output for name in named_by(self.label))


def named_by(label: str) -> tuple[str, ...]:
    """What an error may call a damaged file: its name, or the index folder for files that
    belong to LanceDB's table (a user moves or rebuilds the folder, not one of its files)."""
    name = label.rsplit("/", 1)[-1].replace("-N.npy", "-")
    if label.startswith("index.lance/chunks.lance/"):
        return (name, "index.lance")
    return (name,)


# the words leg and vectors; the n-gram leg with a date filter; the store's stats; contacts
# through the service; one turn of `casper chat` (the fake engine answers from a search)
SEARCH = ("search", "thanksgiving pie", "--json")
SEARCH_CJK = ("search", "寿司", "--since", "2020-01-01", "--json")
STATS = ("stats", "Sam", "--json")
SERVICE = ("contacts", "--json")
CHAT = ("chat",)
CHAT_INPUT = "who brings the pie?\n"
FIRST = {
    "doctor": ("doctor",),
    "search": SEARCH,
    "search cjk": SEARCH_CJK,
    "stats": STATS,
    "index": ("index", "--json"),
}
AFTER = {
    "rebuild": ("index", "--rebuild", "--json"),
    "search again": SEARCH,
    "search cjk again": SEARCH_CJK,
    "stats again": STATS,
}
# what an undamaged home answers (the same commands as above): a command "answered" only when
# it printed exactly this, not fewer hits from a leg that failed quietly
SAME_AS = {
    "search": SEARCH,
    "search cjk": SEARCH_CJK,
    "stats": STATS,
    "search again": SEARCH,
    "search cjk again": SEARCH_CJK,
    "stats again": STATS,
    "service": SERVICE,
    "service again": SERVICE,
    "chat": CHAT,
    "chat again": CHAT,
}


def first_steps(label: str) -> dict[str, tuple[str, ...]]:
    extra = {"service": SERVICE} if label in SERVICE_FILES else {}
    extra |= {"chat": CHAT} if label in CHAT_FILES else {}
    return {**FIRST, **extra}


def after_steps(label: str) -> dict[str, tuple[str, ...]]:
    extra = {"service again": SERVICE} if label in SERVICE_FILES else {}
    extra |= {"chat again": CHAT} if label in CHAT_FILES else {}
    return {**AFTER, **extra}


def run(home: Path, *args: str, service: bool = False) -> Step:
    with fake_models():
        os.environ["CASPER_SERVICE"] = "1" if service else "0"
        try:
            stdin = CHAT_INPUT if args == CHAT else None
            result = runner.invoke(app, [*args, "--home", str(home)], input=stdin)
        finally:
            os.environ["CASPER_SERVICE"] = "0"
    crashed = None
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        crashed = f"{type(result.exception).__name__}: {result.exception}"
    return Step(args, result.exit_code, result.output, result.stdout, crashed)


Answers = dict[tuple[str, ...], str]


def answers(template: Path, scratch: Path) -> Answers:
    """What the undamaged home prints (stdout) for each command of SAME_AS (in this process:
    a service answers the same document)."""
    shutil.copytree(template, scratch)
    found = {}
    for args in dict.fromkeys(SAME_AS.values()):
        step = run(scratch, *args)
        assert step.code == 0, step.output
        found[args] = _answer(args, step.stdout)
    return found


def _answer(args: tuple[str, ...], stdout: str) -> str:
    """The part of a command's output that must not change. For the chat: the messages its
    answer cites and how many sources it lists (the fake engine's words follow the turns the
    history holds, which a damaged history changes on purpose)."""
    if args != CHAT:
        return stdout
    cited = sorted(set(re.findall(r"\[#\d+\]", stdout)))
    sources = re.findall(r"\d+ sources? — ", stdout)
    return f"{' '.join(cited)} | {' '.join(sources)}"


def run_case(template: Path, dest: Path, label: str, how: str, expected: Answers) -> Case:
    """Copy the template home to `dest`, damage one file, run the commands (see the doc)."""
    shutil.copytree(template, dest)
    damage(targets(dest)[label], how)
    case = Case(label, how, expected)
    try:
        for key, args in {**first_steps(label), **after_steps(label)}.items():
            case.steps[key] = run(dest, *args, service=key.startswith("service"))
    finally:
        _stop_service(dest)
    case.moved = sorted(str(p.relative_to(dest)) for p in dest.rglob("*.damaged-*"))
    case.stray = sorted(str(p.relative_to(dest)) for p in dest.glob("*.tmp*"))
    from casper import datadir

    case.unusable_after = [p.file.name for p in datadir.problems(dest)]
    return case


def _stop_service(home: Path) -> None:
    from casper.service import client

    with contextlib.suppress(Exception):
        client.stop(home, timeout=10)


# ---- the workers -----------------------------------------------------------------------------
PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def without_file_override() -> bool:
    """Give up root's power to read and write any file (Linux capabilities, this process and
    what it starts); True when it is given up or was never held (not root)."""
    if os.geteuid() != 0:
        return True
    if sys.platform != "linux":
        return False

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable")]

    libc = ctypes.CDLL(None, use_errno=True)
    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3
    if libc.capget(ctypes.byref(header), data) != 0:
        return False
    mask = ~((1 << CAP_DAC_OVERRIDE) | (1 << CAP_DAC_READ_SEARCH)) & 0xFFFFFFFF
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # an exec'd child does not get it back
    for name in ("effective", "permitted", "inheritable"):
        setattr(data[0], name, getattr(data[0], name) & mask)
    return libc.capset(ctypes.byref(header), data) == 0


def _worker_setup(user_home: str) -> None:
    import typer.testing

    # the click command built once per app, as tests/conftest.py does for the test process
    # (typer's CliRunner builds it on every call: half of what a case costs)
    typer.testing._get_command = functools.cache(typer.testing._get_command)  # type: ignore[attr-defined]
    os.environ.update(CASPER_SERVICE="0", HOME=user_home, HF_HUB_OFFLINE="1")
    os.environ.update(TRANSFORMERS_OFFLINE="1", CASPER_SERVICE_START_TIMEOUT="60")
    for name in ("CASPER_HOME", "CASPER_CHAT_DB", "CASPER_CONTACTS"):
        os.environ.pop(name, None)
    without_file_override()
    from pytest_socket import disable_socket

    disable_socket(allow_unix_socket=True)


def _worker_case(job: tuple[Path, Path, str, str, Answers]) -> Case:
    return run_case(*job)


def file_override_held() -> bool:
    """True when chmod 000 does not keep this process (root, with its capabilities) out."""
    return os.geteuid() == 0


def run_cases(
    template: Path, scratch: Path, wanted: list[tuple[str, str]], expected: Answers
) -> dict[tuple[str, str], Case]:
    """Every (label, damage) of `wanted`, in WORKERS worker processes."""
    jobs = [
        (template, scratch / f"c{i}-{how}", label, how, expected)
        for i, (label, how) in enumerate(wanted)
    ]
    user_home = scratch / "user-home"
    user_home.mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        WORKERS, mp_context=context, initializer=_worker_setup, initargs=(str(user_home),)
    ) as pool:
        done = pool.map(_worker_case, jobs)
        return {(case.label, case.how): case for case in done}


def workers_can_be_kept_out() -> bool:
    """Whether a worker can give up root's file override (then `unreadable` cases are real)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(without_file_override).result()


# ---- the verdicts ----------------------------------------------------------------------------
def answered(case: Case, key: str) -> bool:
    """Exit 0, and for search, stats, contacts and chat exactly what the undamaged home
    prints; `service again` through the service (after --rebuild it must start)."""
    step = case.steps[key]
    if step.code != 0 or step.unexpected:
        return False
    if key == "service again" and "running in this process" in step.output:
        return False
    return key not in SAME_AS or _answer(step.args, step.stdout) == case.expected[SAME_AS[key]]


def clean(case: Case, key: str) -> bool:
    """Answered, or refused with `error:` naming the file and a hint that fixes it (`casper
    index --rebuild`; for config.toml, the user's own file, what to do about it), never
    "unexpected"."""
    step = case.steps[key]
    if step.unexpected or answered(case, key):
        return not step.unexpected
    hint = next((ln for ln in step.output.splitlines() if ln.startswith("hint:")), "")
    fix = "casper index --rebuild" if case.label != "config.toml" else "config.toml"
    return (
        step.code == 1
        and "error:" in step.output
        and case.names(step)
        and (fix in hint or fix in step.output)
    )


def harmless(case: Case) -> bool:
    """Every first command answered as before: the damage changed nothing a user can see."""
    return all(answered(case, k) for k in first_steps(case.label) if k != "doctor")


def doctor_truthful(case: Case) -> bool:
    """`doctor` fails whenever a command does (on a harmless file it may pass)."""
    return harmless(case) or case.steps["doctor"].code == 1


def recovered(case: Case) -> bool:
    """`index --rebuild` succeeded and every command answers as on the undamaged home."""
    return all(answered(case, k) for k in after_steps(case.label))


def refused_naming_it(case: Case) -> bool:
    """config.toml is the user's own: `--rebuild` must not touch it, and names it."""
    step = case.steps["rebuild"]
    return case.label == "config.toml" and step.code == 1 and "config.toml" in step.output


# ---- the table -------------------------------------------------------------------------------
def report(template: Path, scratch: Path, only: tuple[str, ...] = ()) -> list[Case]:
    expected = answers(template, scratch / "undamaged")
    labels = [label for label in targets(template) if not only or label in only]
    wanted = [(label, how) for label in labels for how in DAMAGES]
    found = run_cases(template, scratch / "cases", wanted, expected)
    return [found[w] for w in wanted]


def render(cases: list[Case]) -> str:
    lines = [
        "| file | damage | first commands clean | doctor | --rebuild recovers |",
        "|---|---|---|---|---|",
    ]
    for c in cases:
        firsts = [k for k in first_steps(c.label) if k != "doctor"]
        bad = [k for k in firsts if not clean(c, k)]
        first = "yes" if not bad else "no: " + ", ".join(f"{k} ({_gist(c.steps[k])})" for k in bad)
        doctor = f"exit {c.steps['doctor'].code}" + ("" if doctor_truthful(c) else " (wrong)")
        if recovered(c):
            rebuilt = "yes"
        elif refused_naming_it(c):
            rebuilt = "refused, naming it (the user's file)"
        else:
            rebuilt = "no: " + _why_not(c)
        lines.append(f"| `{c.label}` | {c.how} | {first} | {doctor} | {rebuilt} |")
    n = len(cases)
    pairs = [(c, k) for c in cases for k in first_steps(c.label) if k != "doctor"]
    unexpected = sum(c.steps[k].unexpected for c, k in pairs)
    unclean = sum(not clean(c, k) for c, k in pairs)
    harmful = [c for c in cases if not harmless(c)]
    crashed = sum(s.crashed is not None for c in cases for s in c.steps.values())
    configs = [c for c in cases if c.label == "config.toml"]
    lines += [
        "",
        f"cases: {n} ({len(harmful)} where a command fails, {n - len(harmful)} harmless)",
        f"first commands: {len(pairs) - unclean}/{len(pairs)} clean, {unexpected} 'unexpected'",
        f"doctor exit 1 where a command fails: "
        f"{sum(c.steps['doctor'].code == 1 for c in harmful)}/{len(harmful)}; "
        f"doctor exit 1 on any damaged case: {sum(c.steps['doctor'].code == 1 for c in cases)}/{n}",
        f"recovered by --rebuild: {sum(recovered(c) for c in cases)}/{n - len(configs)} "
        f"rebuildable (config.toml refused naming it: "
        f"{sum(refused_naming_it(c) for c in configs)}/{len(configs)})",
        f"escaped tracebacks: {crashed}",
    ]
    return "\n".join(lines)


def _gist(step: Step) -> str:
    if step.code == 0:
        return "answers differently"
    line = next((ln for ln in step.output.splitlines() if "error:" in ln), step.output[:80])
    return line.replace("|", "/").strip()[:100]


def _why_not(case: Case) -> str:
    for key in after_steps(case.label):
        step = case.steps[key]
        if not answered(case, key):
            return f"{key}: {_gist(step) if step.code else 'answers differently'}"
    return "?"


if __name__ == "__main__":  # python -m tests.damage [SCRATCH_DIR] [--json FILE] [--only LABEL]…
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m tests.damage")
    parser.add_argument("scratch", nargs="?")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--only", action="append", default=[])
    opts = parser.parse_args()
    os.environ["CASPER_SERVICE"] = "0"
    root = Path(opts.scratch or tempfile.mkdtemp(prefix="damage-"))
    os.environ["HOME"] = str(root / "user-home")
    template = build_home(root / "template")
    cases = report(template, root / "cases", tuple(opts.only))
    print(render(cases))
    if opts.json is not None:
        out = opts.json
        summary = {
            f"{c.label} {c.how}": {k: [s.code, s.unexpected] for k, s in c.steps.items()}
            for c in cases
        }
        out.write_text(json.dumps(summary, indent=1))
