"""Model servers on loopback for the OpenAIEngine tests: the real `mlx_lm.server` (a process
serving a tiny self-built model) and a scripted stdlib HTTP server for what a real one can't be
made to do on demand (garbage, refusing `tools`, redirects).

Both bind 127.0.0.1 only; tests that use them carry `@pytest.mark.allow_hosts(LOOPBACK)`, which
lets the test process connect there and nowhere else (pytest-socket).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LOOPBACK = ["127.0.0.1"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class MlxServer:
    """A running `mlx_lm.server`; `log` is its stderr (one line per request it served)."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def completions_served(self) -> int:
        return self.log.read_text().count('"POST /v1/chat/completions HTTP/1.1" 200')

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGCONT)  # a test may have paused it
            self.proc.kill()
        self.proc.wait(timeout=30)


@contextlib.contextmanager
def mlx_server(model: Path, log: Path, *, max_tokens: int = 64) -> Iterator[MlxServer]:
    """`mlx_lm.server --model MODEL` on a free loopback port, ready (its /health answers)."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mlx_lm", "server", "--model", str(model), "--host",
             "127.0.0.1", "--port", str(port), "--max-tokens", str(max_tokens)],
            stdout=subprocess.DEVNULL, stderr=err, env=env,
        )  # fmt: skip
    server = MlxServer(proc, port, log)
    try:
        _wait_healthy(server)
        yield server
    finally:
        server.stop()


def _wait_healthy(server: MlxServer, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise AssertionError(f"mlx_lm.server exited:\n{server.log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/health", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("mlx_lm.server never answered /health")


# ---- a scripted server ------------------------------------------------------------------
@dataclass
class Seen:
    """One request a ScriptedServer received."""

    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: Any


Reply = Callable[[BaseHTTPRequestHandler, Seen], None]


@dataclass
class ScriptedServer:
    """A stdlib HTTP server on loopback whose every reply is `reply(handler, request)`."""

    reply: Reply
    seen: list[Seen] = field(default_factory=list)
    httpd: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.httpd is not None
        return int(self.httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def posts(self) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST"]


@contextlib.contextmanager
def scripted_server(reply: Reply) -> Iterator[ScriptedServer]:
    server = ScriptedServer(reply)

    class Handler(BaseHTTPRequestHandler):
        def _handle(self, method: str) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(size) if size else b""
            body = json.loads(raw) if raw else None
            headers = {k.lower(): v for k, v in self.headers.items()}
            seen = Seen(method, self.path, headers, body)
            server.seen.append(seen)
            server.reply(self, seen)

        def do_GET(self) -> None:  # noqa: N802 - http.server's names
            self._handle("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._handle("POST")

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    server.httpd = httpd
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def send_sse(handler: BaseHTTPRequestHandler, events: list[Any], *, done: bool = True) -> None:
    """A streamed chat completion: each event a `data:` line (dicts as JSON, str verbatim)."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        handler.wfile.write(f"data: {data}\n\n".encode())
        handler.wfile.flush()
    if done:
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()


def send_json(handler: BaseHTTPRequestHandler, status: int, doc: Any) -> None:
    data = json.dumps(doc).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def chunk(content: str | None = None, *, finish: str | None = None, **delta: Any) -> dict:
    """One `chat.completion.chunk` (its delta: `content` and whatever else is given)."""
    body = dict(delta)
    if content is not None:
        body["content"] = content
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "delta": body, "finish_reason": finish}],
    }


def usage_chunk(prompt: int, completion: int) -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
