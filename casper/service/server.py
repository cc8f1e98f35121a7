"""The service: a threaded Unix-socket server around one warm Runtime.

One process per data dir, guaranteed by an exclusive flock on `service.lock` held for the
process's life (so a socket left by a dead service is known to be stale and is replaced).
Data access (SQLite, LanceDB, the embedder and reranker) is serialised by one lock; the chat
model has its own lock and runs with the data lock released, so a search is not stuck behind a
long answer. Logs go to stderr and never contain message text or queries.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import socketserver
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from casper.app.runtime import Runtime
from casper.config import Config, load_config
from casper.errors import CasperError
from casper.service import protocol
from casper.service.autoindex import AutoIndexer

log = logging.getLogger("casper.service")


class AlreadyRunning(CasperError):
    default_hint = "stop it with `casper serve --stop`, or use the running one"


@contextmanager
def _released(lock: threading.Lock) -> Iterator[None]:
    """Run a block with a lock this thread holds temporarily given up."""
    lock.release()
    try:
        yield
    finally:
        lock.acquire()


class _LockedEngine:
    """An Engine whose calls give up the data lock and take the model lock."""

    def __init__(self, inner: Any, data_lock: threading.Lock, engine_lock: threading.Lock):
        self._inner, self._data, self._model = inner, data_lock, engine_lock

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def chat(self, *args: Any, **kwargs: Any) -> Any:
        with _released(self._data), self._model:
            return self._inner.chat(*args, **kwargs)


class ServiceRuntime(Runtime):
    """A Runtime whose chat model loads and runs under the model lock, not the data lock."""

    def __init__(self, cfg: Config, data_lock: threading.Lock, engine_lock: threading.Lock):
        super().__init__(cfg)
        self.data_lock, self.engine_lock = data_lock, engine_lock

    def engine(self, model: str | None = None) -> tuple[Any, Any]:
        with _released(self.data_lock), self.engine_lock:
            engine, failure = super().engine(model)
        if engine is None:
            return None, failure
        return _LockedEngine(engine, self.data_lock, self.engine_lock), None


def _config_stamp(home: Path) -> tuple[int, int] | None:
    try:
        st = (home / "config.toml").stat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size


def _rss_mb() -> float | None:
    """Resident memory now (Linux /proc), else the peak from getrusage (macOS: bytes)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


class Service:
    """State shared by the request threads: the runtime, locks, counters, the idle clock."""

    def __init__(self, home: Path, idle_s: float) -> None:
        self.home = home
        self.idle_s = idle_s
        self.data_lock = threading.Lock()
        self.engine_lock = threading.Lock()
        self.state_lock = threading.Lock()
        self.started = time.time()
        self.last_active = time.monotonic()
        self.inflight = 0
        self.served: Counter[str] = Counter()
        self.stopping = threading.Event()
        self.server: socketserver.BaseServer | None = None
        self.auto: AutoIndexer | None = None  # None: started with --no-auto-index
        self._config_stamp = _config_stamp(home)
        self.rt = ServiceRuntime(load_config(home), self.data_lock, self.engine_lock)

    @property
    def cfg(self) -> Config:
        return self.rt.cfg

    # called with the data lock held
    def current_runtime(self) -> ServiceRuntime:
        """Reload on a config.toml change (models too); reopen data when `casper index` published
        a new run (the index's generation record)."""
        stamp = _config_stamp(self.home)
        if stamp != self._config_stamp:
            log.info("config.toml changed: rebuilding everything")
            self._config_stamp = stamp
            self.rt = ServiceRuntime(load_config(self.home), self.data_lock, self.engine_lock)
        elif self.rt.refresh():
            number = self.rt.generation.number
            log.info("index generation %d: reopening the store and index", number)
        return self.rt

    def status(self) -> dict[str, Any]:
        with self.state_lock:
            inflight, served = self.inflight, dict(self.served)
        return {
            "running": True,
            "pid": os.getpid(),
            "version": protocol.build_id(),
            "data_dir": str(self.home),
            "socket": str(protocol.socket_path(self.home)),
            "uptime_s": round(time.time() - self.started, 1),
            "rss_mb": _rss_mb(),
            "loaded": self.rt.loaded(),
            "index_generation": self.rt.generation.number,
            "requests": sum(served.values()),
            "by_command": served,
            "inflight": inflight,  # status requests are not counted
            "idle_exit_s": self.idle_s if self.idle_s != float("inf") else None,
            "auto_index": self.auto.status()
            if self.auto is not None
            else {"enabled": False, "off_reason": "--no-auto-index", "state": "off"},
        }

    def stop(self, why: str) -> None:
        if self.stopping.is_set():
            return
        log.info("stopping: %s", why)
        self.stopping.set()
        if self.server is not None:
            threading.Thread(target=self.server.shutdown, daemon=True).start()

    @contextmanager
    def busy(self, cmd: str) -> Iterator[None]:
        with self.state_lock:
            self.inflight += 1
            self.served[cmd] += 1  # counted on arrival: a client that has its answer sees it
        try:
            yield
        finally:
            with self.state_lock:
                self.inflight -= 1
                self.last_active = time.monotonic()

    def watch_idle(self) -> None:
        step = max(0.05, min(5.0, self.idle_s / 4))
        while not self.stopping.wait(step):
            with self.state_lock:
                idle = self.inflight == 0 and time.monotonic() - self.last_active > self.idle_s
            if idle:
                self.stop(f"idle for {self.idle_s:.0f} s")


