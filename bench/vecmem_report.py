"""The "vector ..." rows bench/vecmem.py adds to bench/results/scale.md."""

from __future__ import annotations

from typing import Any


def markdown_rows(got: dict[str, Any]) -> list[str]:
    """The "vector ..." rows of bench/results/scale.md (bench/scale.py's table)."""
    rows: list[str] = []
    res = got.get("resident")
    if res:
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
        load = res["load_avg_before"]
        # (its timings run between the memory probes: the JSON keeps them, the table quotes
        # the `latency` run, timed alone)
        rows += [
            f"| vector side resident (FAKE, {res['chunks']:,} chunks, after "
            f"{res['queries']} hybrid queries, load {load}) | "
            f"**{side} MB**: mapped cache pages {cache} (every mapped page counted; float16 rows "
            f"are read with `pread`, 0 MB of them mapped) + chunk meta columns {meta} | ≤ 400 MB |",
            f"| searching process RSS (FAKE, {res['chunks']:,} chunks: LanceDB + store + meta + "
            f"vector search, no model) | **{after['status_mb']['VmRSS']} MB** after the queries "
            f"({trimmed['status_mb']['VmRSS']} MB once freed memory is returned; anonymous "
            f"{after['status_mb']['RssAnon']} MB); opening index + store "
            f"{opened['VmRSS']} MB, + meta load → {loaded['VmRSS']} MB (peak {loaded['VmHWM']} "
            f"MB during the scan); one query's peak over the RSS before it: "
            f"{res['query_peak_over_rss_before_mb']} MB"
            + (f"; the MiniLM model adds {res['model'].get('rss_growth_mb')} MB "
               f"(→ {model['VmRSS']} MB)" if model else "")
            + " | — |",
        ]  # fmt: skip
    lat, old = got.get("latency"), got.get("latency_before")
    if lat:
        before = (
            f"; the code before this change, same index, same minutes: vector "
            f"{old['vector_p50_ms']} ms wall / {old['vector_cpu_p50_ms']} ms CPU, hybrid "
            f"{old['hybrid_p50_ms']} / {old['hybrid_p95_ms']} ms (CPU p50 "
            f"{old['hybrid_cpu_p50_ms']} ms), process RSS {old['rss_after_mb']['VmRSS']} MB"
            if old
            else ""
        )
        rows.append(
            f"| vector leg and hybrid p50 / p95, in-process, timed alone (FAKE, "
            f"{lat['queries']} queries, k = 50, no rerank; load {lat['load_avg_before']}) | "
            f"vector **{lat['vector_p50_ms']} ms** wall / {lat['vector_cpu_p50_ms']} ms CPU; "
            f"hybrid **{lat['hybrid_p50_ms']} / {lat['hybrid_p95_ms']} ms** (CPU p50 "
            f"{lat['hybrid_cpu_p50_ms']} ms); process RSS {lat['rss_after_mb']['VmRSS']} MB"
            f"{before} | hybrid ≤ 60 / 150 ms |"
        )
    syn = got.get("synth")
    if syn:
        rows.append(
            f"| vector recall@10 vs exact float32 (SYNTH, {syn['chunks']:,} chunks, "
            f"{syn['queries']} queries; Hamming → sign re-rank → 1,024 exact) | "
            f"**{syn['recall@10_vs_exact_float32']}** (worst query "
            f"{syn['worst_query_recall@10']}); vector leg p50 **{syn['vector_p50_ms']} ms** wall, "
            f"{syn['vector_cpu_p50_ms']} ms CPU (load {syn['load_avg_before']}); vector cache "
            f"resident at most {syn['vector_cache_resident_peak_mb']} MB over the queries "
            f"({syn['codes_mb']} MB codes; the {syn['float16_file_mb']} MB float16 file is "
            "never mapped) | ≥ 0.99 |"
        )
    return rows
