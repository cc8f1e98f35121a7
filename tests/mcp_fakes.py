"""`casper mcp` with the test models (hash embedder, overlap reranker), for the MCP tests'
in-process path: python -m tests.mcp_fakes --home H --no-service.

The real command runs unchanged; only `casper.backends.factory` is swapped, as
tests/service_server.py does for the service (a subprocess is out of monkeypatch's reach).
"""

from __future__ import annotations

import sys

from tests.service_server import install

if __name__ == "__main__":
    install({"embedder", "reranker", "engine"}, 0.0)
    from casper.cli import app

    app(["mcp", *sys.argv[1:]], prog_name="casper")
