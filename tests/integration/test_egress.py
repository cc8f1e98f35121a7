"""Nothing leaves, checked end to end: the whole product, as processes, under a fresh HOME.

`casper demo`, `index`, `search` (which starts the background service, as by default), `ask`
(answered by a scripted model server on loopback), `mcp` (driven by the MCP SDK's own client,
through that service), `eval`, `doctor` and `serve --stop` each run in their own Python
process with an empty HOME, no XDG folders and a TMPDIR inside the sandbox. Every process
loads tests/egress/sitecustomize.py, an audit hook that records each file opened for writing, folder
made, path renamed to, SQLite file opened, and socket made, bound or connected. Native code
(onnxruntime's C++, LanceDB's Rust) writes without audit events, so HOME and TMPDIR are also
walked before and after.

The test fails on any file or folder made outside the data dir (~/.casper) and Casper's cache
(~/.cache/casper), on anything left in TMPDIR (temporary files used and removed are fine), and on
any socket that is not AF_UNIX or a connection to the configured loopback server.

The corpus is the tiny demo (tests/egress/tiny_casper.py) so the run takes seconds; the ONNX
export is copied in from the test model cache when one was made there (a first run exports).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
import pytest

from tests.conftest import MODEL_CACHE
from tests.model_servers import LOOPBACK, chunk, scripted_server, send_sse, usage_chunk

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
EGRESS = REPO / "tests" / "egress"
RUNNER = EGRESS / "tiny_casper.py"
PATH_KINDS = {"write", "os.mkdir", "os.rename", "os.symlink", "os.link", "shutil.copyfile",
              "shutil.copytree", "shutil.move", "sqlite3"}  # fmt: skip
SOCKET_KINDS = {"socket", "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"}
ANSWER = "Sam is bringing the pumpkin pie."


@dataclass
class Sandbox:
    root: Path
    home: Path  # the fresh HOME
    tmp: Path  # TMPDIR
    log: Path  # the audit hook's JSON lines

    @property
    def data(self) -> Path:
        return self.home / ".casper"

    @property
    def cache(self) -> Path:
        """Casper's cache where it is by default (casper.telemetry.cache_dir)."""
        if sys.platform == "darwin":
            return self.home / "Library" / "Caches" / "casper"
        return self.home / ".cache" / "casper"

    @property
    def demo(self) -> Path:
        return self.data / "demo"

    def env(self, *, service: bool = False) -> dict[str, str]:
        """A user's environment, minus everything that would point outside the sandbox; no
        offline or telemetry switch: Casper must set those itself. `service`: commands start
        the background service (as by default) instead of running in-process."""
        keep = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL") if k in os.environ}
        return {
            **keep,
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "PYTHONPATH": os.pathsep.join([str(EGRESS), str(REPO)]),
            "PYTHONDONTWRITEBYTECODE": "1",  # the checkout's own bytecode is not the product's
            "CASPER_SERVICE": "1" if service else "0",
            "CASPER_EGRESS_LOG": str(self.log),
        }


def make_sandbox(root: Path) -> Sandbox:
    box = Sandbox(root, root / "home", root / "tmp", root / "audit.jsonl")
    box.home.mkdir(mode=0o700)
    box.tmp.mkdir(mode=0o700)
    exported = MODEL_CACHE / "onnx"
    if exported.is_dir():  # the checked export, as a user has it after their first index
        shutil.copytree(exported, box.cache / "onnx", symlinks=True)
        for folder in (box.cache.parent, box.cache, box.cache / "onnx"):
            folder.chmod(0o700)
    return box


def casper(box: Sandbox, *args: str, service: bool = False) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, str(RUNNER), *args],
        env=box.env(service=service), cwd=box.root, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"casper {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def tree(root: Path) -> set[Path]:
    return set(root.rglob("*")) if root.exists() else set()


def within(path: Path, *roots: Path) -> bool:
    return any(path == r or r in path.parents for r in roots)


def sqlite_path(database: str) -> tuple[Path, bool]:
    """The file a sqlite3.connect opened, and whether it was read-only (`file:…?mode=ro`)."""
    if database.startswith("file:"):
        url = urlsplit(database[database.index("file:") :])
        return Path(unquote(url.path)), "mode=ro" in url.query
    return Path(database), False


def audit(box: Sandbox) -> list[dict[str, Any]]:
    return [json.loads(line) for line in box.log.read_text().splitlines() if line.strip()]


