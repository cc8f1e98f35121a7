"""bench/results/scale.{json,md}: merging one run's records into the file, and the table.

Three commands write records into scale.json: a full `python -m bench.scale` (`end_to_end`,
`real_minilm`, `vector_memory.synth`, labelled by `full_run`), `python -m bench.scale --only
first-search` (`first_search`) and `python -m bench.vecmem` (`vector_memory.*`). Each merges its
own records and keeps the others', and every table row says which run measured it (command,
time when recorded, 1-minute load average before → after).

`python -m bench.scale_report [--keep-from OLD.json]` writes scale.md again from scale.json,
first taking back from OLD.json the records scale.json lacks (what a full run of an older
bench.scale, which rewrote the whole file, dropped).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

# Top-level records a full run replaces besides its own: the recall and depth-sweep records of
# the full runs before the one SYNTH implementation (bench/synth.py, now `vector_memory.synth`),
# and the unlabelled load averages of the full runs before `full_run`.
FULL_RUN_SUPERSEDES = ("vector_recall", "depth_sweep", "load_avg_before", "load_avg_after")
RESULTS = Path(__file__).parent / "results"
# How records from before the labels are marked (when they ran was not recorded)
UNLABELLED = "unlabelled"


def load_results(out: Path) -> dict[str, Any]:
    path = out / "scale.json"
    return json.loads(path.read_text()) if path.exists() else {}


def save_results(out: Path, records: dict[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """Merge `records` (top-level keys, each replaced whole) into scale.json, remove `drop`,
    write both files; returns what was written. The table needs a full run's records: until
    there is one, only the JSON is written."""
    saved = load_results(out)
    for key in drop:
        saved.pop(key, None)
    saved.update(records)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps(saved, indent=1) + "\n")
    if "end_to_end" in saved:
        (out / "scale.md").write_text(to_markdown(saved))
    return saved


def save_full_run(out: Path, records: dict[str, Any], synth: dict[str, Any]) -> dict[str, Any]:
    """A full `bench.scale` run's records merged in: its SYNTH recall run replaces
    `vector_memory.synth` (the record `bench.vecmem --only synth` writes too), bench.vecmem's
    other records stay; the records a full run's older versions wrote go (FULL_RUN_SUPERSEDES)."""
    memory = {**load_results(out).get("vector_memory", {}), "synth": synth}
    return save_results(out, {**records, "vector_memory": memory}, drop=FULL_RUN_SUPERSEDES)


def run_label(record: dict[str, Any], by: str, note: str | None = None) -> str:
    """Which run measured a record: "`command` (note), time, load before → after" (1-minute
    load averages); `by` is the command when the record does not name one."""
    parts = [f"`{record.get('by') or by}`" + (f" ({note})" if note else "")]
    if record.get("at"):
        parts.append(record["at"])
    before, after = record.get("load_avg_before"), record.get("load_avg_after")
    if isinstance(before, list) and before:
        parts.append(
            f"load {before[0]} → {after[0]}" if isinstance(after, list) else f"load {before[0]}"
        )
    elif isinstance(record.get("load_avg"), str):  # a hand-recorded load
        parts.append(f"load {record['load_avg']}")
    return ", ".join(parts)


def full_run_label(r: dict[str, Any]) -> str:
    if "full_run" in r:
        return run_label(r["full_run"], "bench.scale")
    legacy = {k: r[k] for k in ("load_avg_before", "load_avg_after") if k in r}
    return run_label(legacy, "bench.scale", UNLABELLED)


