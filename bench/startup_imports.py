"""Which imports inside functions the start-up paths need, and which could sit at the top.

    python -m bench.startup_imports [--json FILE] [--all]

Builds the demo home with the fake models, starts a test service on it, and runs every start-up
path as a fresh interpreter under `python -X importtime`: `--version`, `--help`, each command's
`--help`, the thin path and the typer client of the read commands against the running service,
`ask` and `serve --status` through it, `casper mcp` starting (service on and off), and the cold
`search --mode bm25` in-process (its budget: docs/performance.md). Each path's module set is
what it loads, first to last.

Then every import inside a function in casper/, ingest/ and eval/ (an AST walk) gets one
category, first match wins:

- heavy: a library kept out of module level by design (the backends' models, LanceDB, rich and
  prompt_toolkit in the CLI, mcp, matplotlib, dateparser, …: LAZY below);
- cycle: at module level it would close an import cycle (the module-level graph, parent
  packages included);
- startup: the importing module is on a start-up path that does not load the target, so at the
  top it would add the target to that path;
- free: moving it to the top loads nothing new on any start-up path.

A `from X import name` that a test monkeypatches (`X.name`) is marked: moved to the top it would
bind before the patch, so it moves as `import X` (or stays). Prints the counts, each path's size
and the free imports per file (`--all`: every import with its category and the paths it blocks).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("casper", "ingest", "eval")
# Kept out of module level on purpose (docs/architecture.md, tests/test_layers.py's HEAVY and the
# run-time check of `--help` and the client path): loading them costs seconds or drags in more.
LAZY = {
    "lancedb", "pyarrow", "numpy", "torch", "mlx", "mlx_lm", "sentence_transformers",
    "transformers", "tokenizers", "huggingface_hub", "onnx", "onnxruntime", "onnxscript",
    "rank_bm25", "dateparser", "tzlocal", "matplotlib", "openai", "mcp", "mcp_types", "anyio",
    "typer", "rich", "prompt_toolkit", "phonenumbers",
}  # fmt: skip
CHILD = "import sys; sys.argv = ['casper', *sys.argv[1:]]\nfrom casper.__main__ import main\nmain()"
READS = [
    ["search", "dinner"], ["search", "dinner", "--json"], ["show", "{rowid}"],
    ["show", "{rowid}", "--json"], ["stats"], ["stats", "Sam"], ["stats", "Sam", "--json"],
    ["contacts"], ["contacts", "--json"], ["chats"], ["chats", "--json"],
]  # fmt: skip
COMMANDS = [
    "ask", "chat", "chats", "index", "contacts", "stats", "show", "doctor", "demo", "eval", "mcp",
    "pull", "search", "serve", "export", "review",
]  # fmt: skip


@dataclass
class StartUpPath:
    name: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)


def start_up_paths(rowid: str) -> list[StartUpPath]:
    paths = [StartUpPath("--version", ["--version"]), StartUpPath("--help", ["--help"])]
    paths += [StartUpPath(f"{c} --help", [c, "--help"]) for c in COMMANDS]
    for args in READS:
        args = [a.format(rowid=rowid) for a in args]
        paths.append(StartUpPath("thin: " + " ".join(args), args))
        paths.append(StartUpPath("client: " + " ".join(args), args, {"CASPER_THIN": "0"}))
    paths += [
        StartUpPath("client: ask dinner --json", ["ask", "dinner", "--json"]),
        StartUpPath("client: serve --status", ["serve", "--status"]),
        StartUpPath("mcp start (service)", ["mcp"]),
        StartUpPath("mcp start (in-process)", ["mcp"], {"CASPER_SERVICE": "0"}),
        StartUpPath("cold: search --mode bm25 --json", ["search", "--mode", "bm25", "sushi", "--json"],
              {"CASPER_SERVICE": "0"}),
    ]  # fmt: skip
    return paths


def trace(path: StartUpPath, home: Path) -> set[str]:
    """The modules one path loads, from `-X importtime` of a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "CASPER_HOME": str(home), "CASPER_SERVICE": "1"}
    env.update(path.env)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", CHILD, *path.args],
        capture_output=True, text=True, env=env, cwd=REPO, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    found = {ln.rsplit("|", 1)[1].strip() for ln in proc.stderr.splitlines()
             if ln.startswith("import time:") and "|" in ln}  # fmt: skip
    found.discard("imported package")
    found |= _at_start()  # built in before -X importtime starts reporting (sys, builtins, …)
    if proc.returncode != 0:
        print(f"warning: {path.name} exited {proc.returncode}", file=sys.stderr)
    return found