def stray_files(box: Sandbox, before: set[Path], records: list[dict[str, Any]]) -> list[str]:
    """Files and folders made outside the data dir and the cache: seen by the audit hook or left
    in HOME, and anything left in TMPDIR."""
    allowed = (box.data, box.cache, box.tmp)
    ancestors = {p for root in (box.data, box.cache) for p in root.parents}
    found = set()
    for r in records:
        if r["kind"] not in PATH_KINDS:
            continue
        raw = r["path"]
        if r["kind"] == "sqlite3":
            path, read_only = sqlite_path(raw[raw.find("file:") :] if "file:" in raw else raw)
            if read_only:
                continue
        else:
            path = Path(raw)
        if path in ancestors or within(path, *allowed) or str(path).startswith("/dev/"):
            continue
        found.add(f"{r['kind']} {path}")
    for path in tree(box.home) - before:
        if not within(path, box.data, box.cache) and path not in ancestors:
            found.add(f"left {path}")
    found |= {f"left {path}" for path in tree(box.tmp)}
    return sorted(found)


def stray_sockets(records: list[dict[str, Any]], server_port: int) -> list[str]:
    """Sockets that are not AF_UNIX and not a connection to the loopback model server."""
    server = ["127.0.0.1", server_port]
    talked = {r["pid"] for r in records if r["kind"] == "socket.connect" and r["address"] == server}
    found = []
    for r in records:
        if r["kind"] not in SOCKET_KINDS or r.get("family") == socket.AF_UNIX:
            continue
        if r["kind"] == "socket.connect" and r["address"] == server:
            continue
        if r["kind"] == "socket" and r["pid"] in talked:
            continue  # the socket that connection was made on
        found.append(json.dumps(r))
    found += [json.dumps(r) for r in records if r["kind"] == "socket.getaddrinfo"
              and r["host"] not in ("127.0.0.1", "localhost")]  # fmt: skip
    return found


def mcp_session(box: Sandbox) -> dict[str, Any]:
    """`casper mcp` on the demo home, driven by the SDK's stdio client: list and call tools
    (through the running service, as by default)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=[str(RUNNER), "mcp", "--home", str(box.demo)],
        env=box.env(service=True), cwd=str(box.root),
    )  # fmt: skip

    async def main() -> dict[str, Any]:
        with open(box.root / "mcp-stderr.log", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = (await session.list_tools()).tools
                found = await session.call_tool("search_messages", {"query": "thanksgiving"})
                return {"tools": len(tools), "search": found.content[0].text}  # type: ignore[union-attr]

    return anyio.run(main)


def _answer(handler: Any, seen: Any) -> None:
    send_sse(handler, [chunk(ANSWER), chunk(finish="stop"), usage_chunk(100, 8)])


@pytest.fixture
def short_root() -> Iterator[Path]:
    """The sandbox under a short path: the service's socket then fits in the data dir (a long
    one goes to a private folder in TMPDIR, casper.service.protocol.socket_path)."""
    root = Path(tempfile.mkdtemp(prefix="egress-", dir="/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.allow_hosts(LOOPBACK)
def test_the_whole_product_writes_only_its_folders_and_talks_only_to_loopback(
    short_root: Path, services: Any
) -> None:
    box = make_sandbox(short_root)
    before = tree(box.home)
    home = ["--home", str(box.demo)]
    services.watch(box.demo)  # the service `search` starts is stopped whatever happens
    with scripted_server(_answer) as server:
        casper(box, "demo")
        casper(box, *home, "index", "--json")
        found = json.loads(
            casper(box, *home, "search", "thanksgiving", "--json", service=True).stdout
        )
        asked = casper(box, *home, "ask", "what is Sam bringing to thanksgiving?", "--base-url",
                       server.base_url, "--model", "scripted", "--json")  # fmt: skip
        seen = mcp_session(box)
        gold = box.demo / "source" / "gold.jsonl"
        casper(box, *home, "eval", "--dataset", str(gold), "--mode", "bm25", "--mode", "vector",
               "--unit", "8x4", "-k", "5", "--no-rerank")  # fmt: skip
        doctor = json.loads(casper(box, *home, "doctor", "--json").stdout)
        posts = len(server.posts())
        casper(box, *home, "serve", "--stop")
    records = audit(box)
    files, sockets = stray_files(box, before, records), stray_sockets(records, server.port)
    shown = [p.replace(str(box.root), "$SANDBOX") for p in files + sockets]
    assert (files, sockets) == ([], []), (
        f"{len(files)} stray files, {len(sockets)} stray sockets:\n" + "\n".join(shown)
    )
    # each step did its work (an empty run would leave nothing to find)
    assert len({r["pid"] for r in records}) >= 9  # every command's process, and the service's
    assert found["hits"], found
    assert posts >= 1 and json.loads(asked.stdout)["answer"]  # ask went to the server
    assert seen["tools"] == 5 and "thanksgiving" in seen["search"].lower()
    lines = {c["name"]: c for c in doctor["checks"]}
    assert lines["telemetry"]["status"] == lines["model cache"]["status"] == "ok", lines
    # the onnxruntime copy's sha256, recorded in the data dir (casper.backends.onnx_cache)
    ledger = box.demo / "onnx_copies.json"
    assert ledger.stat().st_mode & 0o777 == 0o600 and "model.onnx" in ledger.read_text()
