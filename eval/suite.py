"""`make eval`: every set the harness has, both question styles, one report with the verdict.

Runs `casper eval`'s harness on each set as its two halves (`--split tune`, `--split report`),
3-message passages, no reranking, k = 5/10/25, and writes one Markdown report (default
bench/results/eval.md) plus a JSON summary beside it; each half's full run files go to
CASPER_HOME/runs/ as usual. A set that cannot run here (no LoCoMo file) is listed as skipped.

    python -m eval.suite [--home DIR] [--out FILE] [--only SET ...] [--locomo FILE]
    python -m eval.suite --render CASPER_HOME/runs/suite-<stamp>.json [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from casper.config import Config, load_config
from casper.errors import CasperError
from eval import harness, report, verdict
from eval.reader_report import reader_summary

# (dataset, question style)
SETS: tuple[tuple[str, str], ...] = (
    ("synthetic", "as written"),
    ("gold-style", "third person"),
    ("locomo", "first person"),
    ("locomo-verbatim", "verbatim"),
    ("texting", "first person"),
    ("texting-verbatim", "verbatim"),
    ("realtalk", "real texting, owner named"),
    ("realtalk-ambiguous", "real texting, ambiguous names"),
)
UNIT = (3, 1)
KS = verdict.VERDICT_KS
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "bench" / "results" / "eval.md"


def _load() -> float:
    return os.getloadavg()[0]


def run_set(
    cfg: Config, dataset: str, progress: Callable[[str], None], locomo: Path | None = None
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(the whole set's document, {half: document}) from one run per half."""
    halves = {}
    for half in ("tune", "report"):
        halves[half] = harness.run_eval(
            cfg,
            dataset,
            ks=KS,
            units=[UNIT],
            rerank=False,
            out_dir=cfg.runs_dir,
            locomo_path=locomo,
            split=half,
            progress=progress,
        )
    return verdict.merge(list(halves.values())), halves


def run_suite(
    cfg: Config,
    sets: Sequence[tuple[str, str]] = SETS,
    progress: Callable[[str], None] = lambda _m: None,
    locomo: Path | None = None,
) -> list[dict[str, Any]]:
    """One entry per set (see report.suite_markdown), timed as a person waits for it."""
    entries: list[dict[str, Any]] = []
    for dataset, style in sets:
        before, t0 = _load(), time.perf_counter()
        try:
            doc, halves = run_set(cfg, dataset, progress, locomo)
        except CasperError as exc:
            entries.append({"dataset": dataset, "style": style, "skipped": exc.message})
            progress(f"{dataset}: skipped ({exc.message})")
            continue
        seconds = time.perf_counter() - t0
        entries.append(
            {"dataset": dataset, "style": style, "doc": doc, "halves": halves,
             "seconds": seconds, "load": (before, _load())}
        )  # fmt: skip
        progress(f"{dataset}: {seconds:.0f} s")
    return entries


def summary(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The committed JSON: per set the verdict tables (recall by role) and the losses."""
    out: dict[str, Any] = {}
    for e in entries:
        if "doc" not in e:
            out[e["dataset"]] = {"skipped": e["skipped"]}
            continue
        tables = verdict.compare(e["doc"])
        out[e["dataset"]] = {
            "style": e["style"],
            "questions": e["doc"]["scored_questions"],
            "seconds": round(e["seconds"], 1),
            "load": [round(x, 2) for x in e["load"]],
            "reader": reader_summary(e["doc"]),
            "tables": [
                {
                    "label": t.label,
                    "categories": {
                        r.category: {
                            "questions": r.questions,
                            "recall": {
                                role: {str(k): round(v, 4) for k, v in by_k.items()}
                                for role, by_k in r.recall.items()
                            },  # fmt: skip
                        }
                        for r in t.rows
                    },
                    "losses": [
                        {
                            "category": x.category,
                            "k": x.k,
                            "rival": x.rival,
                            "default": round(x.default, 4),
                            "value": round(x.value, 4),
                        }
                        for x in t.losses
                    ],  # fmt: skip
                }
                for t in tables
            ],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.suite", description=__doc__)
    parser.add_argument("--home", type=Path, default=None, help="CASPER_HOME to use")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the Markdown report")
    parser.add_argument("--only", nargs="*", default=None, help="dataset names to run")
    parser.add_argument("--locomo", type=Path, default=None, help="locomo10.json")
    parser.add_argument(
        "--render", type=Path, default=None, help="rewrite the report from a suite-*.json"
    )
    args = parser.parse_args(argv)
    sets = [s for s in SETS if not args.only or s[0] in args.only]
    cfg = load_config(args.home)

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.render is not None:  # the same report from a finished run, without running it
        saved = json.loads(args.render.read_text("utf-8"))
        meta, entries = saved["meta"], saved["entries"]
    else:
        entries = run_suite(cfg, sets, say, args.locomo)
        meta = {
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": "make eval"
            if not args.only
            else "python -m eval.suite --only " + " ".join(args.only),
            "unit": f"{UNIT[0]}x{UNIT[1]}",
            "embedder": cfg.embed_model,
        }
        cfg.runs_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        saved_path = cfg.runs_dir / f"suite-{stamp}.json"
        saved_path.write_text(json.dumps({"meta": meta, "entries": entries}) + "\n", "utf-8")
        say(f"every run of the suite saved to {saved_path} (--render it to rewrite the report)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report.suite_markdown(entries, meta) + "\n", "utf-8")
    summary_path = args.out.with_suffix(".json")
    summary_path.write_text(json.dumps({**meta, "sets": summary(entries)}, indent=1) + "\n")
    say(f"report written to {args.out} and {summary_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
