"""Run files: JSON + Markdown report + recall@k plot, and `--baseline` comparisons."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from casper.errors import CasperError
from eval import verdict
from eval.markdown import fmt as _fmt
from eval.markdown import table as _table
from eval.reader_report import reader_section

HEADLINE = ("message_recall@{k}",)
# context sizes (smaller is not worse) and chance levels (not the search's doing)
NOT_QUALITY = ("chunk_messages@", "reader_messages@", "session_chance", "answered")


@dataclass(frozen=True, slots=True)
class Diff:
    """One metric of one run against the baseline run with the same label."""

    run: str
    metric: str
    baseline: float
    current: float

    @property
    def delta(self) -> float:
        return self.current - self.baseline


def _stamp(out_dir: Path) -> Path:
    """A stem none of whose three files is there yet (a link counts: never written through)."""
    base = datetime.now().strftime("%Y%m%d-%H%M%S")
    stem, n = out_dir / base, 1
    while any(os.path.lexists(stem.with_suffix(ext)) for ext in (".json", ".md", ".png")):
        n += 1
        stem = out_dir / f"{base}-{n}"
    return stem


def write_run(doc: Mapping[str, Any], out_dir: Path) -> dict[str, Path]:
    """`<out>/<timestamp>.json`, `.md` and `.png`; returns the paths written. Written as
    `casper export` writes (casper.app.outfile): 0600, never over a file or through a link,
    so an `--out` folder others can write to can't steer them."""
    from casper.app.outfile import write_private

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = _stamp(out_dir)
    paths = {
        "json": stem.with_suffix(".json"),
        "markdown": stem.with_suffix(".md"),
        "plot": stem.with_suffix(".png"),
    }
    full = {**doc, "files": {k: str(v) for k, v in paths.items()}}
    text = json.dumps(full, indent=1, ensure_ascii=False) + "\n"
    write_private(paths["plot"], plot_recall(doc), force=False)
    write_private(paths["json"], text.encode("utf-8"), force=False)
    write_private(paths["markdown"], to_markdown(full, plot=paths["plot"].name).encode("utf-8"),
                  force=False)  # fmt: skip
    return paths


