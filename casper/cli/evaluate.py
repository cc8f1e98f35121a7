"""`casper eval`: the retrieval eval harness (also `python -m eval`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from casper.cli.base import Home, Json, Verbose, _stderr, app, config, guarded, print_json
from casper.errors import CasperError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.status import Status
    from rich.table import Table

    from eval.report import Diff

# inside the command: `casper --help` must not load eval, rich or the work (docs/architecture.md)

R = TypeVar("R")

# The summary's columns, most wanted first: what is left out at a narrow width (the report has
# them all); "run" is always kept.
COLUMN_ORDER = ("msg R@10", "msg R@5", "sess R@10", "MRR@10", "nDCG@10", "msg R@1", "sess R@5",
                "p50 ms", "msg R@25", "sess all@10", "msg R@50", "chunk R@10", "hit@10",
                "p95 ms")  # fmt: skip


def fit_columns(
    header: list[str], rows: list[list[str]], width: int
) -> tuple[list[str], list[list[str]], list[str]]:
    """The summary cut to `width` columns of terminal: whole metric columns are left out,
    least wanted first, instead of every cell shrinking to "…". Returns (header, rows, the
    names left out)."""

    def needed(keep: list[int]) -> int:  # rich's heavy box: a border and 2 spaces per column
        cells = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i])
                 for i in keep]  # fmt: skip
        return sum(cells) + 3 * len(keep) + 1

    rank = {name: n for n, name in enumerate(COLUMN_ORDER)}
    keep = list(range(len(header)))
    while needed(keep) > width and len(keep) > 2:
        worst = max(keep[1:], key=lambda i: (rank.get(header[i], len(rank)), i))
        keep.remove(worst)
    dropped = [h for i, h in enumerate(header) if i not in keep]
    return [header[i] for i in keep], [[r[i] for i in keep] for r in rows], dropped


def shared_tail(doc: dict[str, Any]) -> str | None:
    """The last part every run label shares (the embedder, when all runs used one): the table
    leaves it out of each label and says it once in its title; None when runs differ."""
    tails = {r["label"].rsplit("/", 1)[-1] for r in doc.get("runs") or []}
    return tails.pop() if len(tails) == 1 else None


def _table(title: str, header: list[str], rows: list[list[str]]) -> Table:
    from rich.table import Table

    table = Table(title=title, show_lines=False, title_justify="left")
    for i, name in enumerate(header):
        table.add_column(name, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for row in rows:
        style = "dim italic" if row is rows[-1] and row[0].startswith("DRAGON") else None
        table.add_row(*row, style=style)
    return table


def _baseline_rows(diffs: list[Diff], threshold: float) -> list[list[str]]:
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
    from rich.markup import escape

    from casper.cli.render import console as make_console
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
        err,
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
        progress=lambda msg: err.print(f"[dim]{escape(msg)}[/]", markup=True),
        split=split,
    )
    console = err if json else make_console()
    if not console.is_terminal:
        console.width = max(console.width, 170)  # piped: keep the metric columns readable
    header, rows = report.summary_rows(doc)
    tail = shared_tail(doc)
    if tail:
        rows = [[r[0].removesuffix("/" + tail), *r[1:]] for r in rows]
    header, rows, dropped = fit_columns(header, rows, console.width)
    half = f" ({split} half)" if split != "all" else ""
    title = (
        f"{doc['dataset']}{half}: {doc['scored_questions']} scored of {doc['questions']} questions"
        + (f", every run {tail}" if tail else "")
    )
    console.print(_table(title, header, rows))
    if dropped:
        console.print(f"[dim]left out at this width: {escape(', '.join(dropped))} (all in the "
                      "report)[/]", soft_wrap=True, markup=True)  # fmt: skip
    for line in skipped_lines(doc.get("skipped", [])):
        console.print(line, soft_wrap=True, markup=False)
    stats = doc.get("stats") or {}
    if stats.get("exact_match") is not None:
        console.print(
            f"stats questions: {100 * stats['exact_match']:.0f}% exact ({stats['questions']})"
        )
    answered = doc.get("answers") or {}
    if answered.get("questions"):
        console.print(answer_line(answered), soft_wrap=True, highlight=False)
    elif answered.get("skipped"):
        console.print(f"[yellow]answers skipped[/]: {escape(str(answered['skipped']))}",
                      soft_wrap=True, markup=True)  # fmt: skip
    files = doc["files"]
    for label, key in (("report: ", "markdown"), ("plot:   ", "plot"), ("run:    ", "json")):
        console.print(f"[dim]{escape(label + str(files[key]))}[/]", soft_wrap=True, markup=True)
    regressed: list[Diff] = []
    if base_doc is not None:
        diffs = report.compare(doc, base_doc)
        regressed = report.regressions(diffs, threshold)
        if not diffs:
            console.print("[yellow]the baseline shares no run labels with this run[/]", markup=True)
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
        print_json(doc)
    if regressed:
        worst = min(regressed, key=lambda d: d.delta)
        raise CasperError(
            f"{len(regressed)} metric(s) regressed by more than {threshold:g} "
            f"(worst: {worst.run} {worst.metric} {100 * worst.delta:+.1f} points)",
            hint="see the comparison table; pass --threshold to loosen the check",
        )


def skipped_lines(skipped: Sequence[Mapping[str, str]]) -> list[str]:
    """Two lines per reason: `skipped 2 runs: not reranked: …`, then the runs' labels."""
    by_reason: dict[str, list[str]] = {}
    for skip in skipped:
        by_reason.setdefault(skip["reason"], []).append(skip["label"])
    lines = []
    for reason, labels in by_reason.items():
        runs = f"{len(labels)} runs" if len(labels) > 1 else "1 run"
        lines += [f"skipped {runs}: {reason}", f"  {', '.join(labels)}"]
    return lines


