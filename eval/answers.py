"""Answer-level scoring: stats questions against the stats tools (exact match), and `--answers`
runs through `casper.agent.answer.answer_question` (contains-gold, citation recall, abstention).

Only ids, categories and scores are kept: answer text never reaches the run file or the log.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from casper.agent.answer import answer_question
from casper.agent.core import Limits
from casper.app.runtime import make_engine, open_store
from casper.dates.ranges import days_to_utc
from casper.dates.zones import local_tz
from casper.errors import CasperError, ModelUnavailable
from casper.store.stats_query import person_stats, top_people
from eval import metrics
from eval.gold import GoldItem
from eval.variants import make_search, variant_config

ABSTAIN = re.compile(
    r"not mentioned|no information|couldn['’]?t find|could not find|found nothing|"
    r"did(?:n['’]?t| not) find|no (?:matching |relevant )?messages|don['’]?t (?:know|see)|"
    r"nothing (?:about|on|in your)|no record|"
    r"not (?:in|from) (?:your|the) (?:messages|conversation)",
    re.IGNORECASE,
)


# ---- stats questions ----------------------------------------------------------------------------
def _year_bounds(year: int) -> tuple[float | None, float | None]:
    """A calendar year in UTC, the zone the synthetic corpus counts its years in."""
    return days_to_utc(date(year, 1, 1), date(year, 12, 31), UTC)


def _check_person(store: Any, spec: Mapping[str, Any], tz: tzinfo) -> dict[str, bool]:
    pid = store.resolve_person(spec["person"]).id
    got = person_stats(store, pid, tz)
    return {f: metrics.exact_match(spec[f], got.get(f)) for f in ("sent", "received") if f in spec}


def _check_year_ranking(store: Any, spec: Mapping[str, Any], tz: tzinfo) -> dict[str, bool]:
    start, end = _year_bounds(int(spec["year"]))
    metric = str(spec.get("metric", "sent"))
    counts: dict[str, Any] = {  # `metric` names a figure of PersonStats
        p.name: person_stats(store, p.id, tz, start, end).get(metric, 0) for p in store.people()
    }
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    names = store.names()
    top = top_people(store, tz, start, end, 1)
    checks = {
        "top": bool(ranked) and ranked[0][0] == spec["person"],
        "count": metrics.exact_match(spec.get(metric), counts.get(spec["person"])),
        "top_people": bool(top) and names.get(top[0][0]) == spec["person"],
    }
    if "ranking" in spec:
        checks["ranking"] = all(counts.get(name, 0) == n for name, n in spec["ranking"])
    return checks


def _check_chat_senders(store: Any, spec: Mapping[str, Any]) -> dict[str, bool]:
    found = [c for c in store.find_chats(spec["chat"]) if c.name == spec["chat"]]
    if len(found) != 1:
        return {"chat": False}
    names = store.names()
    counts = Counter(
        names.get(s, s) for s, _c, _ts, _t in store.texts_for_person([found[0].id], None, None)
    )
    top = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0] if counts else None
    checks = {
        "top": top == spec.get("person"),
        "count": counts.get(spec.get("person", ""), 0) == spec.get("count"),
    }
    if "by_sender" in spec:
        checks["by_sender"] = metrics.exact_match(spec["by_sender"], dict(counts))
    return checks


def score_stats(store: Any, items: Sequence[GoldItem], tz: tzinfo) -> dict[str, Any]:
    """Exact match of the stats tools against `expected.stats`, per question and overall."""
    rows: list[dict[str, Any]] = []
    for item in items:
        spec = (item.expected or {}).get("stats")
        if not isinstance(spec, dict):
            continue
        try:
            if "chat" in spec:
                checks = _check_chat_senders(store, spec)
            elif "year" in spec:
                checks = _check_year_ranking(store, spec, tz)
            elif "person" in spec:
                checks = _check_person(store, spec, tz)
            else:
                rows.append({"id": item.id, "ok": None, "reason": "unsupported stats shape"})
                continue
        except CasperError as exc:
            rows.append({"id": item.id, "ok": False, "reason": exc.message})
            continue
        rows.append({"id": item.id, "ok": all(checks.values()), "checks": checks})
    judged = [r for r in rows if r["ok"] is not None]
    return {
        "questions": len(rows),
        "exact_match": sum(bool(r["ok"]) for r in judged) / len(judged) if judged else None,
        "items": rows,
    }


# ---- LLM answers --------------------------------------------------------------------------------
def should_abstain(item: GoldItem) -> bool:
    return not item.answerable or bool((item.expected or {}).get("abstain"))


RETRIEVAL_ONLY = "retrieval-only"  # pass as `engine` to score the no-model answer


def score_answer(item: GoldItem, asked: Mapping[str, Any]) -> dict[str, Any]:
    """One `ask --json` result against its gold item (scores only)."""
    answer = str(asked.get("answer", ""))
    cited = {c.get("guid") for c in asked.get("citations", [])}
    usage = asked.get("usage") or {}
    wanted = (item.expected or {}).get("answer_contains") or []
    abstain = should_abstain(item)
    return {
        "id": item.id,
        "category": item.category,
        "should_abstain": abstain,
        "abstained": bool(ABSTAIN.search(answer)),
        "contains_gold": (
            all(w.lower() in answer.lower() for w in wanted) if wanted and not abstain else None
        ),
        "citation_recall": (
            len(cited & set(item.relevant)) / len(item.relevant)
            if item.relevant and not abstain
            else None
        ),
        # of the messages the answer cites, the share the gold evidence lists
        "citation_precision": (
            len(cited & set(item.relevant)) / len(cited) if cited and item.relevant else None
        ),
        # an unanswerable question should cite nothing and say so
        "abstention_correct": (bool(ABSTAIN.search(answer)) and not cited if abstain else None),
        "grounding": asked.get("grounding"),
        "invalid_citations": int(asked.get("invalid_citations", 0)),
        "iterations": int(asked.get("iterations", 0)),
        "tool_calls": len(asked.get("tool_calls", [])),
        "guards": list(asked.get("guards", [])),
        "tokens_per_s": float(usage["tokens_per_s"]) if usage.get("tokens_per_s") else None,
        "completion_tokens": int(usage.get("completion_tokens", 0)),
        "elapsed_s": float(asked.get("elapsed_s", 0.0)),
    }


def _mean(values: Sequence[float | bool | None]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def summarise_answers(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Rates over the rows each one applies to, overall and per category."""

    def block(part: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        answerable = [r for r in part if not r["should_abstain"]]
        return {
            "questions": len(part),
            "contains_gold": _mean([r["contains_gold"] for r in part]),
            "citation_recall": _mean([r["citation_recall"] for r in part]),
            "citation_precision": _mean([r.get("citation_precision") for r in part]),
            "abstention": _mean([r["abstained"] for r in part if r["should_abstain"]]),
            "abstention_correct": _mean([r.get("abstention_correct") for r in part]),
            "false_abstention": _mean([r["abstained"] for r in answerable]),
            "iterations": _mean([r["iterations"] for r in part]),
            "tokens_per_s": _mean([r.get("tokens_per_s") for r in part]),
            "seconds_per_answer": _mean([r.get("elapsed_s") for r in part]),
        }

    cats = sorted({r["category"] or "uncategorised" for r in rows})
    guards = Counter(g for r in rows for g in r["guards"])
    return {
        **block(rows),
        "guards": dict(guards),
        "grounding": dict(Counter(str(r.get("grounding")) for r in rows)),
        "invalid_citations": sum(int(r.get("invalid_citations", 0)) for r in rows),
        "by_category": {
            c: block([r for r in rows if (r["category"] or "uncategorised") == c]) for c in cats
        },
        "items": list(rows),
    }


def evaluate_answers(
    items: Sequence[GoldItem],
    ask: Callable[[str], Mapping[str, Any]],
    limit: int | None = None,
) -> dict[str, Any]:
    """Ask every non-stats question (or `limit` of them, evenly spaced over the set so every
    category keeps a share, for slow models) and score the answers."""
    asked = _spread([item for item in items if item.category != "stats"], limit)
    return summarise_answers([score_answer(item, ask(item.question)) for item in asked])


def _spread(items: Sequence[GoldItem], limit: int | None) -> list[GoldItem]:
    if limit is None or limit >= len(items):
        return list(items)
    if limit == 1:
        return [items[0]]
    picks = sorted({round(i * (len(items) - 1) / (limit - 1)) for i in range(limit)})
    return [items[i] for i in picks]


# ---- wiring for run_eval ------------------------------------------------------------------------
def _pick(specs: Sequence[Any], cfg: Any) -> Any | None:
    mine = (cfg.chunk_size, cfg.chunk_stride, cfg.embed_model)
    ranked = sorted(specs, key=lambda s: (s.mode != "hybrid", s.index_key != mine, s.rerank))
    return ranked[0] if ranked else None


def evaluate_corpora(
    cfg: Any,
    corpora: Sequence[Any],
    specs: Sequence[Any],
    models: Mapping[str, Any],
    reranker: Any,
    *,
    with_llm: bool,
    engine: Any = None,
    progress: Callable[[str], None] = lambda _m: None,
    answers_limit: int | None = None,
) -> dict[str, Any]:
    """Stats questions on every corpus, and (with_llm) the agent's answers; for run_eval.

    `engine` may be any Engine, None (the configured model) or RETRIEVAL_ONLY (no model: the
    cited best matches `ask --no-llm` gives).
    """
    spec = _pick(specs, cfg)
    if spec is None:
        return {"stats": {"skipped": "no run could build an index"}}
    why = None
    if with_llm and engine is None:
        try:
            engine = make_engine(cfg)
        except ModelUnavailable as exc:
            why = exc.message
    stats_rows: list[dict[str, Any]] = []
    answer_rows: list[dict[str, Any]] = []
    for corpus in corpora:
        vcfg = variant_config(cfg, corpus, spec)
        tz = local_tz(vcfg.timezone)  # the zone the index was built in
        store = open_store(vcfg)
        try:
            stats_rows += score_stats(
                store, [i for i in corpus.items if i.category == "stats"], tz
            )["items"]
            if engine is None:
                continue
            search = make_search(
                vcfg,
                store,
                models[spec.embed_model],
                reranker if spec.rerank else None,
                max_k=cfg.top_k,
            )
            last = store.coverage()[1]
            now = datetime.fromtimestamp(last, tz) + timedelta(days=1) if last else None
            limits = Limits(max_iterations=cfg.max_iterations)

            def ask(
                question: str,
                search: Any = search,
                store: Any = store,
                tz: ZoneInfo = tz,
                now: datetime | None = now,
                limits: Limits = limits,
            ) -> Mapping[str, Any]:
                return answer_question(
                    question,
                    store=store,
                    search=search.hits,
                    engine=None if engine == RETRIEVAL_ONLY else engine,
                    tz=tz,
                    limits=limits,
                    now=now,
                    no_llm=engine == RETRIEVAL_ONLY,
                ).to_dict()

            answer_rows += evaluate_answers(corpus.items, ask, answers_limit)["items"]
            progress(f"{corpus.name}: answers scored")
        finally:
            store.close()
    out: dict[str, Any] = {}
    if stats_rows:
        judged = [r for r in stats_rows if r["ok"] is not None]
        out["stats"] = {
            "questions": len(stats_rows),
            "items": stats_rows,
            "exact_match": _mean([bool(r["ok"]) for r in judged]),
        }
    if with_llm:
        out["answers"] = (
            {
                **summarise_answers(answer_rows),
                "run": spec.label,
                "model": engine if engine == RETRIEVAL_ONLY else getattr(engine, "name", None),
            }
            if engine is not None
            else {"skipped": why}
        )
    return out
