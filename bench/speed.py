"""The speed figures, as whole processes, paired: what a quiet re-run of the speed work needs in
one command.

    python -m bench.speed [--only first-index warm-search first-search freshness]
                          [--against DIR] [--rounds N] [--out DIR]

Each part runs the checkout this file is in (A) and, with `--against DIR`, another checkout (B,
e.g. a worktree of main) in turn, A B A B …, so a shared machine's load falls on both alike; the
ratio is taken pair by pair. Every figure records the load average before and after.

- `first-index`: a whole `casper index --json` from an empty home, on each REALTALK phone
  ($CASPER_REALTALK), the demo and the texting history (~9.6k messages), with the engine the
  product picks (A, and B) and with each engine fixed in config.toml (`embed_backend = "onnx"`,
  `"torch"`); the figure is the faster fixed engine's wall time over the product's (≥ 0.95
  wanted). Every run starts with a copy of the same model cache (the checked onnxruntime copy,
  and whatever an older version remembered there).
- `warm-search`: `casper search QUERY --json` through a warm service on the demo (the bundled
  MiniLM), against `python -c pass` (the interpreter's floor) and the service's own time (its
  log); p50 wall and CPU. The processes run with bytecode caching on (as an installed package
  has its .pyc files), in a private cache folder.
- `first-search`: `bench.scale --only first-search` (1M generated messages, fake embedder:
  the time until the first lexical search), once per round for each checkout.
- `freshness`: `bench.freshness` (a writer appending to the demo's chat.db while the service
  indexes by itself), once per round for each checkout; the new-message p50 and the service's
  memory after the writes.

Results: bench/results/speed.{json,md} (or --out); `python -m bench.ledger` takes the headline
figures from speed.json. `make test`'s time is the last figure of the speed work and is not run
here: `/usr/bin/time make test` on a quiet box, with the load (`uptime`) beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
CACHE = Path.home() / ".cache" / "casper-bench"
PARTS = ("first-index", "warm-search", "first-search", "freshness")
QUERIES = ["dentist appointment", "thanksgiving plans", "dinner on friday", "the concert",
           "flight delayed", "birthday party", "new job", "pizza tonight"]  # fmt: skip


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def env_for(code: Path, **extra: str) -> dict[str, str]:
    """The environment a measured process runs in: `code` first on the path, the hub offline,
    bytecode cached in a private folder (an installed package has its .pyc; a checkout run with
    PYTHONDONTWRITEBYTECODE would compile every module of every process)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    prefix = CACHE / "pycache" / code.name
    return {**env, "PYTHONPATH": str(code), "PYTHONPYCACHEPREFIX": str(prefix),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}  # fmt: skip


def casper(code: Path) -> list[str]:
    """The console entry point as installed (it imports `casper.__main__`, found on
    PYTHONPATH first), or `python -m casper`."""
    script = Path(sys.executable).with_name("casper")
    return [str(script)] if script.exists() else [sys.executable, "-m", "casper"]


