"""Embedding backends on the chunk texts a first `casper index` embeds: rates, vectors, memory.

    python -m bench.embedding [--texts N] [--rounds R] [--slice S] [--first-index]
                              [--only rates|settings|memory|lengths] [--out DIR]

Rates (`rates`): each backend Casper can place the embedder on here (onnxruntime and torch on
the CPU, torch on the Apple GPU on a Mac) and raw sentence-transformers `model.encode` (the
baseline: what plain torch does with the texts) embed the same texts, interleaved slice by
slice (A, B, C, A, B, C …) so a shared machine's load falls on all of them alike; each rate is
texts over the wall seconds spent in that backend, with its CPU seconds beside. The texts are
those `casper index` embeds for the texting history (ingest/synthetic/texting.py, ~9.6k
messages), in the order it embeds them. Cosine of each backend's vectors to torch-on-the-CPU's.

Settings (`settings`, onnxruntime only, interleaved the same way): intra-op threads, batch size,
the window chunks are sorted by length in, and tokenizing in a worker thread.

First index (`--first-index`): `casper index --json` as a whole process on that history with
each backend, and raw `model.encode` of the same texts in its own process, alternating; the
rate is `embed_chunks_per_s` from the JSON (the embed stage: batches written as they go).

Per passage length (`lengths`): onnxruntime and torch on the CPU side by side on the short and
the long passages apart (`--only lengths`), the figures docs/performance.md and pyproject.toml
quote for the bulk engine's choice (casper.backends.bulk).

Memory (`memory`): a fresh process loading the embedder with each backend and embedding a
query, its VmRSS (Linux); the service's figure is bench/cli.py's with the default backend.

Results: bench/results/embedding.{json,md}; each names the load average it ran under.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results"
CACHE = Path(os.path.expanduser("~")) / ".cache" / "casper-bench"
ROOT = Path(__file__).resolve().parents[1]


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---- the texts ------------------------------------------------------------------------------
def history(dest: Path = CACHE / "texting") -> Path:
    """The texting history's chat.db (built once, cached outside the repo)."""
    from ingest.synthetic.texting import build_texting_corpus

    if not (dest / "chat.db").exists():
        build_texting_corpus(dest)
    return dest


def chunk_texts(src: Path) -> list[str]:
    """The texts `casper index` embeds for the history in `src`, in its order: a run with an
    embedder that records them (the bundled MiniLM's identity, zero vectors)."""
    from casper.app import runtime
    from casper.backends.embedder import MINILM_DIM, MINILM_SHA256
    from casper.config import BUNDLED_EMBEDDER, load_config
    from casper.indexer.run import run_index
    from casper.store.db import Store

    seen: list[str] = []

    class Recorder:
        name, dim, checksum = BUNDLED_EMBEDDER, MINILM_DIM, MINILM_SHA256

        def embed_documents(self, texts: Sequence[str], *_a: Any, **_k: Any) -> np.ndarray:
            seen.extend(texts)
            out = np.zeros((len(texts), MINILM_DIM), np.float32)
            out[:, 0] = 1.0
            return out

        def embed_query(self, text: str) -> np.ndarray:
            return self.embed_documents([text])[0]

    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(Path(tmp), chat_db=src / "chat.db", contacts=src / "AddressBook")
        store = Store.open(cfg.store_path)
        try:
            run_index(store, runtime.index_source(cfg), runtime.index_place(cfg),
                      lambda _p: Recorder(), options=runtime.chunk_options(cfg))  # fmt: skip
        finally:
            store.close()
    return seen


# ---- the backends ---------------------------------------------------------------------------
def backends(batch: int = 64) -> dict[str, Any]:
    """name → embedder: every placement this machine has, and raw `model.encode`."""
    from casper.backends import factory
    from casper.backends.placement import apple_gpu
    from casper.config import load_config

    home = Path(tempfile.mkdtemp(prefix="casper-bench-emb-"))
    made: dict[str, Any] = {}
    combos = [("onnx", "cpu"), ("torch", "cpu")] + [("torch", "mps")] * apple_gpu()
    for backend, device in combos:
        cfg = load_config(home, embed_backend=backend, embed_device=device, embed_batch=batch)
        embedder = factory.make_embedder(cfg)
        made[embedder.placement.short()] = embedder
    torch_cpu = made["CPU · torch"]
    made["raw encode (CPU · torch)"] = RawEncode(torch_cpu._model, batch)  # noqa: SLF001
    return made


