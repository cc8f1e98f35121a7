"""The markdown report of `python -m bench.lance_ann`: the side-by-side table per size, the best
setting of each LanceDB index within the latency budget, and the re-runs of Casper's leg.

Imports: stdlib only (it reads the results dict the benchmark writes).
"""

from __future__ import annotations

import math
from typing import Any

from bench.synth import DIM

FILTERS = ("none", "chat", "time")
LATENCY_BUDGET_MS = 30.0  # the vector leg's share of the hybrid budget (README: 30 ms)


def _ms(s: dict[str, Any] | None) -> str:
    if not s:
        return "—"
    return f"{s['p50_ms']:.1f} / {s['p95_ms']:.1f}"


def _rec(s: dict[str, Any] | None) -> str:
    """Recall to 3 decimals, rounded down (0.9995 is not 1.000)."""
    return "—" if not s else f"{math.floor(s['recall@10'] * 1000) / 1000:.3f}"


def _setting(s: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in s.items() if v is not None) or "defaults"


def best_rows(entry: dict[str, Any]) -> dict[str, Any]:
    """Of a sweep: the best unfiltered recall with p50 ≤ LATENCY_BUDGET_MS, the fastest
    setting reaching recall ≥ 0.99 (None when none does), and LanceDB's defaults."""
    sweep = entry.get("search", {}).get("sweep", [])
    within = [r for r in sweep if r["none"]["p50_ms"] <= LATENCY_BUDGET_MS]
    good = [r for r in sweep if r["none"]["recall@10"] >= 0.99]
    return {
        "defaults": next((r for r in sweep if not r["setting"]), None),
        "best_within_budget": max(within, key=lambda r: (r["none"]["recall@10"],
                                                         -r["none"]["p50_ms"]), default=None),
        "fastest_at_0.99": min(good, key=lambda r: r["none"]["p50_ms"], default=None),
    }  # fmt: skip


def report(results: dict[str, Any]) -> str:
    head = results["run"]
    lines = [
        "# Vector search: Casper's own vector side against LanceDB's (flat and ANN indexes)",
        "",
        f"{head['machine']}; lancedb {head['lancedb']}. Each size says which run measured it "
        "(command, when, 1-minute load before → after: the box is shared). Recall@10 "
        "against the exact float32 top-10 (within the filter, for the filtered columns), on "
        f"bench/synth.py's MiniLM-shaped vectors ({DIM}-d, clustered), {head['queries']} queries "
        "(the same for every method; fewer where a setting outran its time budget: `queries` in "
        "the .json). Latency is wall p50 / p95 ms of one top-10 search in-process, after 3 "
        "warm-up queries. Filters: one chat (~2% of rows, `chat_id = X`, LanceDB prefiltered "
        "through its BTree index) and a time range (~10% of rows); chats and times are drawn "
        "independently of the vectors. Memory: RSS after the queries minus RSS after the imports "
        "of a fresh process doing only that (page cache not counted, for either). Build: casper "
        "= side-store writes + search-cache build; LanceDB = table write (+ BTree indexes) + "
        "vector index build.",
        "",
    ]
    for size in results["sizes"]:
        lines += _size_report(size)
    if results.get("reruns"):
        lines += ["## Other runs", "", "The same measurements at other times, headline rows "
                  "only (how much the shared box's load moves them; the tables above are the "
                  "last full run of each size):", "", "| rows | run | method | recall@10 | p50 / p95 "
                  "ms | chat: recall, p50 / p95 | time range: recall, p50 / p95 |",
                  "|---:|---|---|---:|---:|---:|---:|"]  # fmt: skip
        for size in results["reruns"]:
            lines += _rerun_rows(size)
        lines.append("")
    return "\n".join(lines) + "\n"


def _rerun_rows(size: dict[str, Any]) -> list[str]:
    run = size["run"]
    label = (
        f"`{run['command']}`, {run['at']}, load {run['load_before'][0]} → {run['load_after'][0]}"
    )
    found = [("casper", size["casper"].get("search", {}).get("searches"))]
    if "sweep" in size.get("lance_flat", {}):
        found.append(("LanceDB flat", size["lance_flat"]["sweep"][0]))
    for entry in size.get("lance_indexes", []):
        for key, r in best_rows(entry).items():
            if r is not None and key != "defaults":
                found.append((f"LanceDB {entry['kind']} ({key}: {_setting(r['setting'])})", r))
    return [
        f"| {size['rows']:,} | {label} | {name} | {_rec(s['none'])} | {_ms(s['none'])} | "
        f"{_rec(s['chat'])}, {_ms(s['chat'])} | {_rec(s['time'])}, {_ms(s['time'])} |"
        for name, s in found
        if s
    ]