def timed(args: list[str], env: dict[str, str], timeout: float = 3600) -> dict[str, Any]:
    """One whole process: wall and CPU seconds (user+sys of it and its children), exit code,
    output. It runs in the checkout on its PYTHONPATH: a service it starts (`python -m casper`)
    puts its working directory first on the path, and another checkout there would answer as
    another version."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout,
                         cwd=env.get("PYTHONPATH") or None)  # fmt: skip
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"wall_s": wall, "cpu_s": cpu, "code": out.returncode, "stdout": out.stdout,
            "stderr": out.stderr}  # fmt: skip


def median(xs: list[float]) -> float:
    return round(statistics.median(xs), 4) if xs else float("nan")


# ---- first index ----------------------------------------------------------------------------
def sources(root: Path) -> list[tuple[str, Path, Path]]:
    """(name, chat.db, AddressBook) of every history the first-index figure covers, built once
    under `root`: each REALTALK phone, the demo, the texting history."""
    from eval.realtalk import default_realtalk_path, load_phones, prepare_phone
    from ingest.synthetic import build_demo_corpus
    from ingest.synthetic.texting import build_texting_corpus

    out = []
    path = default_realtalk_path()
    if path is not None:
        for phone in load_phones(path):
            chat_db, contacts = prepare_phone(phone, root / "phones")
            out.append((f"phone {phone.owner}", chat_db, contacts))
    demo = root / "demo"
    if not (demo / "chat.db").exists():
        build_demo_corpus(demo)
    out.append(("demo", demo / "chat.db", demo / "AddressBook"))
    texting = root / "texting"
    if not (texting / "chat.db").exists():
        build_texting_corpus(texting)
    out.append(("texting history", texting / "chat.db", texting / "AddressBook"))
    return out


def first_index(codes: dict[str, Path], rounds: int, names: list[str] | None) -> dict[str, Any]:
    """Each history indexed from an empty home with each engine, in turn."""
    model_cache = Path(os.environ.get("CASPER_CACHE") or Path.home() / ".cache" / "casper")
    work = Path(tempfile.mkdtemp(prefix="casper-speed-index-"))
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    load_before = load()
    try:
        for name, chat_db, contacts in sources(CACHE / "speed-sources"):
            if names and not any(n.lower() in name.lower() for n in names):
                continue
            variants = [(f"auto ({label})", code, None) for label, code in codes.items()]
            a = next(iter(codes.values()))
            variants += [("onnxruntime fixed", a, "onnx"), ("torch fixed", a, "torch")]
            got = runs.setdefault(name, {v[0]: [] for v in variants})
            for r in range(rounds):
                turn = variants[r % len(variants) :] + variants[: r % len(variants)]
                for label, code, backend in turn:
                    home, cache = work / "home", work / "cache"
                    shutil.rmtree(home, ignore_errors=True)
                    shutil.rmtree(cache, ignore_errors=True)
                    shutil.copytree(model_cache, cache, symlinks=True)  # same start for all
                    home.mkdir()
                    if backend:
                        (home / "config.toml").write_text(
                            f'embed_backend = "{backend}"\nembed_device = "cpu"\n'
                        )
                    env = env_for(code, CASPER_CACHE=str(cache), CASPER_SERVICE="0")
                    done = timed(casper(code) + ["index", "--home", str(home), "--chat-db",
                                                str(chat_db), "--contacts", str(contacts),
                                                "--json"], env)  # fmt: skip
                    if done["code"] != 0:
                        raise RuntimeError(f"{label} on {name}: {done['stderr'][-2000:]}")
                    doc = json.loads(done["stdout"])
                    timings = doc.get("timings") or {}
                    got[label].append({
                        "wall_s": round(done["wall_s"], 2), "cpu_s": round(done["cpu_s"], 2),
                        "chunks": doc.get("chunks_total"), "embed_s": timings.get("embed"),
                        "load_s": timings.get("load"),
                        "why": (doc.get("embedder") or {}).get("why"),
                        "backend": (doc.get("embedder") or {}).get("backend"),
                    })  # fmt: skip
                    print(json.dumps({"history": name, "variant": label, **got[label][-1]}),
                          flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"rounds": rounds, "load_before": load_before, "load_after": load(),
            "histories": {n: summarize_index(v) for n, v in runs.items()}}  # fmt: skip


def summarize_index(variants: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Median wall per variant; each product run against the faster fixed engine, as the
    faster's wall over the product's (1.0: as fast as the faster engine), pair by round."""
    walls = {k: [r["wall_s"] for r in v] for k, v in variants.items()}
    fixed = [walls["onnxruntime fixed"], walls["torch fixed"]]
    best = [min(pair) for pair in zip(*fixed, strict=True)]
    out: dict[str, Any] = {"chunks": next(r["chunks"] for v in variants.values() for r in v),
                           "wall_s_median": {k: median(w) for k, w in walls.items()},
                           "runs": variants}  # fmt: skip
    for k, w in walls.items():
        if k.startswith("auto"):
            out[f"{k} vs faster engine"] = median([b / x for b, x in zip(best, w, strict=True)])
    return out


# ---- warm search ----------------------------------------------------------------------------
def demo_home(code: Path) -> Path:
    """The demo indexed with the bundled MiniLM, built once (kept in the bench cache)."""
    pristine = CACHE / "speed-demo-home"
    if not (pristine / "index.lance").exists():
        from ingest.synthetic import build_demo_corpus

        shutil.rmtree(pristine, ignore_errors=True)
        corpus = build_demo_corpus(CACHE / "speed-demo-src")
        done = timed(casper(code) + ["index", "--home", str(pristine), "--chat-db",
                                     str(corpus.chat_db), "--contacts", str(corpus.contacts),
                                     "--json"], env_for(code, CASPER_SERVICE="0"))  # fmt: skip
        if done["code"] != 0:
            raise RuntimeError(done["stderr"][-2000:])
    return pristine