class RawEncode:
    """Plain sentence-transformers: `model.encode` on the texts as given (the baseline)."""

    def __init__(self, model: Any, batch: int) -> None:
        self.model, self.batch = model, batch

    def embed_documents(self, texts: Sequence[str], *_a: Any, **_k: Any) -> np.ndarray:
        vectors = self.model.encode(list(texts), batch_size=self.batch, show_progress_bar=False)
        vectors = np.asarray(vectors, np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def interleaved(
    runners: dict[str, Callable[[list[str]], np.ndarray]],
    texts: list[str],
    slice_size: int,
    rounds: int = 1,
) -> tuple[dict[str, dict[str, float]], dict[str, np.ndarray]]:
    """Run every runner on every slice of `texts`, in turn (the order rotates per slice), for
    `rounds` passes. Returns ({name: rate figures}, {name: vectors of the last pass})."""
    wall = dict.fromkeys(runners, 0.0)
    cpu = dict.fromkeys(runners, 0.0)
    vectors: dict[str, list[np.ndarray]] = {k: [] for k in runners}
    names = list(runners)
    for _ in range(rounds):
        vectors = {k: [] for k in runners}
        for i, start in enumerate(range(0, len(texts), slice_size)):
            part = texts[start : start + slice_size]
            turn = names[i % len(names) :] + names[: i % len(names)]
            for name in turn:
                t, c = time.perf_counter(), time.process_time()
                vectors[name].append(np.asarray(runners[name](part), np.float32))
                wall[name] += time.perf_counter() - t
                cpu[name] += time.process_time() - c
    n = len(texts) * rounds
    rates = {
        k: {
            "texts_per_s": round(n / wall[k], 1),
            "cpu_ms_per_text": round(1000 * cpu[k] / n, 2),
            "wall_s": round(wall[k], 1),
        }  # fmt: skip
        for k in runners
    }
    return rates, {k: np.concatenate(v) for k, v in vectors.items()}


def cosines(vectors: dict[str, np.ndarray], reference: str) -> dict[str, dict[str, float]]:
    ref = vectors[reference]
    out = {}
    for name, vecs in vectors.items():
        cos = np.sum(vecs * ref, axis=1)
        out[name] = {"min": round(float(cos.min()), 6), "mean": round(float(cos.mean()), 7)}
    return out


def rates(texts: list[str], slice_size: int, rounds: int) -> dict[str, Any]:
    """Every backend and raw encode on the same texts, interleaved."""
    made = backends()
    warm = texts[:64]
    for embedder in made.values():
        embedder.embed_documents(warm)
    runners = {k: e.embed_documents for k, e in made.items()}
    load_before = _load()
    figures, vectors = interleaved(runners, texts, slice_size, rounds)
    base = figures["raw encode (CPU · torch)"]["texts_per_s"]
    for fig in figures.values():
        fig["vs_raw_encode"] = round(fig["texts_per_s"] / base, 3)
    return {
        "texts": len(texts), "slice": slice_size, "rounds": rounds,
        "load_before": load_before, "load_after": _load(),
        "rates": figures, "cosine_to_torch_cpu": cosines(vectors, "CPU · torch"),
        "placements": {k: getattr(e, "placement", None) and e.placement.describe()
                       for k, e in made.items()},
    }  # fmt: skip


LENGTHS = ((0, 160, "short (< 160 characters)"), (160, 10**9, "long (≥ 160 characters)"))


def by_length(texts: list[str], slice_size: int, rounds: int) -> dict[str, Any]:
    """onnxruntime and torch on the CPU side by side per passage length (the bulk engine's
    choice depends on it: casper.backends.bulk), interleaved as `rates`."""
    made = {k: e for k, e in backends().items() if k in ("CPU · onnxruntime", "CPU · torch")}
    for embedder in made.values():
        embedder.embed_documents(texts[:64])
    runners = {k: e.embed_documents for k, e in made.items()}
    out: dict[str, Any] = {"load_before": _load()}
    # the texting history's chunks are short (3 short messages): three in a row joined stand in
    # for the longer passages of real texting (~320 characters a chunk in a real texting history)
    joined = ["\n".join(texts[i : i + 3]) for i in range(0, len(texts) - 2, 3)]
    for lo, hi, label in LENGTHS:
        group = [t for t in texts + joined if lo <= len(t) < hi]
        if not group:
            continue
        figures, _ = interleaved(runners, group, slice_size, rounds)
        torch_rate = figures["CPU · torch"]["texts_per_s"]
        onnx_rate = figures["CPU · onnxruntime"]["texts_per_s"]
        out[label] = {"texts": len(group), "mean_chars": round(sum(map(len, group)) / len(group)),
                      "rates": figures, "torch_vs_onnxruntime": round(torch_rate / onnx_rate, 2)}  # fmt: skip
    out["load_after"] = _load()
    return out


# ---- onnxruntime settings -------------------------------------------------------------------
def settings(texts: list[str], slice_size: int) -> dict[str, Any]:
    """onnxruntime's threads, batch size, sort window and a tokenizing worker, interleaved."""
    from casper.backends.loading import model_cache
    from casper.backends.onnx_embedder import OnnxEmbedder
    from casper.backends.onnx_export import export_checked
    from casper.config import BUNDLED_EMBEDDER

    def make(threads: int, batch: int = 64) -> OnnxEmbedder:
        return OnnxEmbedder.cached(BUNDLED_EMBEDDER, cache=model_cache(), batch_size=batch,
                                   threads=threads, export=export_checked)  # fmt: skip

    two, one = make(2), make(1)
    runners: dict[str, Callable[[list[str]], np.ndarray]] = {
        "2 threads, batch 64": two.embed_documents,
        "1 thread, batch 64": one.embed_documents,
    }
    for batch in (16, 32, 128):
        runners[f"2 threads, batch {batch}"] = make(2, batch).embed_documents
    runners["2 threads, batch 64, unsorted"] = lambda part: _unsorted(two, part)
    runners["2 threads, batch 64, tokenizing in a worker"] = lambda part: _worker(two, part)
    for e in {id(r): r for r in runners.values()}.values():
        e(texts[:64])
    load_before = _load()
    figures, _ = interleaved(runners, texts, slice_size)
    base = figures["2 threads, batch 64"]["texts_per_s"]
    for fig in figures.values():
        fig["vs_default"] = round(fig["texts_per_s"] / base, 3)
    tokenize_share = _tokenize_share(two, texts[: slice_size * 2])
    return {"texts": len(texts), "slice": slice_size, "load_before": load_before,
            "load_after": _load(), "rates": figures,
            "tokenizing_share_of_embed_time": tokenize_share}  # fmt: skip


def _unsorted(embedder: Any, part: list[str]) -> np.ndarray:
    """Batches in the texts' own order (no length sort): the padding a sort saves."""
    out = [embedder._encode(part[i : i + embedder.batch_size])  # noqa: SLF001
           for i in range(0, len(part), embedder.batch_size)]  # fmt: skip
    return np.concatenate(out)


def _worker(embedder: Any, part: list[str]) -> np.ndarray:
    """The next batch tokenized in a thread while the current one runs in onnxruntime."""
    order = sorted(range(len(part)), key=lambda i: -len(part[i]))
    batches = [[part[i] for i in order[s : s + embedder.batch_size]]
               for s in range(0, len(order), embedder.batch_size)]  # fmt: skip
    tok = embedder._tokenizer  # noqa: SLF001
    encoded: list[Any] = [None] * len(batches)

    def tokenize(k: int) -> None:
        encoded[k] = tok.encode_batch([t.strip() for t in batches[k]])

    tokenize(0)
    out = []
    for k in range(len(batches)):
        worker = threading.Thread(target=tokenize, args=(k + 1,)) if k + 1 < len(batches) else None
        if worker:
            worker.start()
        out.append(embedder._run(encoded[k]))  # noqa: SLF001
        if worker:
            worker.join()
    vectors = np.empty((len(part), embedder.dim), np.float32)
    vectors[order] = np.concatenate(out)
    return vectors


def _tokenize_share(embedder: Any, texts: list[str]) -> float:
    """The share of embed_documents' time spent in the tokenizer (same process, same batches)."""
    tok = embedder._tokenizer  # noqa: SLF001
    t = time.perf_counter()
    for s in range(0, len(texts), embedder.batch_size):
        tok.encode_batch(texts[s : s + embedder.batch_size])
    spent = time.perf_counter() - t
    t = time.perf_counter()
    embedder.embed_documents(texts)
    return round(spent / (time.perf_counter() - t), 3)


# ---- memory ---------------------------------------------------------------------------------
_MEMORY = """
import json, os, sys
from casper.config import load_config
from casper.backends import factory
cfg = load_config(sys.argv[1], embed_backend=sys.argv[2], embed_device="cpu")
e = factory.make_embedder(cfg)
e.embed_query("when did we plan thanksgiving")
e.embed_documents(["me: see you at 7\\nSam: ok"] * 64)
rss = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(("VmRSS", "VmHWM"))]
print(json.dumps({"rss_mb": rss[1] // 1024, "peak_mb": rss[0] // 1024,
                  "torch_imported": "torch" in sys.modules}))
"""


def memory(runs: int = 2) -> dict[str, Any]:
    """VmRSS of a fresh process that loads the embedder with each backend (Linux)."""
    out: dict[str, Any] = {"load_before": _load()}
    with tempfile.TemporaryDirectory() as home:
        for _ in range(runs):
            for backend in ("onnx", "torch"):
                proc = subprocess.run([sys.executable, "-c", _MEMORY, home, backend],
                                      capture_output=True, text=True, check=True, cwd=ROOT)  # fmt: skip
                out.setdefault(backend, []).append(json.loads(proc.stdout.splitlines()[-1]))
    out["load_after"] = _load()
    return out


# ---- the first index as a process -----------------------------------------------------------
_RAW = """
import json, sys, time
import numpy as np
from sentence_transformers import SentenceTransformer
from casper.backends.embedder import bundled_minilm_path
texts = json.load(open(sys.argv[1]))
model = SentenceTransformer(str(bundled_minilm_path()), device="cpu")
model.encode(texts[:64], batch_size=64)
t = time.perf_counter()
model.encode(texts, batch_size=64, show_progress_bar=False)
print(json.dumps({"chunks_per_s": round(len(texts) / (time.perf_counter() - t), 1)}))
"""


def first_index(src: Path, texts: list[str], rounds: int) -> dict[str, Any]:
    """`casper index --json` with each backend vs raw encode of the same texts, alternating."""
    casper = str(Path(sys.executable).with_name("casper"))
    out: dict[str, Any] = {"chunks": len(texts), "load_before": _load(), "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts))
        for r in range(rounds):
            order = ["onnx", "raw", "torch"] if r % 2 == 0 else ["raw", "torch", "onnx"]
            for what in order:
                run: dict[str, Any] = {"what": what, "load": _load()}
                if what == "raw":
                    proc = subprocess.run([sys.executable, "-c", _RAW, str(texts_file)],
                                          capture_output=True, text=True, check=True, cwd=ROOT)  # fmt: skip
                    run.update(json.loads(proc.stdout.splitlines()[-1]))
                else:
                    home = Path(tmp) / f"home-{what}-{r}"
                    home.mkdir()
                    (home / "config.toml").write_text(f'embed_backend = "{what}"\n')
                    env = {**os.environ, "CASPER_SERVICE": "0"}
                    proc = subprocess.run(
                        [casper, "index", "--json", "--home", str(home), "--chat-db",
                         str(src / "chat.db"), "--contacts", str(src / "AddressBook")],
                        capture_output=True, text=True, check=True, env=env,
                    )  # fmt: skip
                    doc = json.loads(proc.stdout)
                    run.update(chunks_per_s=doc["embed_chunks_per_s"], embedder=doc["embedder"],
                               embed_s=doc["timings"].get("embed"), chunks=doc["vectors_new"],
                               elapsed_s=doc["elapsed_s"])  # fmt: skip
                out["runs"].append(run)
                print(f"  {what}: {run}", flush=True)
    out["load_after"] = _load()
    return out


# ---- report ---------------------------------------------------------------------------------
def markdown(result: dict[str, Any]) -> str:
    lines = ["# Embedding backends", ""]
    if "lengths" in result:
        r = result["lengths"]
        lines += [
            f"Per passage length, interleaved; load {r['load_before']} → {r['load_after']}.", "",
            "| passages | texts | mean chars | onnxruntime texts/s | torch texts/s | torch ÷ onnxruntime |",
            "|---|---:|---:|---:|---:|---:|",
        ]  # fmt: skip
        for label, g in r.items():
            if isinstance(g, dict):
                onnx, torch = g["rates"]["CPU · onnxruntime"], g["rates"]["CPU · torch"]
                lines.append(f"| {label} | {g['texts']} | {g['mean_chars']} | "
                             f"{onnx['texts_per_s']} | {torch['texts_per_s']} | "
                             f"{g['torch_vs_onnxruntime']}× |")  # fmt: skip
        lines.append("")
    if "rates" in result:
        r = result["rates"]
        lines += [
            f"{r['texts']:,} chunk texts of the texting history, interleaved in slices of "
            f"{r['slice']} × {r['rounds']} pass(es); load {r['load_before']} → {r['load_after']}.",
            "",
            "| where | texts/s | vs raw encode | CPU ms/text | min / mean cosine to CPU · torch |",
            "|---|---:|---:|---:|---|",
        ]
        for name, fig in r["rates"].items():
            cos = r["cosine_to_torch_cpu"][name]
            lines.append(f"| {name} | {fig['texts_per_s']} | {fig['vs_raw_encode']} | "
                         f"{fig['cpu_ms_per_text']} | {cos['min']:.6f} / {cos['mean']:.7f} |")  # fmt: skip
        lines.append("")
    if "settings" in result:
        s = result["settings"]
        lines += [f"onnxruntime settings, {s['texts']:,} texts, slices of {s['slice']}; load "
                  f"{s['load_before']} → {s['load_after']}; tokenizing is "
                  f"{100 * s['tokenizing_share_of_embed_time']:.1f} % of the embed time.", "",
                  "| setting | texts/s | vs 2 threads, batch 64 |", "|---|---:|---:|"]  # fmt: skip
        for name, fig in s["rates"].items():
            lines.append(f"| {name} | {fig['texts_per_s']} | {fig['vs_default']} |")
        lines.append("")
    if "memory" in result:
        m = result["memory"]
        lines += [f"Resident memory of a process holding the embedder (VmRSS after a query and "
                  f"a batch; load {m['load_before']}):", ""]  # fmt: skip
        for backend in ("onnx", "torch"):
            runs = m.get(backend, [])
            if runs:
                lines.append(f"- {backend}: {', '.join(str(x['rss_mb']) for x in runs)} MB "
                             f"(torch imported: {runs[0]['torch_imported']})")  # fmt: skip
        lines.append("")
    if "first_index" in result:
        f = result["first_index"]
        lines += [f"First `casper index --json` of the texting history ({f['chunks']:,} chunks) "
                  f"as a process, alternating with raw `encode` of the same texts; load "
                  f"{f['load_before']} → {f['load_after']}:", ""]  # fmt: skip
        for run in f["runs"]:
            lines.append(f"- {run['what']}: {run['chunks_per_s']} chunks/s (load {run['load']})")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.embedding")
    parser.add_argument("--texts", type=int, default=0, help="first N chunk texts (0: all)")
    parser.add_argument("--slice", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=["rates", "settings", "memory"])
    parser.add_argument("--first-index", type=int, default=0, help="rounds of whole index runs")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    src = history()
    texts = chunk_texts(src)
    texts = texts[: args.texts] if args.texts else texts
    result: dict[str, Any] = {"at": time.strftime("%Y-%m-%d %H:%M:%S"), "cpus": os.cpu_count()}
    out = args.out or RESULTS
    out.mkdir(parents=True, exist_ok=True)
    parts: list[tuple[str, Callable[[], Any]]] = [
        ("rates", lambda: rates(texts, args.slice, args.rounds)),
        ("settings", lambda: settings(texts, args.slice)),
        ("memory", memory),
        ("lengths", lambda: by_length(texts, args.slice, args.rounds)),
    ]
    parts = [(k, f) for k, f in parts if k in args.only]
    if args.first_index:
        parts.append(("first_index", lambda: first_index(src, chunk_texts(src), args.first_index)))
    for key, measure in parts:  # written after each part: a stopped run keeps what it measured
        result[key] = measure()
        (out / "embedding.json").write_text(json.dumps(result, indent=2))
        (out / "embedding.md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