class Handler(socketserver.StreamRequestHandler):
    """One connection = one request; frames go out under a per-connection write lock."""

    server: _Server

    def handle(self) -> None:
        svc = self.server.service
        self.wlock = threading.Lock()
        self.gone = False
        uid = protocol.peer_uid(self.connection)
        if uid is not None and uid != os.getuid():
            log.warning("refused a connection from uid %s", uid)
            self.send({"event": "error", "message": "permission denied", "kind": "Forbidden"})
            return
        self.connection.settimeout(10.0)
        try:
            line = self.rfile.readline(protocol.MAX_REQUEST + 1)
            req = protocol.decode(line)
            cmd, args = req["cmd"], req.get("args") or {}
        except (OSError, ValueError, KeyError, TypeError):
            self.send({"event": "error", "message": "malformed request", "kind": "BadRequest"})
            return
        self.connection.settimeout(60.0)  # a client that stops reading for a minute is dropped
        if cmd == "ping":
            self.send({"event": "result", "result": {"pid": os.getpid()}})
        elif cmd == "status":
            self.send({"event": "result", "result": svc.status()})
        elif cmd == "stop":
            self.send({"event": "result", "result": {"stopping": True, "pid": os.getpid()}})
            svc.stop("asked to stop")
        elif req.get("version") != protocol.build_id():
            self.send(
                {
                    "event": "error",
                    "kind": "version_mismatch",
                    "message": "the casper service runs a different version",
                    "version": protocol.build_id(),
                }
            )
            svc.stop("a client of another version asked")
        else:
            self.work(svc, cmd, args)

    def work(self, svc: Service, cmd: str, args: dict[str, Any]) -> None:
        from casper.app import handlers

        done = threading.Event()
        beat = threading.Thread(target=self.heartbeat, args=(done,), daemon=True)
        started = time.perf_counter()
        ok = False
        with svc.busy(cmd):
            beat.start()
            try:
                with svc.data_lock:
                    rt = svc.current_runtime()
                    if cmd == "ask":
                        rt.forget_failed_engines()
                    doc = handlers.run(rt, cmd, args, emit=self.send)
                ok = True
            except CasperError as exc:
                frame = {"event": "error", "message": exc.message, "hint": exc.hint}
                self.send({**frame, "kind": type(exc).__name__})
            except Exception as exc:  # noqa: BLE001 - report, keep serving
                log.exception("request %s failed", cmd)
                self.send(
                    {
                        "event": "error",
                        "kind": type(exc).__name__,
                        "message": f"unexpected {type(exc).__name__} in the casper service",
                        "hint": f"details in {protocol.log_path(svc.home)}; "
                        "`--no-service -v` runs it here with a traceback",
                    }
                )
            finally:
                done.set()
            if ok:
                self.send({"event": "result", "result": doc})
        log.info("%s %s in %.1f ms", cmd, "ok" if ok else "failed", _ms(started))

    def heartbeat(self, done: threading.Event) -> None:
        while not done.wait(protocol.HEARTBEAT_S):
            self.send({"event": "alive"})

    def send(self, frame: dict[str, Any]) -> None:
        if self.gone:
            return
        data = protocol.encode(frame)
        with self.wlock:
            try:
                self.connection.sendall(data)
            except OSError:
                self.gone = True  # the client left; finish the work quietly


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    allow_reuse_address = False
    request_queue_size = 128  # a burst of clients must queue, not be refused (default 5)
    service: Service