def _log(home: Path) -> str:
    try:
        return (home / "service.log").read_text()
    except OSError:
        return ""


def service_rss_mb(home: Path) -> float | None:
    try:
        pid = int((home / "service.pid").read_text().split()[0])
        with open(f"/proc/{pid}/status") as fh:
            return next(int(x.split()[1]) / 1024 for x in fh if x.startswith("VmRSS:"))
    except (OSError, ValueError, StopIteration):
        return None


def warm_search(codes: dict[str, Path], rounds: int) -> dict[str, Any]:
    """`python -c pass`, then each checkout's warm `casper search --json` against its own
    service on its own copy of the demo home, in turn."""
    pristine = demo_home(next(iter(codes.values())))
    work = Path(tempfile.mkdtemp(prefix="casper-speed-warm-", dir="/tmp"))  # a short socket path
    homes = {}
    samples: dict[str, list[dict[str, Any]]] = {"python -c pass": []}
    try:
        for label, code in codes.items():
            home = homes[label] = work / label.replace(" ", "-")
            shutil.copytree(pristine, home)
            env = env_for(code, CASPER_SERVICE="1")
            first = ["search", QUERIES[0], "--json", "--home", str(home)]
            deadline = time.monotonic() + 600
            while "search ok in" not in _log(home):  # started, and answering (a loaded box
                if time.monotonic() > deadline:  # may take longer than a client waits)
                    raise RuntimeError(f"no service for {label}: {_log(home)[-2000:]}")
                timed(casper(code) + first, env)
            for _ in range(3):  # warm its caches and the .pyc files
                timed(casper(code) + first, env)
            samples[label] = []
        load_before = load()
        variants = list(samples)
        for i in range(rounds):
            for label in variants[i % len(variants) :] + variants[: i % len(variants)]:
                if label == "python -c pass":
                    done = timed([sys.executable, "-c", "pass"], env_for(ROOT))
                else:
                    args = ["search", QUERIES[i % len(QUERIES)], "--json", "--home",
                            str(homes[label])]  # fmt: skip
                    done = timed(casper(codes[label]) + args, env_for(codes[label]))
                    if done["code"] != 0:
                        raise RuntimeError(done["stderr"][-2000:])
                samples[label].append({"wall_s": done["wall_s"], "cpu_s": done["cpu_s"]})
        out: dict[str, Any] = {"rounds": rounds, "load_before": load_before, "load_after": load()}
        first = next(iter(codes))
        for label in codes:  # each checkout against the first, round by round
            if label != first:
                pairs = zip(samples[first], samples[label], strict=True)
                out[f"{first} / {label}, wall, paired median"] = median(
                    [a["wall_s"] / b["wall_s"] for a, b in pairs]
                )
        for label, got in samples.items():
            out[label] = {"p50_ms": round(1000 * median([s["wall_s"] for s in got]), 1),
                          "cpu_p50_ms": round(1000 * median([s["cpu_s"] for s in got]), 1)}  # fmt: skip
            if label in homes:
                inside = [float(x.split(" in ")[1].split()[0]) for x in
                          _log(homes[label]).splitlines() if "search ok in" in x]  # fmt: skip
                inside = inside[-len(got) :]  # the measured searches
                out[label]["service_p50_ms"] = round(median(inside), 1) if inside else None
                out[label]["service_rss_mb"] = service_rss_mb(homes[label])
        return out
    finally:
        for label, home in homes.items():
            timed(casper(codes[label]) + ["serve", "--stop", "--home", str(home)],
                  env_for(codes[label]))  # fmt: skip
        shutil.rmtree(work, ignore_errors=True)


# ---- the benchmarks run per checkout --------------------------------------------------------
RUN_MODULE = """
import json, sys
from pathlib import Path
module = __import__(sys.argv[1], fromlist=["main"])
module.RESULTS = Path(sys.argv[2])
module.main(json.loads(sys.argv[3]))
"""