def _size_report(size: dict[str, Any]) -> list[str]:
    n = size["rows"]
    shares = size["data"].get("filter_share", {})
    run = size["run"]
    lines = [
        f"## {n:,} rows",
        "",
        f"`{run['command']}`, {run['at']}, load {run['load_before'][0]} → "
        f"{run['load_after'][0]}. Filters keep {shares.get('chat', 0):.1%} (chat) and {shares.get('time', 0):.1%} "
        "(time) of the rows.",
        "",
        "| method | params | recall@10 | p50 / p95 ms | chat: recall, p50 / p95 | time range: "
        "recall, p50 / p95 | build s | resident MB | on disk MB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    c = size["casper"]
    if "search" in c and "searches" in c["search"]:
        s, b = c["search"]["searches"], c["build"]
        lines.append(
            f"| **casper** (float16 side file, sign-bit shortlist, pread rescoring) | as shipped "
            f"(exact ≤ {c['search']['exact_below_rows']:,} rows) | **{_rec(s['none'])}** | "
            f"**{_ms(s['none'])}** | {_rec(s['chat'])}, {_ms(s['chat'])} | {_rec(s['time'])}, "
            f"{_ms(s['time'])} | {b['side_store_put_s']} + {b['cache_build_s']} | "
            f"{c['search']['rss_delta_mb']} | {b['side_store_mb']} + {b['cache_mb']} |"
        )
    table = size.get("lance_table", {})
    table_build = f"{table.get('write_s', '—')} + {table.get('scalar_indexes_s', '—')}"
    flat = size.get("lance_flat", {})
    if "sweep" in flat:
        s = flat["sweep"][0]
        lines.append(
            f"| LanceDB flat (no vector index) | — | {_rec(s['none'])} | {_ms(s['none'])} | "
            f"{_rec(s['chat'])}, {_ms(s['chat'])} | {_rec(s['time'])}, {_ms(s['time'])} | "
            f"{table_build} | {flat['rss_delta_mb']} | {table.get('table_mb', '—')} |"
        )
    for entry in size.get("lance_indexes", []):
        build = entry["build"]
        if "timed_out_s" in build:
            lines.append(f"| LanceDB {entry['kind']} | {_setting(entry['params'])} | build "
                         f"killed after {build['timed_out_s']:.0f} s | | | | | | |")  # fmt: skip
            continue
        if "search" not in entry or "sweep" not in entry["search"]:
            lines.append(f"| LanceDB {entry['kind']} | sweep killed after the time budget "
                         "| | | | | | | |")  # fmt: skip
            continue
        picks = best_rows(entry)
        labels = (("defaults", "LanceDB defaults"), ("best_within_budget",
                  f"best recall at p50 ≤ {LATENCY_BUDGET_MS:.0f} ms"),
                  ("fastest_at_0.99", "fastest at recall ≥ 0.99"))  # fmt: skip
        shown: list[int] = []
        for key, label in labels:
            r = picks[key]
            if r is None:
                lines.append(f"| LanceDB {entry['kind']} | {label}: none in the sweep | | | | "
                             "| | | |")  # fmt: skip
                continue
            if id(r) in shown:
                continue
            shown.append(id(r))
            lines.append(
                f"| LanceDB {entry['kind']} ({_setting(entry['params'])}) | {label}: "
                f"{_setting(r['setting'])} | {_rec(r['none'])} | {_ms(r['none'])} | "
                f"{_rec(r['chat'])}, {_ms(r['chat'])} | {_rec(r['time'])}, {_ms(r['time'])} | "
                f"{table_build} + {build['build_s']} | {entry['search']['rss_delta_mb']} | "
                f"{table.get('table_mb', '—')} + {build['index_mb']} |"
            )
    lines += ["", "Every LanceDB setting measured (recall@10, p50 / p95 ms):", "",
              "| index | query setting | unfiltered | chat | time range |", "|---|---|---|---|---|"]  # fmt: skip
    for entry in size.get("lance_indexes", []):
        for r in entry.get("search", {}).get("sweep", []):
            cells = " | ".join(f"{_rec(r[f])}, {_ms(r[f])}" for f in FILTERS)
            lines.append(f"| {entry['kind']} | {_setting(r['setting'])} | {cells} |")
    lines += ["", "Build details: " + "; ".join(
        f"{e['kind']} {e['build'].get('build_s', 'killed')} s wall "
        f"({e['build'].get('build_cpu_s', '—')} CPU-s), build peak RSS "
        f"{e['build'].get('peak_mb', '—')} MB"
        for e in size.get("lance_indexes", [])
    ) + f". Casper: build peak RSS {c['build'].get('peak_mb', '—')} MB, first vector search "
        f"(loads the cache) {c.get('search', {}).get('first_search_ms', '—')} ms.", ""]  # fmt: skip
    return lines
