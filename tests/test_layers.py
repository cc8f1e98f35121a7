"""The import rules of the architecture (README "Layers"), checked with an AST walk."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = {
    "sqlite3",
    "lancedb",
    "pyarrow",
    "mlx",
    "mlx_lm",
    "torch",
    "sentence_transformers",
    "transformers",
    "typer",
    "rich",
    "rank_bm25",
}
PURE = [
    "casper/stats.py",
    "casper/people.py",
    "casper/chunking.py",
    "casper/fusion.py",
    "casper/query.py",
    "casper/ingest_rows.py",
    "casper/agent/core.py",
    "casper/agent/grounding.py",
    "casper/agent/replies.py",
    "casper/agent/prompts.py",
    "casper/agent/enrich.py",
    "casper/agent/date_rules.py",
    "casper/agent/holiday_dates.py",
    "casper/followup.py",
    # not casper/backends/toolcalls.py: it reads tool calls with mlx_lm.tool_parsers, imported
    # inside a function (test_backends_stay_adapters keeps its top level light;
    # tests/unit/test_tool_parsers.py holds it to stdlib + that one library package)
    "ingest/body.py",
    "ingest/dates.py",
    "ingest/summary_info.py",
    "ingest/payload.py",
    "ingest/row_text.py",
    "eval/metrics.py",
]
LEAF = [
    "casper/config.py",
    "casper/errors.py",
    "casper/protocols.py",
    "casper/records.py",
    "casper/ingest_report.py",
]
USE_CASES = [
    "casper/pipeline.py",
    "casper/ingest_parallel.py",
    "casper/ingest_check.py",
    "casper/ingest_changes.py",
    "casper/ingest_people.py",
    "casper/ingest_stats.py",
    "casper/indexing.py",
    "casper/retrieve.py",
    "casper/stats_query.py",
    "casper/answer.py",
    "casper/agent/tools.py",
    "casper/agent/loop.py",
    "casper/agent/prefetch.py",
]


def imports(path: Path, *, top_level_only: bool = False) -> set[str]:
    """Modules a file imports (absolute names); optionally only those at module level."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def files(*dirs: str) -> list[Path]:
    return [p for d in dirs for p in sorted((REPO / d).rglob("*.py"))]


def _starts(names: set[str], prefixes: set[str]) -> set[str]:
    return {n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes)}


@pytest.mark.parametrize("path", files("ingest"), ids=str)
def test_ingest_knows_nothing_of_casper(path: Path) -> None:
    assert not _starts(imports(path), {"casper", "eval", "tests"})


@pytest.mark.parametrize("rel", PURE)
def test_pure_modules_have_no_io(rel: str) -> None:
    assert not _starts(imports(REPO / rel), HEAVY | {"time", "random", "os", "subprocess"})


@pytest.mark.parametrize("rel", LEAF)
def test_leaf_modules_import_only_leaves(rel: str) -> None:
    casper = _starts(imports(REPO / rel), {"casper"})
    assert casper <= {"casper.errors"}


@pytest.mark.parametrize("path", files("casper/store"), ids=str)
def test_store_does_not_reach_up(path: Path) -> None:
    banned = {"casper.agent", "casper.backends", "casper.cli", "casper.commands", "casper.answer"}
    assert not _starts(imports(path), banned)


@pytest.mark.parametrize("rel", USE_CASES)
def test_use_cases_get_backends_passed_in(rel: str) -> None:
    assert not _starts(imports(REPO / rel), {"casper.backends", "casper.cli", "casper.commands"})


@pytest.mark.parametrize("path", files("casper/backends"), ids=str)
def test_backends_stay_adapters(path: Path) -> None:
    banned = {
        "casper.store",
        "casper.retrieve",
        "casper.agent",
        "casper.cli",
        "casper.commands",
        "casper.pipeline",
    }
    assert not _starts(imports(path), banned)
    # heavy libraries only inside functions, so importing a backend module stays cheap
    assert not _starts(imports(path, top_level_only=True), HEAVY - {"sqlite3"})


@pytest.mark.parametrize("path", files("casper/backends"), ids=str)
def test_adapters_never_import_the_factory(path: Path) -> None:
    # the factory imports the adapters; the reverse would be an import circle
    if path.name != "factory.py":
        assert "casper.backends.factory" not in imports(path)


@pytest.mark.parametrize("path", files("casper", "ingest", "eval"), ids=str)
def test_product_code_never_imports_tests(path: Path) -> None:
    assert not _starts(imports(path), {"tests", "notebooks", "bench"})


def test_one_composition_root_builds_backends() -> None:
    """Only casper/runtime.py (and the backends themselves) reach the concrete backends:
    the CLI, the service and the eval harness all build through it."""
    allowed = {REPO / "casper/runtime.py"}
    for path in files("casper", "eval"):
        if path in allowed or "casper/backends" in str(path):
            continue
        found = _starts(imports(path), {"casper.backends"})
        if (
            path == REPO / "casper/doctor.py"
        ):  # reads the remembered reranker notice, builds nothing
            found -= {"casper.backends.optional"}
        assert not found, path


@pytest.mark.parametrize("rel", ["casper/service/protocol.py", "casper/service/client.py"])
def test_service_client_side_is_stdlib_only(rel: str) -> None:
    """The client half of the service: stdlib, casper.errors and the protocol, nothing else."""
    found = imports(REPO / rel)
    casper = _starts(found, {"casper"})
    assert casper <= {"casper", "casper.errors", "casper.service", "casper.service.protocol"}
    assert not _starts(found, HEAVY | {"numpy"})


@pytest.mark.parametrize("path", files("casper/commands"), ids=str)
def test_commands_load_nothing_heavy_at_import(path: Path) -> None:
    """Command modules import the work (runtime, store, use-cases) inside functions, so a
    command that talks to the service stays a thin client (checked at run time too)."""
    top = imports(path, top_level_only=True)
    light = {"casper.commands", "casper.config", "casper.errors", "casper.timeutil"}
    assert _starts(top, {"casper"}) <= _starts(top, light), path
    assert not _starts(top, HEAVY - {"typer", "rich"} | {"numpy"})


def test_eval_only_enters_through_the_eval_command() -> None:
    for path in files("casper"):
        if path.name == "evaluate.py":
            continue
        assert not _starts(imports(path), {"eval"}), path


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in `graph` (module → modules it imports), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, with `from pkg import sub` counted as pkg.sub as well."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


@pytest.mark.parametrize("package", ["eval", "casper"])
def test_no_import_cycles(package: str) -> None:
    """Imports inside functions count too: a lazy import hides a cycle, it does not remove it."""
    modules = {_module_name(p): p for p in files(package)}
    graph = {
        name: (_imported_modules(path) & set(modules)) - {name} for name, path in modules.items()
    }
    assert _cycle(graph) is None, " → ".join(_cycle(graph) or [])


def test_vector_search_state_does_not_import_the_index() -> None:
    """store/index.py builds on store/vectors.py; the reverse (even for a type) was a circle."""
    for rel in ("casper/store/vectors.py", "casper/store/vector_cache.py",
                "casper/store/vector_file.py", "casper/store/sign_bits.py"):  # fmt: skip
        assert not _starts(_imported_modules(REPO / rel), {"casper.store.index"}), rel