def per_checkout(
    codes: dict[str, Path], rounds: int, module: str, args: list[str], result: str
) -> dict[str, list[dict[str, Any]]]:
    """`python -m MODULE ARGS` of each checkout in turn, its results into a temp folder; each
    run's `result` file as it wrote it."""
    out: dict[str, list[dict[str, Any]]] = {label: [] for label in codes}
    for i in range(rounds):
        turn = list(codes.items())
        for label, code in turn[i % len(turn) :] + turn[: i % len(turn)]:
            with tempfile.TemporaryDirectory(prefix="casper-speed-") as tmp:
                done = timed([sys.executable, "-c", RUN_MODULE, module, tmp, json.dumps(args)],
                             env_for(code), timeout=7200)  # fmt: skip
                if done["code"] != 0:
                    raise RuntimeError(f"{module} ({label}): {done['stderr'][-2000:]}")
                out[label].append(json.loads((Path(tmp) / result).read_text()))
    return out


def first_search(codes: dict[str, Path], rounds: int) -> dict[str, Any]:
    """1M messages: the time until the first lexical search, each checkout in turn."""
    got = per_checkout(codes, rounds, "bench.scale", ["--only", "first-search"], "scale.json")
    out: dict[str, Any] = {"rounds": rounds}
    for label, runs in got.items():
        records = [r["first_search"] for r in runs]
        out[label] = {
            "time_to_first_lexical_search_s": [r["time_to_first_lexical_search_s"] for r in records],
            "median_s": median([r["time_to_first_lexical_search_s"] for r in records]),
            "parts_s": [r["parts_s"] for r in records],
            "loads": [(r["load_avg_before"], r["load_avg_after"]) for r in records],
        }  # fmt: skip
    return out


def freshness(codes: dict[str, Path], rounds: int, writes: int) -> dict[str, Any]:
    """A writer appending to chat.db while the service indexes by itself, each checkout in
    turn: the new-message p50 (lexical and vector legs) and the service's memory."""
    args = ["--writes", str(writes), "--idle-s", "10"]
    got = per_checkout(codes, rounds, "bench.freshness", args, "freshness.json")
    out: dict[str, Any] = {"rounds": rounds, "writes": writes}
    for label, runs in got.items():
        out[label] = [{**{k: v for k, v in run.items() if k != "raw"},
                       "service_rss_mb": run.get("raw", {}).get("service_rss_mb")}
                      for run in runs]  # fmt: skip
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = ["# Speed figures (bench/speed.py)", "", "```", json.dumps(
        {k: v for k, v in result.items() if k != "first_index"}, indent=1), "```", ""]  # fmt: skip
    fi = result.get("first_index")
    if fi:
        lines += ["| history | chunks | product vs the faster engine | walls (median s) |",
                  "|---|---:|---:|---|"]  # fmt: skip
        for name, h in fi["histories"].items():
            ratios = ", ".join(f"{k.removesuffix(' vs faster engine')}: {v:.2f}×"
                               for k, v in h.items() if k.endswith("vs faster engine"))  # fmt: skip
            walls = ", ".join(f"{k} {v:.1f}" for k, v in h["wall_s_median"].items())
            lines.append(f"| {name} | {h['chunks']} | {ratios} | {walls} |")
        lines.append(f"\nload {fi['load_before']} → {fi['load_after']}, {fi['rounds']} rounds")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.speed")
    parser.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--against", type=Path, default=None, help="another checkout (B)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each, in turn")
    parser.add_argument("--search-rounds", type=int, default=30, help="warm searches of each")
    parser.add_argument("--histories", nargs="*", default=None, help="first-index: names to run")
    parser.add_argument("--writes", type=int, default=40, help="freshness: changes written")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    codes = {"this checkout": ROOT}
    if args.against is not None:
        codes[f"against {args.against.name}"] = args.against.resolve()
    result: dict[str, Any] = {"at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "codes": {k: str(v) for k, v in codes.items()}}  # fmt: skip
    if "first-index" in args.only:
        result["first_index"] = first_index(codes, args.rounds, args.histories)
    if "warm-search" in args.only:
        result["warm_search"] = warm_search(codes, args.search_rounds)
    if "first-search" in args.only:
        result["first_search"] = first_search(codes, args.rounds)
    if "freshness" in args.only:
        result["freshness"] = freshness(codes, args.rounds, args.writes)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "speed.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "speed.md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