@cache
def _at_start() -> set[str]:
    out = subprocess.run([sys.executable, "-c", "import sys; print(*sys.modules)"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return set(out.split())


# --- the imports -------------------------------------------------------------------------------


@dataclass
class FnImport:
    file: str
    line: int
    module: str  # the importing module
    text: str
    targets: list[str]  # modules the statement loads
    names: list[tuple[str, str]]  # (module, name) of a `from module import name`
    guarded: bool  # inside a try: (an optional library, or a failure handled)
    category: str = ""
    blocked_by: list[str] = field(default_factory=list)
    patched: list[str] = field(default_factory=list)


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def sources() -> dict[str, Path]:
    return {module_name(p): p for d in PACKAGES for p in sorted((REPO / d).rglob("*.py"))}


def _targets(node: ast.Import | ast.ImportFrom, known: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
    return [base, *subs]


def _walk(tree: ast.Module):  # noqa: ANN202 - yields (node, in_function, in_try, type_only)
    def visit(node: ast.AST, in_fn: bool, in_try: bool, type_only: bool):  # noqa: ANN202
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, in_fn, in_try, type_only
            fn = in_fn or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            tc = type_only or (
                isinstance(node, ast.If)
                and "TYPE_CHECKING" in ast.unparse(node.test)
                and child in node.body
            )
            yield from visit(child, fn, in_try or isinstance(child, ast.Try), tc)

    yield from visit(tree, False, False, False)


def function_imports(mods: dict[str, Path], known: set[str]) -> list[FnImport]:
    found = []
    for name, path in mods.items():
        for node, in_fn, in_try, _ in _walk(ast.parse(path.read_text())):
            if not in_fn:
                continue
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [(node.module, a.name) for a in node.names]
            found.append(
                FnImport(
                    str(path.relative_to(REPO)),
                    node.lineno,
                    name,
                    ast.unparse(node),
                    _targets(node, known),
                    names,
                    in_try,
                )  # fmt: skip
            )
    return found


def module_level_graph(mods: dict[str, Path], known: set[str]) -> dict[str, set[str]]:
    """module → the internal modules it loads when imported: its module-level imports (not the
    type-only ones) and the parent packages of each."""
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        edges: set[str] = set()
        for node, in_fn, _, type_only in _walk(ast.parse(path.read_text())):
            if not in_fn and not type_only:
                edges |= {t for t in _targets(node, known) if t in known}
        parts = name.split(".")
        edges |= {".".join(parts[:i]) for i in range(1, len(parts))} & known
        graph[name] = edges - {name}
    return graph


def reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return False


def patched_names() -> set[tuple[str, str]]:
    """(module, name) pairs the tests replace: monkeypatch.setattr / mock.patch, by object or by
    dotted string."""
    patched: set[tuple[str, str]] = set()
    for path in (REPO / "tests").rglob("*.py"):
        tree = ast.parse(path.read_text())
        alias: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                alias |= {(a.asname or a.name.split(".")[0]): (a.asname and a.name) or
                          a.name.split(".")[0] for a in node.names}  # fmt: skip
            elif isinstance(node, ast.ImportFrom) and node.module:
                alias |= {(a.asname or a.name): f"{node.module}.{a.name}" for a in node.names}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            func = ast.unparse(node.func)
            first = node.args[0]
            if func.endswith(("setattr", "patch", "patch.object")):
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    if (
                        "." in first.value
                        and len(node.args) >= 1
                        and func.endswith(("setattr", "patch"))
                    ):
                        mod, _, attr = first.value.rpartition(".")
                        patched.add((mod, attr))
                elif len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                    obj = ast.unparse(first)
                    head, _, rest = obj.partition(".")
                    mod = alias.get(head, head) + (f".{rest}" if rest else "")
                    patched.add((mod, str(node.args[1].value)))
    return patched


def classify(
    imports: list[FnImport], graph: dict[str, set[str]], loaded: dict[str, set[str]]
) -> None:
    patched = patched_names()
    for imp in imports:
        imp.patched = [f"{m}.{n}" for m, n in imp.names if (m, n) in patched]
        roots = {t.split(".")[0] for t in imp.targets}
        if roots & LAZY:
            imp.category = "heavy"
            continue
        if any(reaches(graph, t, imp.module) for t in imp.targets if t in graph):
            imp.category = "cycle"
            continue
        imp.blocked_by = [
            p for p, mods in loaded.items()
            if imp.module in mods and not all(t in mods for t in imp.targets)
        ]  # fmt: skip
        imp.category = "startup" if imp.blocked_by else "free"


# --- the run -----------------------------------------------------------------------------------


def demo_home(root: Path) -> Path:
    from ingest.synthetic import build_demo_corpus
    from tests.service_helpers import index_demo

    corpus = build_demo_corpus(root / "src")
    index_demo(root / "h", corpus.chat_db.parent)
    return root / "h"


def traced_paths(home: Path) -> dict[str, set[str]]:
    from tests.service_helpers import Services

    services = Services()
    try:
        services.start(home, "--no-auto-index", "--idle-minutes", "60")
        env = {**os.environ, "PYTHONPATH": str(REPO), "CASPER_HOME": str(home)}
        out = subprocess.run(
            [sys.executable, "-m", "casper", "search", "dinner", "--json"],
            capture_output=True, text=True, env=env, cwd=REPO, check=True,
        ).stdout  # fmt: skip
        rowid = str(json.loads(out)["hits"][0]["messages"][0]["id"])
        return {p.name: trace(p, home) for p in start_up_paths(rowid)}
    finally:
        services.close()


def report(imports: list[FnImport], loaded: dict[str, set[str]], show_all: bool) -> None:
    internal = [i for i in imports if i.targets[0].split(".")[0] in PACKAGES]
    print(f"imports inside functions: {len(imports)} ({len(internal)} of casper/ingest/eval)")
    for cat in ("heavy", "cycle", "startup", "free"):
        some = [i for i in imports if i.category == cat]
        own = sum(1 for i in some if i in internal)
        print(f"  {cat:8} {len(some):4}  ({own} internal, {len(some) - own} external)")
    print("\nstart-up paths (modules loaded; casper/ingest/eval among them):")
    for name, mods in loaded.items():
        ours = sum(1 for m in mods if m.split(".")[0] in PACKAGES)
        print(f"  {len(mods):5} {ours:4}  {name}")
    blockers = Counter(p for i in imports for p in i.blocked_by)
    print("\npaths that keep imports inside functions (imports blocked):")
    for name, n in blockers.most_common():
        print(f"  {n:4}  {name}")
    by_file: dict[str, list[FnImport]] = defaultdict(list)
    for imp in imports:
        if show_all or imp.category == "free":
            by_file[imp.file].append(imp)
    print("\n" + ("every import inside a function" if show_all else "free to move to the top"))
    for file, some in sorted(by_file.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"{file} ({len(some)})")
        for imp in some:
            mark = f"  [patched in tests: {', '.join(imp.patched)}]" if imp.patched else ""
            cat = f"{imp.category:8} " if show_all else ""
            print(f"  {imp.line:5}  {cat}{imp.text}{mark}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="write every import and path set here")
    parser.add_argument("--all", action="store_true", help="list every category, not only free")
    args = parser.parse_args()
    mods = sources()
    known = set(mods)
    root = Path(tempfile.mkdtemp(prefix="casper-imports-", dir="/tmp"))  # short AF_UNIX paths
    try:
        loaded = traced_paths(demo_home(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    imports = function_imports(mods, known)
    classify(imports, module_level_graph(mods, known), loaded)
    report(imports, loaded, args.all)
    if args.json:
        document = {
            "paths": {k: sorted(v) for k, v in loaded.items()},
            "imports": [asdict(i) for i in imports],
        }
        args.json.write_text(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
