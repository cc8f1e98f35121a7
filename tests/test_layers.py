"""The import rules of the architecture (docs/architecture.md, "Layers and folder map"), checked
with an AST walk."""

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
    "onnxruntime",
    "onnx",
    "onnxscript",
    "tokenizers",
}
PURE = [
    "casper/stats.py",
    "casper/app/stats_series.py",
    "casper/app/export_formats.py",
    "casper/indexer/people.py",
    "casper/indexer/chunking.py",
    "casper/search/fusion.py",
    "casper/search/query.py",
    "casper/indexer/rows.py",
    "casper/agent/core.py",
    "casper/agent/grounding.py",
    "casper/agent/replies.py",
    "casper/agent/prompts.py",
    "casper/agent/enrich.py",
    "casper/dates/rules.py",
    "casper/dates/holidays.py",
    "casper/agent/followup.py",
    "casper/agent/redact.py",
    "casper/agent/quoting.py",
    "casper/agent/schema_check.py",
    "casper/agent/tool_args.py",
    "casper/dates/phrases.py",
    "casper/index/chunk_text.py",
    "eval/feedback.py",
    "casper/search/words.py",
    # not casper/backends/toolcalls.py: it reads tool calls with mlx_lm.tool_parsers, imported
    # inside a function (test_backends_import_heavy_libraries_inside_functions keeps its top
    # level light; tests/unit/test_tool_parsers.py holds it to stdlib + that one package)
    "ingest/body.py",
    "ingest/dates.py",
    "ingest/summary_info.py",
    "ingest/payload.py",
    "ingest/row_text.py",
    "eval/metrics.py",
]
LEAF = [
    "casper/config.py",
    "casper/datadir.py",
    "casper/errors.py",
    "casper/events.py",
    "casper/protocols.py",
    "casper/records.py",
    "casper/setting_values.py",
    "casper/telemetry.py",
    "casper/vocab.py",
    "casper/indexer/report.py",
]
USE_CASES = [
    *(str(p.relative_to(REPO)) for p in sorted((REPO / "casper/indexer").glob("*.py"))),
    *(str(p.relative_to(REPO)) for p in sorted((REPO / "casper/search").glob("*.py"))),
    *(str(p.relative_to(REPO)) for p in sorted((REPO / "casper/agent").glob("*.py"))),
    "casper/store/stats_query.py",
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
    assert casper <= {"casper.errors", "casper.vocab", "casper.setting_values", "casper.datadir"}


@pytest.mark.parametrize("rel", USE_CASES)
def test_use_cases_get_backends_passed_in(rel: str) -> None:
    assert not _starts(imports(REPO / rel), {"casper.backends", "casper.cli"})


@pytest.mark.parametrize("path", files("casper/backends"), ids=str)
def test_backends_import_heavy_libraries_inside_functions(path: Path) -> None:
    """Importing a backend module stays cheap: mlx, torch and friends load when a model does."""
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
    """Only casper.app (and the backends themselves) reach the concrete backends: the CLI, the
    service and the eval harness all build through casper.app.runtime."""
    for path in files("casper", "eval"):
        if "casper/app/" in str(path) or "casper/backends/" in str(path):
            continue
        assert not _starts(imports(path), {"casper.backends"}), path


@pytest.mark.parametrize("rel", ["casper/service/protocol.py", "casper/service/client.py"])
def test_service_client_side_is_stdlib_only(rel: str) -> None:
    """The client half of the service: stdlib, casper.errors, casper.events (the progress
    events, stdlib only) and the protocol, nothing else."""
    found = imports(REPO / rel)
    casper = _starts(found, {"casper"})
    allowed = {"casper", "casper.errors", "casper.events", "casper.service",
               "casper.service.protocol"}  # fmt: skip
    assert casper <= allowed
    assert not _starts(found, HEAVY | {"numpy"})


@pytest.mark.parametrize("path", files("casper/cli"), ids=str)
def test_commands_load_nothing_heavy_at_import(path: Path) -> None:
    """Command modules import the work (runtime, store, use-cases) inside functions, so a
    command that talks to the service stays a thin client (checked at run time too)."""
    top = imports(path, top_level_only=True)
    light = {"casper.cli", "casper.config", "casper.errors", "casper.dates.zones",
             "casper.agent.followup", "casper.vocab", "casper.plaintext"}  # fmt: skip
    assert _starts(top, {"casper"}) <= _starts(top, light), path
    assert not _starts(top, HEAVY - {"typer", "rich"} | {"numpy"})


def test_what_the_cli_reads_before_a_request_is_stdlib_only() -> None:
    """The vocabularies (typer's choices) and the request checks run in the client process
    before anything is sent to the service: stdlib and casper.errors, nothing heavier."""
    for rel in ("casper/vocab.py", "casper/app/requests.py"):
        casper = _starts(imports(REPO / rel), {"casper"})
        assert casper <= {"casper.errors", "casper.vocab"}, rel
        assert not _starts(imports(REPO / rel), HEAVY | {"numpy"}), rel


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


def _imported_modules(path: Path, known: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """Every module a file imports. `from pkg import sub` counts as pkg.sub when that is one of
    the `known` modules (a submodule), else as pkg (a name defined in pkg)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
    return found


def _graph() -> dict[str, set[str]]:
    """module → the modules of casper, eval and ingest it imports (lazy imports included)."""
    modules = {_module_name(p): p for p in files("casper", "eval", "ingest")}
    known = set(modules)
    return {
        name: (_imported_modules(path, known) & known) - {name} for name, path in modules.items()
    }


def test_no_import_cycles() -> None:
    """Across casper, eval and ingest together: imports inside functions count too (a lazy
    import hides a cycle, it does not remove it)."""
    graph = _graph()
    assert _cycle(graph) is None, " → ".join(_cycle(graph) or [])


# Bottom to top: a module may import its own unit and the layers below, never a layer above and
# never a sibling on its own layer (store, index and backends know nothing of each other).
LAYERS: list[set[str]] = [
    {"ingest"},
    {"casper", "casper.errors", "casper.records", "casper.protocols", "casper.vocab"},
    {"casper.setting_values"},
    {"casper.config", "casper.stats"},
    {"casper.dates"},
    {"casper.store", "casper.index", "casper.backends"},
    {"casper.indexer"},
    {"casper.search"},
    {"casper.agent"},
    {"casper.app"},
    {"casper.service"},
    {"eval"},
    {"casper.cli"},
    {"casper.__main__", "eval.__main__"},  # entry points
]


def unit_of(module: str) -> str:
    """The layer unit a module belongs to: the longest unit name that is it or contains it."""
    units = [u for layer in LAYERS for u in layer if module == u or module.startswith(u + ".")]
    if not units:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return max(units, key=len)


def _rank(unit: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if unit in layer)


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import that goes up a layer or sideways to a sibling unit."""
    found = []
    for module, targets in sorted(graph.items()):
        here = unit_of(module)
        for target in sorted(targets):
            there = unit_of(target)
            if there != here and _rank(there) >= _rank(here):
                found.append(f"{module} → {target} ({here} must not import {there})")
    return found


def test_folders_are_layers() -> None:
    """Every import goes down a layer: no climbs back up, so no cycles between folders."""
    assert layer_violations(_graph()) == []


def test_every_casper_folder_has_a_layer() -> None:
    """A new folder must be placed in LAYERS (unit_of fails loudly otherwise), and the top
    level keeps a handful of plain modules."""
    for path in files("casper", "eval", "ingest"):
        unit_of(_module_name(path))
    top = sorted(p.name for p in (REPO / "casper").glob("*.py"))
    # 9: telemetry, the one switch every command and adapter shares; 10: events, the progress
    # every layer sends and the service client and the views read; 11: vocab, the closed
    # vocabularies every layer speaks, named once; 12: setting_values, how a setting's value is
    # checked, apart from config's list of Casper's settings (which alone had passed 600 lines);
    # 13: plaintext, what people wrote without the control characters a terminal acts on, which
    # the tools' quoting, the exports and every console share
    assert len(top) <= 13, top


def test_layer_check_catches_a_climb() -> None:
    """The checker itself: an import up (store → agent), sideways (index → store) and a
    folder loop are all reported."""
    graph = {
        "casper.store.db": {"casper.agent.tools"},
        "casper.index.vectors": {"casper.store.db"},
        "casper.agent.tools": {"casper.store.db"},
    }
    assert len(layer_violations(graph)) == 2


def test_vector_search_state_does_not_import_the_index() -> None:
    """index/chunk_index.py builds on index/vectors.py; the reverse (even for a type) was a
    circle."""
    for rel in ("casper/index/vectors.py", "casper/index/vector_cache.py",
                "casper/index/vector_file.py", "casper/index/sign_bits.py"):  # fmt: skip
        assert not _starts(_imported_modules(REPO / rel), {"casper.index.chunk_index"}), rel