def to_markdown(r: dict[str, Any]) -> str:
    e, m = r["end_to_end"], r.get("real_minilm", {})
    h = e["hybrid"]
    rss = h["rss_after_queries_mb"]
    base = h["rss_before_mb"]
    full = full_run_label(r)
    lines = [
        f"# Scale: {r['messages_generated']:,} generated messages "
        f"({e['messages']:,} searchable, {e['chunks']:,} chunks)",
        "",
        f"{r['machine']}. FAKE = fake fast embedder (random vectors), REAL = the bundled MiniLM, "
        "SYNTH = MiniLM-shaped generated vectors. The last column says which run measured a row "
        "(command, when, 1-minute load average before → after): a full `python -m bench.scale` "
        "replaces only its own rows and keeps those of `--only first-search` and "
        "`python -m bench.vecmem`, which keep each other's.",
        "",
        "| measure | result | target | run |",
        "|---|---|---|---|",
        f"| time to first lexical search from a cold start (FAKE) | "
        f"**{e.get('time_to_first_lexical_search_s')} s** (lexical legs ready "
        f"{e['first_index']['lexical_ready_s']} s after `casper index` started, + "
        f"{e['cold_lexical_search']['wall_s']} s for a cold `casper search --mode bm25` "
        "that auto-starts the service) "
        f"| ≤ 60 s | {full} |",
        f"| vector memory resident (FAKE, after {h['queries']} hybrid queries) | "
        f"**{rss['RssAnon'] - base['RssAnon']} MB anonymous** + "
        f"{rss['RssFile'] - base['RssFile']} MB file-backed "
        f"(float16 file {h['vectors_file_mb']} MB on disk; sign codes "
        f"{h['codes_in_memory_mb']} MB) | ≤ 400 MB | {full} |",
        f"| hybrid p50 / p95 in-process (FAKE query vectors, no rerank) | "
        f"**{h['p50_ms']} / {h['p95_ms']} ms** | ≤ 60 / 150 ms | {full} |",
        f"| `casper index` peak RSS (FAKE) | **{e['index_peak_rss_mb']} MB** | ≤ 1.5 GB | {full} |",
        f"| resume after kill -9 during embedding (FAKE) | killed after "
        f"{e['after_kill']['vectors_done']:,} of {e['after_kill']['vectors_total']:,} vectors; "
        f"the next run embedded **{e['resume']['embedded']:,}** = the "
        f"{e['resume']['missing_before']:,} missing: "
        f"{'yes' if e['resume']['embeds_only_missing'] else 'NO'} | only the missing | {full} |",
        f"| no-op re-index | **{e['noop_reindex']['run_index_s']} s** in-process "
        f"({e['noop_reindex']['wall_s_process']} s for the whole process, imports included), "
        f"{e['noop_reindex']['embedded']} embedded | ≤ 1 s | {full} |",
    ]
    v = r.get("vector_recall")  # a full run's own recall record, before bench/synth.py
    if v:
        lines.append(
            f"| recall@10, float16 + sign-bit prefilter vs exact float32 (SYNTH, "
            f"{v['chunks']:,} chunks) | **{v['recall@10_vs_exact_float32']}** "
            f"(vector leg p50 {v['vector_p50_ms']} ms) | ≥ 0.99 | {full} |"
        )
    if "passages_per_s" in m:
        lines.append(
            f"| embedding rate (REAL, {m['sample']} of the corpus's passages) | "
            f"{m['passages_per_s']} passages/s → a full fill of {e['chunks']:,} chunks ≈ "
            f"{m['projected_fill_min']} min (searchable lexically meanwhile) | — | {full} |"
        )
    lines += first_search_rows(r.get("first_search"))
    # bench/vecmem.py's records, and bench/synth.py's recall run (by either command)
    lines += vector_memory_rows(r.get("vector_memory", {}))
    old = r.get("depth_sweep")  # a hand-run sweep from before bench/synth.py ran one
    for row in (old or {}).get("sweep", []):
        lines.append(
            f"| rescoring `count // {row['share']}` candidates (SYNTH, "
            f"{old['chunks']:,} chunks, {old['queries']} queries) | "
            f"recall@10 {row['recall@10']}, vector p50 {row['p50_ms']} ms | ≥ 0.99 | "
            f"{run_label(old, 'bench.scale', 'a separate sweep, ' + UNLABELLED)} |"
        )
    lines += [
        "",
        f"Resume run: {e['resume']['wall_s']} s, peak RSS {e['resume']['peak_rss_mb']} MB. "
        f"Vector matrix load (cold, from the cache): {h['matrix_load_s']} s.",
        "",
    ]
    return "\n".join(lines)


def first_search_rows(f: dict[str, Any] | None) -> list[str]:
    """The rows of `--only first-search` (see `bench.scale.first_search`)."""
    if not f:
        return []
    p, c, lex = f["parts_s"], f["cpu_s_parts"], f.get("lexical_step_parts_s", {})
    svc = f["cold_search"]["fresh_service"]
    label = run_label(f, "bench.scale --only first-search")
    size = f"{f['messages_generated']:,} messages, " if "messages_generated" in f else ""
    return [
        f"| time to first lexical search from a cold start, `--only first-search` (FAKE, "
        f"{size}median of {f.get('runs', 1)}: {f.get('all_runs_s')}) | "
        f"**{f['time_to_first_lexical_search_s']} s** wall, "
        f"{f['cpu_s_to_first_lexical_search']} CPU-s: start + imports {p['process_start_and_imports']}"
        f" s, ingest {p['ingest_and_open_index']} s, lexical step {p['lexical_step']} s (chunk + "
        f"write {lex.get('chunk', '?')} s, text index {lex.get('optimize', '?')} s), cold "
        f"`casper search --mode bm25` {p['cold_search_in_process']} s | ≤ 60 s | {label} |",
        f"| … of which not ingest (start + lexical step + cold search) | "
        f"**{f['non_ingest_s']} s** wall; CPU-s: index until the lexical step "
        f"{c['index_until_lexical_step']}, lexical step {c['lexical_step']}, cold search "
        f"{c['cold_search_in_process']} | — | {label} |",
        f"| first `casper search --mode bm25` through a freshly started service | "
        f"{svc['wall_s']} s (client wall; {svc['hits']} hits) | — | {label} |",
        "| `casper index` peak RSS through ingest + lexical index (FAKE) | "
        f"**{f['index_peak_rss_mb_until_lexical_ready']} MB** | ≤ 1.5 GB | {label} |",
    ]