def load_run(path: Path) -> dict[str, Any]:
    """A run file written by `write_run` (or `casper eval --json`)."""
    try:
        doc = json.loads(Path(path).read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CasperError(
            f"cannot read baseline {path}: {exc}", hint="pass a run file from CASPER_HOME/runs/"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise CasperError(
            f"{path} is not a casper eval run file", hint="pass a run file from CASPER_HOME/runs/"
        )
    return doc


def compare(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[Diff]:
    """Per-metric differences of the runs both documents share (matched by label)."""
    base = {r["label"]: r for r in baseline.get("runs", [])}
    diffs = []
    for run in current.get("runs", []):
        old = base.get(run["label"])
        if old is None:
            continue
        for metric, value in run["metrics"].items():
            if metric.startswith(NOT_QUALITY) or metric not in old["metrics"]:
                continue
            diffs.append(Diff(run["label"], metric, float(old["metrics"][metric]), float(value)))
    return diffs


def regressions(diffs: Sequence[Diff], threshold: float = 0.02) -> list[Diff]:
    """Metrics that fell by more than `threshold` (absolute)."""
    return [d for d in diffs if d.delta < -threshold]


def summary_rows(doc: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(header, rows): runs × headline metrics (percent), the reference row last."""
    ks = list(doc.get("ks", [1, 5, 10, 25, 50]))
    k10 = 10 if 10 in ks else ks[-1]
    sessions = [
        key
        for key in ("session_recall@5", "session_recall@10", "session_all@10")
        if any(key in r["metrics"] for r in doc.get("runs", []))
    ]
    header = (
        ["run"]
        + [f"msg R@{k}" for k in ks]
        + [key.replace("session_recall", "sess R").replace("session_", "sess ") for key in sessions]
        + [f"chunk R@{k10}", f"MRR@{k10}", f"nDCG@{k10}", f"hit@{k10}", "p50 ms", "p95 ms"]
    )
    rows = []
    for run in doc.get("runs", []):
        m = run["metrics"]
        rows.append(
            [run["label"]]
            + [_fmt(m.get(f"message_recall@{k}")) for k in ks]
            + [_fmt(m.get(key)) for key in sessions]
            + [
                _fmt(m.get(f"chunk_recall@{k10}")),
                _fmt(m.get(f"mrr@{k10}")),
                _fmt(m.get(f"ndcg@{k10}")),
                _fmt(m.get(f"hit@{k10}")),
                _fmt(run["latency_ms"]["p50"], pct=False),
                _fmt(run["latency_ms"]["p95"], pct=False),
            ]
        )
    ref = doc.get("reference")
    if ref:
        rows.append(
            [ref["name"]]
            + [_fmt(ref.get(f"message_recall@{k}")) for k in ks]
            + ["–"] * (6 + len(sessions))
        )
    return header, rows


def hybrid_vs_legs(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each hybrid run against the better of its own legs (same unit, embedder, reading).

    The legs are bm25 on the same lexical backend and vector; `margin` is hybrid minus the
    best leg's message recall@k, so a negative margin means fusion lost to a single leg.
    """
    runs = doc.get("runs", [])

    def key(r: Mapping[str, Any]) -> tuple[Any, ...]:
        return r["unit"], r["embedder"], r.get("literal", False)

    out = []
    for run in runs:
        if run["mode"] != "hybrid" or run["rerank"]:
            continue
        legs = [
            r
            for r in runs
            if key(r) == key(run)
            and not r["rerank"]
            and (r["mode"] == "vector" or (r["mode"] == "bm25" and r["lexical"] == run["lexical"]))
        ]
        if not legs:
            continue
        row: dict[str, Any] = {"label": run["label"], "ks": {}}
        for k in doc.get("ks", []):
            metric = f"message_recall@{k}"
            best = max(legs, key=lambda r: r["metrics"].get(metric, 0.0))
            value = run["metrics"].get(metric, 0.0)
            row["ks"][k] = {
                "hybrid": value,
                "best_leg": best["mode"],
                "best": best["metrics"].get(metric, 0.0),
                "margin": value - best["metrics"].get(metric, 0.0),
            }
        out.append(row)
    return out


SESSION_NOTE = (
    "k counts distinct sessions (the dataset's `session_N`): the ranked chunks' messages are "
    "mapped to their sessions in rank order until k differ (LongMemEval's turn → session "
    "aggregation). recall = share of the question's evidence sessions among them (MemPalace's "
    "LoCoMo figure); any = at least one (LongMemEval `recall_any@k`); all = every one "
    "(`recall_all@k`). chance = the recall a ranking with no information reaches: k over "
    "the sessions of the history; chance in chat = k over the sessions of the chats that hold "
    "the evidence (a ranking that found the right chat and nothing more). Casper ranks "
    "3-message passages, not whole sessions; see docs/retrieval.md for the peers' protocols."
)


def session_section(doc: Mapping[str, Any], level: str = "##") -> list[str]:
    """Session-level recall per run and, for the default, per category (when scored)."""
    runs = [r for r in doc.get("runs", []) if "session_recall@10" in r["metrics"]]
    if not runs:
        return []
    keys = [f"session_{what}@{k}" for what in ("recall", "any", "all") for k in (5, 10)]
    names = [f"{what} @{k}" for what in ("recall", "any", "all") for k in (5, 10)]
    if any("session_chance@10" in r["metrics"] for r in runs):  # read recall beside chance
        keys += [f"session_{what}@{k}" for what in ("chance", "chance_chat") for k in (5, 10)]
        names += [f"{what} @{k}" for what in ("chance", "chance in chat") for k in (5, 10)]
    lines = [f"{level} session-level recall", "", SESSION_NOTE, ""]
    body = [[r["label"]] + [_fmt(r["metrics"].get(key)) for key in keys] for r in runs]
    lines += _table(["run", *names], body) + [""]
    for run in runs:
        ablation = run.get("literal") or verdict.ablated_fusion(run) or run.get("feedback", False)
        if run["mode"] != "hybrid" or ablation or len(run["by_category"]) < 2:
            continue
        lines += [f"{level}# {run['label']}: session-level recall by category", ""]
        body = [
            [f"{c} (n={int(m.get('questions', 0))})"] + [_fmt(m.get(key)) for key in keys]
            for c, m in sorted(run["by_category"].items())
        ]
        lines += _table(["category", *names], body) + [""]
    return lines


def _category_tables(doc: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per-category message recall at every k for each default hybrid run (not ablations)."""
    lines: list[str] = []
    ks = list(doc.get("ks", []))
    for run in runs:
        ablation = run.get("literal") or verdict.ablated_fusion(run) or run.get("feedback", False)
        if run["mode"] != "hybrid" or ablation:
            continue
        cats = sorted(run["by_category"])
        if len(cats) < 2:
            continue
        lines += [f"### {run['label']}: message recall by category", ""]
        body = [
            [f"{c} (n={int(run['by_category'][c].get('questions', 0))})"]
            + [_fmt(run["by_category"][c].get(f"message_recall@{k}")) for k in ks]
            for c in cats
        ]
        lines += _table(["category", *[f"R@{k}" for k in ks]], body) + [""]
    return lines


def to_markdown(doc: Mapping[str, Any], plot: str | None = None) -> str:
    """The human-readable report of one run document."""
    lines = [
        f"# casper eval: {doc['dataset']}",
        "",
        f"{doc['created']} · {doc['questions']} questions, {doc['scored_questions']} with "
        "relevant messages (the rest are unanswerable and left out of recall).",
        "",
        "Message-level recall cuts the ranked chunks' messages at k (comparable to LoCoMo "
        "turn-level recall); chunk-level metrics count k chunks. Values are percent, "
        "macro-averaged over questions.",
        "",
    ]
    header, rows = summary_rows(doc)
    lines += _table(header, rows) + [""]
    if plot:
        lines += [f"![recall@k]({plot})", ""]
    runs = doc.get("runs", [])
    cats = sorted({c for r in runs for c in r["by_category"]})
    if runs and cats:
        k = 10 if 10 in doc.get("ks", []) else doc["ks"][-1]
        lines += [f"## message recall@{k} by category", ""]
        counts = [
            f"{c} (n={int(runs[0]['by_category'].get(c, {}).get('questions', 0))})" for c in cats
        ]
        body = [
            [r["label"]]
            + [_fmt(r["by_category"].get(c, {}).get(f"message_recall@{k}")) for c in cats]
            for r in runs
        ]
        ref = doc.get("reference") or {}
        if ref.get("by_category"):
            body.append(
                [ref["name"]]
                + [_fmt(ref["by_category"].get(c, {}).get(f"message_recall@{k}")) for c in cats]
            )
        lines += _table(["run", *counts], body) + [""]
    lines += session_section(doc)
    lines += reader_section(doc)
    checks = hybrid_vs_legs(doc)
    if checks:
        ks = list(doc.get("ks", []))
        lines += [
            "## fusion: hybrid against its best single leg",
            "",
            "Message recall@k (percent) of each hybrid run minus the better of its own bm25 "
            "and vector runs (same unit, embedder and query reading); negative = fusion lost.",
            "",
        ]
        body = [
            [row["label"]]
            + [
                f"{100 * c['hybrid']:.1f} vs {c['best_leg']} {100 * c['best']:.1f} "
                f"({100 * c['margin']:+.1f})"
                for c in (row["ks"][k] for k in ks)
            ]
            for row in checks
        ]
        lines += _table(["hybrid run", *[f"R@{k}" for k in ks]], body) + [""]
    lines += verdict_section(doc)
    if runs:
        lines += _category_tables(doc, runs)
    if doc.get("skipped"):
        lines += ["## skipped", ""] + [f"- {s['label']}: {s['reason']}" for s in doc["skipped"]]
        lines.append("")
    stats = doc.get("stats")
    if stats and stats.get("exact_match") is not None:
        lines += [
            "## stats questions",
            "",
            f"exact match of the stats tools: {_fmt(stats['exact_match'])}% of "
            f"{stats['questions']}",
            "",
        ]
        lines += [f"- {r['id']}: {'ok' if r['ok'] else 'FAIL'}" for r in stats["items"]] + [""]
    answers = doc.get("answers")
    if answers:
        lines += ["## answers (LLM)", ""]
        if "skipped" in answers:
            lines += [f"skipped: {answers['skipped']}", ""]
        else:
            lines += [
                f"- {key}: {_fmt(answers.get(key))}"
                for key in ("contains_gold", "citation_recall", "abstention", "false_abstention")
            ]
            lines += [
                f"- mean iterations: {answers.get('iterations')}",
                f"- guards: {answers.get('guards')}",
                "",
            ]
    info = doc.get("info")
    if info:
        lines += ["## dataset notes", "", "```", json.dumps(info, indent=1), "```", ""]
    return "\n".join(lines)


# ---- the default against --literal and each leg (eval.verdict) ---------------------------------
VERDICT_RULE = (
    "Message recall (percent) at k = {ks} of the default (hybrid, question read) against "
    "`--literal` hybrid and each single leg, read and literal. Verdict: *ok* when the default "
    "is at or above every one of them within 0.5 points at every k; else the cells it loses, "
    "with the rival's figure and the margin."
)


def _cell(values: Mapping[int, float]) -> str:
    return " / ".join(f"{100 * v:.1f}" for v in values.values())


def verdict_text(losses: Sequence[verdict.Loss]) -> str:
    """`ok`, or each lost cell: `R@10 < bm25 literal 65.1 (−3.2)`."""
    if not losses:
        return "ok"
    return "; ".join(
        f"R@{x.k} < {x.rival} {100 * x.value:.1f} ({100 * x.margin:+.1f})" for x in losses
    )


def verdict_table(table: verdict.Table) -> list[str]:
    """One markdown table: category (n) | a column per role | verdict."""
    header = ["category (n)", *table.roles, "verdict"]
    body = [
        [f"{row.category} ({row.questions})", *(_cell(row.recall[r]) for r in table.roles),
         verdict_text(row.losses)]
        for row in table.rows
    ]  # fmt: skip
    return _table(header, body)


def verdict_section(doc: Mapping[str, Any]) -> list[str]:
    """The per-category comparison of every default run in `doc` (nothing without one)."""
    lines: list[str] = []
    for table in verdict.compare(doc):
        if len(table.roles) < 2:
            continue
        ks = "/".join(str(k) for k in table.ks)
        lines += [f"## default against --literal and each leg: {table.label}", ""]
        lines += [VERDICT_RULE.format(ks=ks) + " Cells are R@" + ks + ".", ""]
        lines += verdict_table(table) + [""]
    return lines


def suite_markdown(entries: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]) -> str:
    """The `make eval` report: every set × question style, per category, with the loss list.

    Each entry: `dataset`, `style`, `doc` (the whole set), `halves` ({"tune": doc, "report":
    doc}), `seconds` and `load` (1-min load average before and after), or `skipped` (why).
    """
    done = [e for e in entries if "doc" in e]
    lines = [
        "# casper eval: every set, both question styles",
        "",
        f"{meta.get('created', '')} · `{meta.get('command', 'make eval')}` · unit "
        f"{meta.get('unit', '3x1')}, embedder {meta.get('embedder', '?')}, reranking off. "
        + VERDICT_RULE.format(ks="/".join(str(k) for k in verdict.VERDICT_KS)),
        "",
        "Each set is run as its two halves (`casper eval --split tune` and `--split report`: "
        "LoCoMo conv-26…43 is the tune half, REALTALK's first owner's phone is its tune half and "
        "the other phone its report half, every other set is halved by question id) and "
        "the whole is their question-weighted mean, which is exact. Tune on the tune half; "
        "report on the report half.",
        "",
        "## Where the default loses",
        "",
        "Every category cell (category, k) where the default is more than 0.5 points below "
        "`--literal` or a single leg on the whole set: its worst rival, the margin, the other "
        "rivals it is below, and the worst margin of that cell on each half (*ok* where it "
        "holds there).",
        "",
    ]
    rows = []
    for e in done:
        halves = {h: verdict.compare(d) for h, d in e["halves"].items()}
        for table in verdict.compare(e["doc"]):
            sizes = {row.category: row.questions for row in table.rows}
            for (cat, k), found in verdict.cells(table.losses).items():
                worst = found[0]
                per_half = []
                for h in ("tune", "report"):
                    there = [
                        x.margin for t in halves.get(h, []) for x in t.losses
                        if (x.category, x.k) == (cat, k)
                    ]  # fmt: skip
                    per_half.append(f"{100 * min(there):+.1f}" if there else "ok")
                rows.append(
                    [e["dataset"], e["style"], f"{cat} ({sizes[cat]})", f"R@{k}",
                     f"{100 * worst.default:.1f}", f"{worst.rival} {100 * worst.value:.1f}",
                     f"{100 * worst.margin:+.1f}", ", ".join(x.rival for x in found[1:]) or "–",
                     *per_half]
                )  # fmt: skip
    header = ["set", "style", "category (n)", "k", "default", "worst rival", "margin",
              "also below", "tune", "report"]  # fmt: skip
    lines += (_table(header, rows) if rows else ["None: the default holds everywhere."]) + [""]
    lines += ["## Time per set", ""]
    timing = [
        [e["dataset"], e["style"], str(e["doc"]["scored_questions"]), f"{e['seconds']:.0f}",
         " → ".join(f"{x:.1f}" for x in e.get("load", ()))]
        if "doc" in e else [e["dataset"], e["style"], "–", "–", f"skipped: {e['skipped']}"]
        for e in entries
    ]  # fmt: skip
    header = ["set", "style", "questions", "seconds (both halves)", "1-min load before → after"]
    lines += _table(header, timing) + [""]
    for e in done:
        doc = e["doc"]
        lines += [f"## {e['dataset']} ({e['style']}): {doc['scored_questions']} questions", ""]
        for table in verdict.compare(doc):
            lines += [f"{table.label}; cells are R@{'/'.join(str(k) for k in table.ks)}", ""]
            lines += verdict_table(table) + [""]
        lines += reader_section(doc, level="###")
        lines += session_section(doc, level="###")
    return "\n".join(lines)


PLOT_STYLES = ("-", "--", ":", "-.")
PLOT_MARKERS = ("o", "s", "^", "D", "v", "x")


def plot_styles(runs: Sequence[Mapping[str, Any]]) -> list[tuple[int, str, str]]:
    """(colour number, line style, marker) per run, never the same for two runs: the colour
    is the retrieval variant (mode, word index, rerank, literal, fusion, feedback; tab10, or
    tab20 past ten variants), the line style the chunk unit and embedder, and past 20 variants
    the marker tells them apart too."""
    variants = list(dict.fromkeys(_variant(r) for r in runs))
    indexes = list(dict.fromkeys((r["unit"], r["embedder"]) for r in runs))
    palette = 10 if len(variants) <= 10 else 20
    out = []
    for run in runs:
        v = variants.index(_variant(run))
        i = indexes.index((run["unit"], run["embedder"]))
        marker = PLOT_MARKERS[(v // palette + i // len(PLOT_STYLES)) % len(PLOT_MARKERS)]
        out.append((v % palette, PLOT_STYLES[i % len(PLOT_STYLES)], marker))
    return out


def _variant(run: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(run.get(key) for key in ("mode", "lexical", "rerank", "literal", "fuse",
                                           "feedback", "rewrites"))  # fmt: skip


def plot_recall(doc: Mapping[str, Any]) -> bytes:
    """Message- and chunk-level recall@k per run, with the reference (DRAGON) line if any: a
    PNG, drawn in memory."""
    # matplotlib here: seconds to import, and only a run written to a folder draws its plot
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = list(doc.get("ks", [1, 5, 10, 25, 50]))
    runs = doc.get("runs", [])
    looks = plot_styles(runs)
    colours = plt.get_cmap("tab10" if max((c for c, _, _ in looks), default=0) < 10 else "tab20")
    fig, axes = plt.subplots(1, 2, figsize=(12, 6.5), sharey=True)
    for ax, prefix, title in (
        (axes[0], "message_recall", "message level (k messages)"),
        (axes[1], "chunk_recall", "chunk level (k chunks)"),
    ):
        for run, (colour, style, marker) in zip(runs, looks, strict=True):
            ys = [100 * run["metrics"].get(f"{prefix}@{k}", 0.0) for k in ks]
            ax.plot(ks, ys, style, color=colours(colour), marker=marker, markersize=4,
                    label=run["label"])  # fmt: skip
        ref = doc.get("reference")
        if ref and prefix == "message_recall":
            rks = [k for k in ks if f"message_recall@{k}" in ref]
            ax.plot(
                rks,
                [100 * ref[f"message_recall@{k}"] for k in rks],
                color="black",
                linewidth=2.5,
                marker="s",
                label=ref["name"],
            )
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel("k")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("recall@k (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7, frameon=False)
    fig.suptitle(f"casper eval: {doc['dataset']} ({doc['scored_questions']} questions)")
    fig.tight_layout(rect=(0, 0.04 + 0.025 * ((len(labels) + 2) // 3), 1, 1))
    picture = io.BytesIO()
    fig.savefig(picture, format="png", dpi=110)
    plt.close(fig)
    return picture.getvalue()
