"""`python -m bench` (`make bench`): every benchmark; results in bench/results/*.{json,md}.

`python -m bench --smoke [--out DIR]` runs every benchmark end to end at small sizes (minutes,
not hours) and writes its results to DIR (default a new temp dir), never to bench/results: a
check that `make bench` still runs, not figures to quote.

The last step (`bench.ledger`) appends the headline figures, with the commit and the load, to
bench/results/history.json and prints every one that moved by more than 10 % since the last run.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench import (
    agent,
    apple_schema,
    cli,
    cold_path,
    embedding,
    freshness,
    ingest,
    lance_ann,
    ledger,
    models,
    retrieval,
    scale,
    service_memory,
    speed,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--smoke", action="store_true", help="small sizes, results to --out")
    parser.add_argument("--out", type=Path, default=None, help="with --smoke; default a temp dir")
    args = parser.parse_args(argv)
    if args.smoke:
        smoke(args.out or Path(tempfile.mkdtemp(prefix="casper-bench-smoke-")))
        return
    apple_schema.main([])  # a minute: chat.db files with Apple-only schema entries
    ingest.main([])
    ingest.main(["--messages", "1000000"])  # the 1M scale target; reads the cached chat.db
    retrieval.main([])
    models.main()
    embedding.main(["--first-index", "1"])  # each backend's device and rate on chunk texts
    agent.main()
    cold_path.main([])
    cli.main([])
    freshness.main([])
    service_memory.main([])  # an hour of auto-index runs, simulated (~15 min)
    scale.main([])  # 1M generated messages, the longest; its chat.db is cached outside the repo
    lance_ann.main([])  # LanceDB's vector indexes against Casper's vector side, 100k and 622k
    # the first index of each history against the faster engine, and the warm search against
    # the interpreter's start, as paired whole processes (first-search and freshness: above)
    speed.main(["--only", "first-index", "warm-search"])
    ledger.main([])  # the headline figures with commit and load; what moved > 10 % since the last


def smoke(out: Path) -> None:
    """Every benchmark at a small size, writing into `out`."""
    # the benchmarks write to their module's RESULTS (read when they write), so pointing those
    # at `out` keeps the committed results untouched without an --out flag on each
    for module in (
        apple_schema,
        ingest,
        retrieval,
        models,
        embedding,
        agent,
        cold_path,
        cli,
        freshness,
        service_memory,
        scale,
    ):
        module.RESULTS = out  # type: ignore[attr-defined]
    apple_schema.main(["--messages", "300", "--opens", "20"])
    ingest.main(["--messages", "20000", "--repeat", "1"])  # 20k: cached beside the 1M chat.db
    retrieval.main(["--sizes", "2000", "--queries", "10"])
    models.main()
    embedding.main(["--texts", "256", "--only", "rates"])
    agent.main()
    cold_path.main(["--runs", "2"])
    cli.main(["--messages", "2000", "--runs", "3"])
    freshness.main(["--writes", "10", "--idle-s", "10"])
    service_memory.main(["--runs", "3"])
    scale.main(["--messages", "20000", "--recall-queries", "20"])
    lance_ann.main(["--smoke", "--out", str(out)])
    print(f"smoke run of every benchmark: results in {out}")


if __name__ == "__main__":
    main()