def vector_memory_rows(got: dict[str, Any]) -> list[str]:
    """The "vector ..." rows: bench/vecmem.py's `resident` and `latency` records and the SYNTH
    recall run (bench/synth.py, from `bench.vecmem` or a full `bench.scale`)."""
    rows: list[str] = []
    res = got.get("resident")
    if res:
        label = run_label(res, "bench.vecmem")
        steps = res["steps"]
        after = steps[next(k for k in steps if k.startswith("after "))]
        trimmed = steps["the same, freed memory returned (malloc_trim)"]
        cache = {
            k.split(": ")[1]: v for k, v in after["smaps_mb"].items() if k.startswith("vector")
        }
        meta = res["meta_parts_mb"]
        side = round(sum(cache.values()) + sum(meta.values()), 1)
        loaded = steps["chunk meta + filters loaded"]["status_mb"]
        opened = steps["index + store open"]["status_mb"]
        model = steps.get("model loaded + one query embedded", {}).get("status_mb")
        # (its timings run between the memory probes: the JSON keeps them, the table quotes
        # the `latency` run, timed alone)
        rows += [
            f"| vector side resident (FAKE, {res['chunks']:,} chunks, after "
            f"{res['queries']} hybrid queries) | "
            f"**{side} MB**: mapped cache pages {cache} (every mapped page counted; float16 rows "
            f"are read with `pread`, 0 MB of them mapped) + chunk meta columns {meta} "
            f"| ≤ 400 MB | {label} |",
            f"| searching process RSS (FAKE, {res['chunks']:,} chunks: LanceDB + store + meta + "
            f"vector search, no model) | **{after['status_mb']['VmRSS']} MB** after the queries "
            f"({trimmed['status_mb']['VmRSS']} MB once freed memory is returned; anonymous "
            f"{after['status_mb']['RssAnon']} MB); opening index + store "
            f"{opened['VmRSS']} MB, + meta load → {loaded['VmRSS']} MB (peak {loaded['VmHWM']} "
            f"MB during the scan); one query's peak over the RSS before it: "
            f"{res['query_peak_over_rss_before_mb']} MB"
            + (f"; the MiniLM model adds {res['model'].get('rss_growth_mb')} MB "
               f"(→ {model['VmRSS']} MB)" if model else "")
            + f" | — | {label} |",
        ]  # fmt: skip
    for key, code in (
        ("latency", ""),
        ("latency_before", "the `--code` checkout: before a change; "),
    ):
        lat = got.get(key)
        if lat:
            rows.append(
                f"| vector leg and hybrid p50 / p95, in-process, timed alone ({code}FAKE, "
                f"{lat['queries']} queries, k = 50, no rerank) | "
                f"vector **{lat['vector_p50_ms']} ms** wall / {lat['vector_cpu_p50_ms']} ms CPU; "
                f"hybrid **{lat['hybrid_p50_ms']} / {lat['hybrid_p95_ms']} ms** (CPU p50 "
                f"{lat['hybrid_cpu_p50_ms']} ms); process RSS {lat['rss_after_mb']['VmRSS']} MB"
                f" | hybrid ≤ 60 / 150 ms | {run_label(lat, 'bench.vecmem')} |"
            )
    syn = got.get("synth")
    if syn:
        label = run_label(syn, "bench.vecmem")
        rows.append(
            f"| vector recall@10 vs exact float32 (SYNTH, {syn['chunks']:,} chunks, "
            f"{syn['queries']} queries; Hamming → sign re-rank → 1,024 exact) | "
            f"**{syn['recall@10_vs_exact_float32']}** (worst query "
            f"{syn['worst_query_recall@10']}); vector leg p50 **{syn['vector_p50_ms']} ms** wall, "
            f"{syn['vector_cpu_p50_ms']} ms CPU; vector cache "
            f"resident at most {syn['vector_cache_resident_peak_mb']} MB over the queries "
            f"({syn['codes_mb']} MB codes; the {syn['float16_file_mb']} MB float16 file is "
            f"never mapped) | ≥ 0.99 | {label} |"
        )
        for row in syn.get("depth_sweep", []):
            rows.append(
                f"| rescoring `count // {row['share']}` candidates (SYNTH, {syn['chunks']:,} "
                f"chunks, {syn['queries']} queries) | recall@10 {row['recall@10']}, vector p50 "
                f"{row['p50_ms']} ms | ≥ 0.99 | {label} |"
            )
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_report")
    parser.add_argument("--out", type=Path, default=RESULTS, help="the dir of scale.json")
    parser.add_argument(
        "--keep-from", type=Path, default=None,
        help="an older scale.json (e.g. `git show REV:bench/results/scale.json`): its records "
        "that scale.json lacks are taken back",
    )  # fmt: skip
    args = parser.parse_args(argv)
    saved = load_results(args.out)
    kept: dict[str, Any] = {}
    if args.keep_from is not None:
        old = json.loads(args.keep_from.read_text())
        superseded = FULL_RUN_SUPERSEDES if "full_run" in saved else ()
        kept = {k: v for k, v in old.items() if k not in saved and k not in superseded}
        print("taken back:", ", ".join(kept) or "nothing")
    return save_results(args.out, kept)


if __name__ == "__main__":
    main()