def _answer_engine(no_llm: bool) -> str | None:
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


def _run_with_progress(err: Console, run: Callable[..., R], *args: object, **kwargs: object) -> R:
    """Run the eval; off a terminal its stages (building an index, scoring questions) print
    `casper eval: …` lines as `casper index` does, so a redirected run is never silent for
    minutes. On a terminal one status line under the per-part lines says the stage in progress
    (`synthetic 8x4 · embedding chunks 384/878 · 12s`) and goes when the run ends."""
    from casper.cli.progress import stage_bars

    if err.is_terminal:  # `err` prints the per-part lines: the status line must share it
        with stage_line(err) as stages:
            return run(*args, stages=stages, **kwargs)
    with stage_bars(prefix="casper eval") as stages:
        return run(*args, stages=stages, **kwargs)


@contextmanager
def stage_line(console: Console) -> Iterator[Callable[[str, int, int | None], None]]:
    """A transient spinner line for `(stage, done, total)` callbacks; the elapsed time counts
    up on its own between callbacks (a model loading reports nothing for seconds)."""
    from casper.cli.progress import fmt_duration, label

    now: dict[str, Any] = {"stage": "starting", "text": "starting …", "since": time.monotonic()}

    def text() -> str:
        return f"{now['text']} · {fmt_duration(time.monotonic() - now['since'])}"

    def update(stage: str, done: int, total: int | None) -> None:
        if stage != now["stage"]:
            now.update(stage=stage, since=time.monotonic())
        count = f" {done:,}/{total:,}" if total and total > 1 else ""
        now["text"] = label(stage) + count
        status.update(text())

    with console.status(text(), spinner="dots") as status:
        stop = threading.Event()
        ticker = threading.Thread(target=_tick, args=(stop, status, text), daemon=True)
        ticker.start()
        try:
            yield update
        finally:
            stop.set()
            ticker.join()


def _tick(stop: threading.Event, status: Status, text: Callable[[], str]) -> None:
    while not stop.wait(1.0):
        status.update(text())
