"""Model benchmarks: embedding throughput with torch (Casper's pipeline vs raw `model.encode`;
every backend side by side is bench/embedding.py) and the
latency of reranking 50 candidates with a random-weight BERT of ms-marco-MiniLM-L6's shape
(latency depends on shape, not weights). Run: `python -m bench.models`.

Dev tooling: it borrows the tiny-model builders from tests/models.py.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def _passages(n: int, seed: int = 3) -> list[str]:
    from ingest.synthetic.bulk import _line_pool  # chat-like lines from the demo generator

    rng = random.Random(seed)
    lines = _line_pool(rng)
    return [
        "\n".join(f"{rng.choice(['me', 'Sam', 'Priya'])}: {rng.choice(lines)}" for _ in range(3))
        for _ in range(n)
    ]


def embedding(n: int = 1000) -> dict:
    """Docs/s of the pipeline's embed_documents vs raw model.encode on the same texts."""
    from casper.backends.embedder import SentenceTransformerEmbedder
    from casper.config import BUNDLED_EMBEDDER

    texts = _passages(n)
    emb = SentenceTransformerEmbedder(BUNDLED_EMBEDDER)
    emb.embed_documents(texts[:64])  # warm up
    t = time.perf_counter()
    emb.embed_documents(texts)
    pipeline = n / (time.perf_counter() - t)
    t = time.perf_counter()
    emb._model.encode(texts, batch_size=emb.batch_size, show_progress_bar=False)  # noqa: SLF001
    raw = n / (time.perf_counter() - t)
    return {
        "passages": n,
        "device": emb.placement.describe(),
        "pipeline_docs_s": round(pipeline, 1),
        "raw_docs_s": round(raw, 1),
        "ratio": round(pipeline / raw, 3),
    }


def rerank(candidates: int = 50, runs: int = 5) -> dict:
    """Latency of scoring (query, passage) pairs with a MiniLM-L6-shaped cross-encoder."""
    from casper.backends.reranker import CrossEncoderReranker
    from tests.models import build_minilm_shaped_cross_encoder

    with tempfile.TemporaryDirectory() as tmp:
        reranker = CrossEncoderReranker(str(build_minilm_shaped_cross_encoder(Path(tmp))))
        texts = _passages(candidates)
        reranker.score("warm up", texts[:4])
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            reranker.score("when did we plan thanksgiving", texts)
            times.append((time.perf_counter() - t) * 1000)
    return {
        "candidates": candidates,
        "p50_ms": round(statistics.median(times), 1),
        "max_ms": round(max(times), 1),
    }


def main() -> dict:
    result = {"embedding": embedding(), "rerank": rerank()}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "models.json").write_text(json.dumps(result, indent=2))
    e, r = result["embedding"], result["rerank"]
    md = (
        f"Embedding {e['passages']} 3-message passages with the bundled MiniLM ({e['device']}): pipeline "
        f"{e['pipeline_docs_s']} docs/s vs raw `encode` {e['raw_docs_s']} docs/s "
        f"(ratio {e['ratio']}; target ≥ 0.9).\n\n"
        f"Rerank of {r['candidates']} candidates with a MiniLM-L6-shaped cross-encoder: "
        f"p50 {r['p50_ms']} ms (max {r['max_ms']} ms).\n"
    )
    (RESULTS / "models.md").write_text(md)
    print(md)
    return result


if __name__ == "__main__":
    main()
