"""The corruption matrix: every file an indexed data dir holds × {truncated, random bytes}, and
what a user sees afterwards.

For each case a copy of one indexed home (the tiny demo corpus, fake models) gets one file
damaged, then the commands a user would type run in this process: `doctor`, `search`, `stats`,
a plain `index`, `index --rebuild`, and `search` and `stats` again. `tests/integration/
test_damage_matrix.py` asserts on every case; `python -m tests.damage` prints the table (the
figures in docs/reliability.md).

A file is named by its place in the data dir with the parts that change from build to build
replaced: an index folder's uuid by the index's name, a version or fragment number by `N`.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator
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

DAMAGES = ("truncated", "random")
QUERY = "thanksgiving"
PERSON = "Sam"
runner = CliRunner()


@contextmanager
def fake_models() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        use_fake_search_models(mp)
        mp.setenv("CASPER_SERVICE", "0")
        yield


def build_home(root: Path) -> Path:
    """The tiny demo corpus in `root/src`, indexed into `root/home` by `casper index` in a
    child process (the hash embedder), so every file is closed as after a real run."""
    corpus = build_tiny_corpus(root / "src")
    home = root / "home"
    done = run_child(CLI_WITH_HASH_EMBEDDER, index_args(home, corpus, "--json"), child_env())
    assert done.returncode == 0, done.stderr
    return home


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
    """Truncate to half its size, or overwrite with as many random bytes (at least 64)."""
    size = path.stat().st_size
    if how == "truncated":
        with path.open("r+b") as fh:
            fh.truncate(size // 2)
    elif how == "random":
        path.write_bytes(os.urandom(max(size, 64)))
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


# the words leg and vectors; the n-gram leg with a date filter; the store's stats
SEARCH = ("search", "thanksgiving pie", "--json")
SEARCH_CJK = ("search", "寿司", "--since", "2020-01-01", "--json")
STATS = ("stats", "Sam", "--json")
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
}


def run(home: Path, *args: str) -> Step:
    with fake_models():
        result = runner.invoke(app, [*args, "--home", str(home)])
    crashed = None
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        crashed = f"{type(result.exception).__name__}: {result.exception}"
    return Step(args, result.exit_code, result.output, result.stdout, crashed)


Answers = dict[tuple[str, ...], str]


def answers(template: Path, scratch: Path) -> Answers:
    """What the undamaged home prints (stdout) for each command of SAME_AS."""
    shutil.copytree(template, scratch)
    found = {}
    for args in dict.fromkeys(SAME_AS.values()):
        step = run(scratch, *args)
        assert step.code == 0, step.output
        found[args] = step.stdout
    return found


def run_case(template: Path, dest: Path, label: str, how: str, expected: Answers) -> Case:
    """Copy the template home to `dest`, damage one file, run the commands (see the doc)."""
    shutil.copytree(template, dest)
    damage(targets(dest)[label], how)
    case = Case(label, how, expected)
    for key, args in {**FIRST, **AFTER}.items():
        case.steps[key] = run(dest, *args)
    return case


# ---- the verdicts ----------------------------------------------------------------------------
def answered(case: Case, key: str) -> bool:
    """Exit 0, and for search and stats exactly what the undamaged home prints."""
    step = case.steps[key]
    if step.code != 0 or step.unexpected:
        return False
    return key not in SAME_AS or step.stdout == case.expected[SAME_AS[key]]


def clean(case: Case, key: str) -> bool:
    """Answered, or refused with `error:` naming the file and a hint that fixes it (`casper
    index --rebuild`; for config.toml the line), never "unexpected"."""
    step = case.steps[key]
    if step.unexpected or answered(case, key):
        return not step.unexpected
    fix = "line" if case.label == "config.toml" else "casper index --rebuild"
    hint = next((ln for ln in step.output.splitlines() if ln.startswith("hint:")), "")
    return (
        step.code == 1
        and "error:" in step.output
        and case.names(step)
        and (fix in hint or fix in step.output)
    )


def harmless(case: Case) -> bool:
    """Every first command answered as before: the damage changed nothing a user can see."""
    return all(answered(case, k) for k in FIRST if k != "doctor")


def doctor_truthful(case: Case) -> bool:
    """`doctor` fails whenever a command does (on a harmless file it may pass)."""
    return harmless(case) or case.steps["doctor"].code == 1


def recovered(case: Case) -> bool:
    """`index --rebuild` succeeded and search and stats answer as on the undamaged home."""
    return all(answered(case, k) for k in AFTER)


def refused_with_its_line(case: Case) -> bool:
    """config.toml is the user's own: `--rebuild` must not touch it, and says which line."""
    step = case.steps["rebuild"]
    return case.label == "config.toml" and step.code == 1 and "line" in step.output


