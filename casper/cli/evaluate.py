"""`casper eval`: the retrieval eval harness (also `python -m eval`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from casper.cli.base import Home, Json, Verbose, _stderr, app, config, guarded


def _table(title: str, header: list[str], rows: list[list[str]]) -> Any:
    from rich.table import Table

    table = Table(title=title, show_lines=False, title_justify="left")
    for i, name in enumerate(header):
        table.add_column(name, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for row in rows:
        style = "dim italic" if row is rows[-1] and row[0].startswith("DRAGON") else None
        table.add_row(*row, style=style)
    return table


def _baseline_rows(diffs: list[Any], threshold: float) -> list[list[str]]:
    rows = []
    for d in diffs:
        if "@" in d.metric and not d.metric.endswith(("@10", "@5", "@50")):
            continue  # the full list is in the JSON; the table keeps it readable
        flag = "REGRESSION" if d.delta < -threshold else ""
        rows.append(
            [
                d.run,
                d.metric,
                f"{100 * d.baseline:.1f}",
                f"{100 * d.current:.1f}",
                f"{100 * d.delta:+.1f}",
                flag,
            ]
        )
    return rows


Dataset = Annotated[
    str,
    typer.Option(
        "--dataset",
        help="synthetic | gold-style | locomo | locomo-verbatim | texting | texting-verbatim | "
        "realtalk | realtalk-ambiguous | PATH (gold .jsonl)",
    ),
]
Split = Annotated[
    str,
    typer.Option(
        "--split",
        help="tune | report | all: LoCoMo conv-26..43 is the tune half, the rest the report "
        "half; realtalk: the first owner's phone is the tune half; other sets are halved by "
        "question id",
    ),
]
LocomoFile = Annotated[
    Path | None, typer.Option("--locomo", help="locomo10.json (default $CASPER_LOCOMO)")
]
Modes = Annotated[
    list[str] | None,
    typer.Option("--mode", help="bm25 | vector | hybrid (repeatable; default all)"),
]
Ks = Annotated[
    list[int] | None, typer.Option("-k", help="cutoffs (repeatable; default 1 5 10 25 50)")
]
Units = Annotated[
    list[str] | None,
    typer.Option("--unit", help="chunk unit SIZExSTRIDE (repeatable; default 8x4 and 3x1)"),
]
Embedders = Annotated[
    list[str] | None,
    typer.Option("--embedder", help="embedding model (repeatable; default the configured one)"),
]
NoRerank = Annotated[bool, typer.Option("--no-rerank", help="skip hybrid+rerank runs")]
Baseline = Annotated[
    Path | None,
    typer.Option("--baseline", help="compare with this run file; exit 1 on a regression"),
]
Threshold = Annotated[float, typer.Option("--threshold", help="allowed absolute drop per metric")]
Out = Annotated[
    Path | None, typer.Option("--out", help="where run files go (default CASPER_HOME/runs)")
]
Conversations = Annotated[
    int | None, typer.Option("--conversations", help="LoCoMo: only the first N conversations")
]
Answers = Annotated[
    bool, typer.Option("--answers", help="also score the agent's answers (any --model)")
]
AnswerModel = Annotated[
    str | None, typer.Option("--model", help="--answers: MLX model id or local path")
]
NoLlm = Annotated[bool, typer.Option("--no-llm", help="--answers: score the retrieval-only answer")]
AnswerLimit = Annotated[
    int | None, typer.Option("--answers-limit", help="--answers: N questions, evenly spaced")
]


@app.command("eval")
@guarded
def evaluate(
    dataset: Dataset = "synthetic",
    locomo: LocomoFile = None,
    mode: Modes = None,
    k: Ks = None,
    unit: Units = None,
    embedder: Embedders = None,
    no_rerank: NoRerank = False,
    baseline: Baseline = None,
    threshold: Threshold = 0.02,
    out: Out = None,
    conversations: Conversations = None,
    answers: Answers = False,
    model: AnswerModel = None,
    no_llm: NoLlm = False,
    answers_limit: AnswerLimit = None,
    split: Split = "all",
    home: Home = None,
    json: Json = False,
    verbose: Verbose = False,
) -> None:
    """Retrieval eval: recall/MRR/nDCG@k per mode, chunk unit and embedder, written to runs/."""
    from rich.console import Console

    from casper.errors import CasperError
    from eval import harness, report

    cfg = config(home, llm_model=model)
    err = _stderr()
    if answers_limit is not None and answers_limit < 1:
        raise CasperError("--answers-limit must be at least 1")
    if conversations is not None and conversations < 1:
        raise CasperError("--conversations must be at least 1")
    if k and min(k) < 1:
        raise CasperError("-k must be at least 1")
    base_doc = report.load_run(baseline) if baseline else None
    units = [harness.parse_unit(u) for u in unit] if unit else None
    doc = _run_with_progress(
        harness.run_eval,
        cfg,
        dataset,
        modes=mode or harness.MODES,
        ks=k or (1, 5, 10, 25, 50),
        units=units,
        embedders=embedder,
        rerank=not no_rerank,
        out_dir=out or cfg.runs_dir,
        locomo_path=locomo,
        conversations=conversations,
        answers=answers,
        engine=_answer_engine(no_llm),
        answers_limit=answers_limit,
        progress=lambda msg: err.print(f"[dim]{msg}[/]", highlight=False),
        split=split,
    )
    console = err if json else Console()
    if not console.is_terminal:
        console.width = max(console.width, 170)  # piped: keep the metric columns readable
    header, rows = report.summary_rows(doc)
    half = f" ({split} half)" if split != "all" else ""
    title = (
        f"{doc['dataset']}{half}: {doc['scored_questions']} scored of {doc['questions']} questions"
    )
    console.print(_table(title, header, rows))
    for skip in doc.get("skipped", []):
        console.print(f"[yellow]skipped[/] {skip['label']}: {skip['reason']}", soft_wrap=True)
    stats = doc.get("stats") or {}
    if stats.get("exact_match") is not None:
        console.print(
            f"stats questions: {100 * stats['exact_match']:.0f}% exact ({stats['questions']})"
        )
    answered = doc.get("answers") or {}
    if answered.get("questions"):
        console.print(answer_line(answered), soft_wrap=True, highlight=False)
    elif answered.get("skipped"):
        console.print(f"[yellow]answers skipped[/]: {answered['skipped']}", soft_wrap=True)
    console.print(f"[dim]run written to {doc['files']['json']}[/]", soft_wrap=True)
    regressed: list[Any] = []
    if base_doc is not None:
        diffs = report.compare(doc, base_doc)
        regressed = report.regressions(diffs, threshold)
        if not diffs:
            console.print("[yellow]the baseline shares no run labels with this run[/]")
        else:
            console.print(
                _table(
                    f"against {baseline}",
                    ["run", "metric", "base", "now", "Δ", ""],
                    _baseline_rows(diffs, threshold),
                )
            )
        doc["baseline"] = {
            "file": str(baseline),
            "threshold": threshold,
            "regressions": [
                {"run": d.run, "metric": d.metric, "baseline": d.baseline, "current": d.current}
                for d in regressed
            ],
        }
    if json:
        from casper.cli.base import print_json

        print_json(doc)
    if regressed:
        worst = min(regressed, key=lambda d: d.delta)
        raise CasperError(
            f"{len(regressed)} metric(s) regressed by more than {threshold:g} "
            f"(worst: {worst.run} {worst.metric} {100 * worst.delta:+.1f} points)",
            hint="see the comparison table; pass --threshold to loosen the check",
        )


def _answer_engine(no_llm: bool) -> Any:
    from eval.answers import RETRIEVAL_ONLY

    return RETRIEVAL_ONLY if no_llm else None


def answer_line(a: dict[str, Any]) -> str:
    """The answer scores in one line (the README quotes these)."""

    def pct(key: str) -> str:
        value = a.get(key)
        return "n/a" if value is None else f"{100 * value:.0f}%"

    tps = a.get("tokens_per_s")
    return (
        f"answers ({a.get('model')}, {a['questions']} questions): "
        f"contains gold {pct('contains_gold')}"
        f", citation precision {pct('citation_precision')}, recall {pct('citation_recall')}"
        f", abstains correctly {pct('abstention_correct')}"
        f", false abstention {pct('false_abstention')}"
        f", mean iterations {a.get('iterations') or 0:.1f}"
        f", {'n/a' if not tps else f'{tps:.1f}'} tok/s"
        f", guards {a.get('guards') or {}}"
    )


def _run_with_progress(run: Any, *args: Any, **kwargs: Any) -> Any:
    """Run the eval; off a terminal its stages (building an index, scoring questions) print
    `casper eval: …` lines as `casper index` does, so a redirected run is never silent for
    minutes. A terminal keeps the per-part lines only (no bars under the dim lines)."""
    from casper.cli.progress import stage_bars

    if _stderr().is_terminal:
        return run(*args, **kwargs)
    with stage_bars(prefix="casper eval") as stages:
        return run(*args, stages=stages, **kwargs)