def _take_lock(home: Path) -> int:
    """The per-data-dir lock, held for the process's life; AlreadyRunning if someone has it."""
    fd = os.open(protocol.lock_path(home), os.O_RDWR | os.O_CREAT, 0o600)
    for _ in range(5):  # a client's liveness probe holds it shared for a moment
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            time.sleep(0.05)
    os.close(fd)
    pid = protocol.pid_path(home)
    who = pid.read_text().split()[0] if pid.exists() else "?"
    raise AlreadyRunning(f"a casper service already runs for {home} (pid {who})")


def _bind(path: Path) -> _Server:
    protocol.private_socket_dir(path)
    path.unlink(missing_ok=True)  # we hold the lock: whatever is there is stale
    old = os.umask(0o077)
    try:
        server = _Server(str(path), Handler, bind_and_activate=True)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    return server


def serve(home: Path, *, idle_minutes: float | None = None, auto_index: bool = True) -> None:
    """Run the service in the foreground until stopped, idle, or signalled.

    `idle_minutes` 0 (or, when not given, a LaunchAgent installed for this data dir: the service
    that starts with the login, or the one that took over from it) never exits for idleness.
    `auto_index` off: no watching of chat.db, whatever config.toml says."""
    from casper.store.db import ensure_private_dir

    home = Path(os.path.abspath(home.expanduser()))
    ensure_private_dir(home)
    lock_fd = _take_lock(home)
    sock = protocol.socket_path(home)
    pid_file = protocol.pid_path(home)
    try:
        cfg = load_config(home)
        minutes = idle_minutes if idle_minutes is not None else _default_idle(home, cfg)
        svc = Service(home, idle_s=max(1.0, float(minutes) * 60) if minutes > 0 else float("inf"))
        server = _bind(sock)
        server.service = svc
        svc.server = server
        fd = os.open(pid_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{os.getpid()} {protocol.build_id()} {sock}\n")
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, lambda *_: svc.stop("signal"))
        threading.Thread(target=svc.watch_idle, daemon=True).start()
        if auto_index:
            svc.auto = AutoIndexer(svc, home)
            svc.auto.start()
        log.info(
            "casper service %s listening on %s (pid %d)", protocol.build_id(), sock, os.getpid()
        )
        try:
            server.serve_forever(poll_interval=0.2)
        finally:
            server.server_close()
            _drain(svc, timeout=30.0)
            if svc.auto is not None:
                svc.auto.stop(timeout=30.0)  # let a run finish (a kill mid-run is safe too)
    finally:
        sock.unlink(missing_ok=True)
        pid_file.unlink(missing_ok=True)
        os.close(lock_fd)  # releases the flock last: a new service may now start
    log.info("casper service stopped")


def _default_idle(home: Path, cfg: Config) -> float:
    """The configured idle time, or 0 (never) when a LaunchAgent starts this service at login."""
    from casper.service.launchagent import installed

    return 0.0 if installed(home) else float(cfg.service_idle_minutes)


def _drain(svc: Service, timeout: float) -> None:
    """Let requests still running finish (bounded), so a stop never cuts an answer short."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with svc.state_lock:
            if svc.inflight == 0:
                return
        time.sleep(0.05)