# ---- the table -------------------------------------------------------------------------------
def report(template: Path, scratch: Path) -> list[Case]:
    expected = answers(template, scratch / "undamaged")
    cases = []
    for i, label in enumerate(targets(template)):
        for how in DAMAGES:
            cases.append(run_case(template, scratch / f"c{i}-{how}", label, how, expected))
    return cases


def render(cases: list[Case]) -> str:
    firsts = [k for k in FIRST if k != "doctor"]
    lines = [
        "| file | damage | first commands clean | doctor | --rebuild recovers |",
        "|---|---|---|---|---|",
    ]
    for c in cases:
        bad = [k for k in firsts if not clean(c, k)]
        first = "yes" if not bad else "no: " + ", ".join(f"{k} ({_gist(c.steps[k])})" for k in bad)
        doctor = f"exit {c.steps['doctor'].code}" + ("" if doctor_truthful(c) else " (wrong)")
        if recovered(c):
            rebuilt = "yes"
        elif refused_with_its_line(c):
            rebuilt = "refused, its line named (the user's file)"
        else:
            rebuilt = "no: " + _why_not(c)
        lines.append(f"| `{c.label}` | {c.how} | {first} | {doctor} | {rebuilt} |")
    n = len(cases)
    commands = n * len(firsts)
    unexpected = sum(c.steps[k].unexpected for c in cases for k in firsts)
    unclean = sum(not clean(c, k) for c in cases for k in firsts)
    harmful = [c for c in cases if not harmless(c)]
    crashed = sum(s.crashed is not None for c in cases for s in c.steps.values())
    lines += [
        "",
        f"cases: {n} ({len(harmful)} where a command fails, {n - len(harmful)} harmless)",
        f"first commands ({', '.join(firsts)}): {commands - unclean}/{commands} clean, "
        f"{unexpected} 'unexpected'",
        f"doctor exit 1 where a command fails: "
        f"{sum(c.steps['doctor'].code == 1 for c in harmful)}/{len(harmful)}; "
        f"doctor exit 1 on any damaged case: {sum(c.steps['doctor'].code == 1 for c in cases)}/{n}",
        f"recovered by --rebuild: {sum(recovered(c) for c in cases)}/{n} "
        f"(config.toml refused with its line: {sum(refused_with_its_line(c) for c in cases)}"
        f"/{sum(c.label == 'config.toml' for c in cases)})",
        f"escaped tracebacks: {crashed}",
    ]
    return "\n".join(lines)


def _gist(step: Step) -> str:
    if step.code == 0:
        return "answers differently"
    line = next((ln for ln in step.output.splitlines() if "error:" in ln), step.output[:80])
    return line.replace("|", "/").strip()[:100]


def _why_not(case: Case) -> str:
    for key in AFTER:
        step = case.steps[key]
        if not answered(case, key):
            return f"{key}: {_gist(step) if step.code else 'answers differently'}"
    return "?"


if __name__ == "__main__":  # python -m tests.damage [SCRATCH_DIR]
    import tempfile

    os.environ["CASPER_SERVICE"] = "0"
    root = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="damage-"))
    os.environ["HOME"] = str(root / "user-home")
    template = build_home(root / "template")
    print(render(report(template, root / "cases")))
