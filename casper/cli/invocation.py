"""Commands a person can paste: how this `casper` was started and which data dir it used.

Hints and the demo's closing lines print whole command lines. They must work when pasted as
printed: the same executable (`casper` on PATH, `.venv/bin/casper` after `make demo`, or
`python -m casper`) and `--home` whenever the data dir is not the one a bare command would use.

Imports: stdlib, casper.config, casper.errors, casper.cli.usage.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

from casper.cli.usage import typed_args
from casper.config import Config, default_home
from casper.errors import IndexMissing

DEMO = "demo"  # `casper demo` keeps its own home here, inside the data dir


def _shown_path(path: Path) -> str:
    """A path for a shell: `~/…` under the home folder (the shell expands it), else relative
    to the current folder when inside it, else absolute; quoted where needed."""
    path = Path(os.path.abspath(path))
    home = Path.home()
    try:
        rest = path.relative_to(home)
        return "~" if str(rest) == "." else "~/" + shlex.quote(str(rest))
    except ValueError:
        pass
    try:
        rel = path.relative_to(Path.cwd())
        return shlex.quote(str(rel) if str(rel).startswith(".") else f"./{rel}")
    except ValueError:
        return shlex.quote(str(path))


def _same_file(a: str | None, b: str) -> bool:
    return a is not None and os.path.realpath(a) == os.path.realpath(b)


def casper_command() -> str:
    """How to start this same Casper again: `casper` when that is what PATH finds, else the
    path it was started by, or `python -m casper` for a module run."""
    argv0 = sys.argv[0] if sys.argv else ""
    name = os.path.basename(argv0)
    if name == "__main__.py" and os.path.basename(os.path.dirname(argv0)) == "casper":
        # python -m casper
        python = os.path.basename(sys.executable)
        found = shutil.which(python)
        exe = python if _same_file(found, sys.executable) else _shown_path(Path(sys.executable))
        return f"{exe} -m casper"
    if name == "casper" and os.sep in argv0 and not _same_file(shutil.which("casper"), argv0):
        return _shown_path(Path(argv0))  # e.g. .venv/bin/casper before the venv is activated
    return "casper"


def command_line(data_dir: Path, *words: str) -> str:
    """`casper [--home DIR] WORDS…` for this data dir, ready to paste."""
    parts = [casper_command()]
    if Path(data_dir).expanduser().resolve() != default_home().expanduser().resolve():
        parts += ["--home", _shown_path(Path(data_dir))]
    return " ".join(parts + [shlex.quote(w) for w in words])


def _gave_home(args: list[str]) -> bool:
    return any(a == "--home" or a.startswith("--home=") for a in args)


def missing_index(cfg: Config) -> IndexMissing:
    """ "Nothing indexed" for a read command; when `casper demo` built its index inside this
    data dir, point at it (the same command with `--home`) before suggesting `casper index`,
    which reads the person's real Messages."""
    shown = _shown_path(cfg.data_dir)
    demo = cfg.data_dir / DEMO
    if not (demo / "casper.sqlite").exists():
        return IndexMissing(
            f"nothing indexed yet in {shown}",
            hint=f"run `{command_line(cfg.data_dir, 'index')}` to read your Messages (or "
            f"`{command_line(cfg.data_dir, 'demo')}` to try the synthetic demo first)",
        )
    args = typed_args()
    if args and not _gave_home(args):
        again = command_line(demo, *args)
        try_it = f"`{again}`"
    else:
        try_it = f"add `--home {_shown_path(demo)}` to the command"
    return IndexMissing(
        f"nothing indexed yet in {shown}",
        hint=f"the demo's index is in {_shown_path(demo)}: {try_it} "
        f"(`{command_line(cfg.data_dir, 'index')}` would read your own Messages into {shown})",
    )
