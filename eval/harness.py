"""run_eval: index each corpus via the user's ingest path, then score every ablation's rankings."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shutil
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ingest.synthetic as synthetic
from casper.app import runtime
from casper.app.optional_models import not_reranked_because
from casper.app.runtime import open_store
from casper.config import BUNDLED_EMBEDDER, Config
from casper.errors import CasperError, ModelUnavailable
from casper.vocab import LEXICAL, Mode
from eval import answers as answers_mod
from eval import gold_style, locomo, metrics, reader, realtalk, report, splits
from eval.gold import load_gold
from eval.locomo import dragon_reference, session_of_guid
from eval.variants import (  # noqa: F401  (RunSpec, Corpus, … are part of the harness's API)
    Corpus,
    RunSpec,
    ensure_index,
    make_search,
    model_slug,
    variant_config,
)
from ingest.synthetic import texting

# the search modes (casper.vocab.Mode) in the order the runs and the report list them
MODES: tuple[Mode, ...] = ("bm25", "vector", "hybrid")
DEFAULT_UNITS: tuple[tuple[int, int], ...] = ((8, 4), (3, 1))
SYNTHETIC_TZ = "UTC"  # the demo corpus counts years in UTC
Progress = Callable[[str], None]
# `(stage, done, total)` as casper index reports it; eval's stages read "PART · STAGE"
StageProgress = Callable[[str, int, "int | None"], None]


def _no_stages(stage: str, done: int, total: int | None) -> None:
    pass


def parse_unit(text: str) -> tuple[int, int]:
    """`8x4` → (8, 4)."""
    m = re.fullmatch(r"\s*(\d+)\s*[x/,]\s*(\d+)\s*", text)
    if not m or int(m[1]) < 1 or int(m[2]) < 1:
        raise CasperError(f"bad chunk unit {text!r}", hint="write SIZExSTRIDE, e.g. 8x4 or 3x1")
    return int(m[1]), int(m[2])


def plan_runs(
    modes: Sequence[str] = MODES,
    units: Sequence[tuple[int, int]] = DEFAULT_UNITS,
    embedders: Sequence[str] = (BUNDLED_EMBEDDER,),
    *,
    rerank: bool = True,
    ablate: bool = True,
) -> list[RunSpec]:
    """The ablation grid: bm25 (both backends, once per unit), vector, hybrid, hybrid+rerank.

    `ablate` adds, when hybrid is compared with another mode, for the last unit (the
    default), hybrid with the feedback pass, each mode without query understanding
    (`literal`) and hybrid fused with RRF: the fusion ablation of the report.
    """
    ablate = ablate and "hybrid" in modes and len(set(modes)) > 1
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise CasperError(f"unknown mode(s): {', '.join(unknown)}", hint="use bm25, vector, hybrid")
    asked = [mode for m in modes for mode in MODES if mode == m]  # `modes`, typed
    specs: list[RunSpec] = []
    for size, stride in units:
        for i, model in enumerate(embedders):
            base = RunSpec("hybrid", chunk_size=size, chunk_stride=stride, embed_model=model)
            if "bm25" in modes and i == 0:
                specs += [dataclasses.replace(base, mode="bm25", lexical=lex) for lex in LEXICAL]
            if "vector" in modes:
                specs.append(dataclasses.replace(base, mode="vector"))
            if "hybrid" in modes:
                specs.append(base)
                if rerank:
                    specs.append(dataclasses.replace(base, rerank=True))
            if ablate and i == 0 and (size, stride) == units[-1]:
                if "hybrid" in modes:
                    specs.append(dataclasses.replace(base, feedback=True))
                lit = dataclasses.replace(base, literal=True)
                specs += [dataclasses.replace(lit, mode=m) for m in asked]
                if "hybrid" in modes:
                    specs.append(dataclasses.replace(lit, fuse="rrf"))
    return specs


# ---- datasets ---------------------------------------------------------------------------------
def _tree_hash(files: Iterable[Path]) -> str:
    digest = hashlib.sha256()
    for f in sorted(files):
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()


def _fresh_source(root: Path, source_hash: str, build: Callable[[Path], Any]) -> Path:
    """`root/source`, rebuilt (and every index under `root` dropped) when its generator changed."""
    src = root / "source"
    stamp = src / "source.sha256"
    if not (stamp.is_file() and stamp.read_text().strip() == source_hash):
        if root.exists():
            shutil.rmtree(root)
        build(src)
        stamp.write_text(source_hash + "\n")
    return src


def synthetic_corpus(cfg: Config) -> Corpus:
    """The demo corpus under CASPER_HOME/eval/synthetic/, rebuilt when its generator changes."""
    package = Path(synthetic.__file__).parent
    mine = [p for p in package.glob("*.py") if not p.name.startswith("texting")]
    source_hash = _tree_hash([*mine, *package.glob("*.sql")])
    root = cfg.data_dir / "eval" / "synthetic"
    src = _fresh_source(root, source_hash, synthetic.build_demo_corpus)
    return Corpus(
        "synthetic",
        load_gold(src / "gold.jsonl"),
        src / "chat.db",
        src / "AddressBook",
        root,
        SYNTHETIC_TZ,
    )


def gold_style_corpus(cfg: Config) -> Corpus:
    """eval/gold_style.jsonl over the synthetic corpus (same index), read day-first (en_GB)."""
    corpus = synthetic_corpus(cfg)
    items = load_gold(gold_style.DEFAULT_OUT)
    return dataclasses.replace(corpus, name="gold-style", items=items, locale=gold_style.LOCALE)


def texting_corpus(cfg: Config, *, verbatim: bool = False) -> Corpus:
    """The texting corpus under CASPER_HOME/eval/texting/ (both question styles share its index)."""
    package = Path(synthetic.__file__).parent
    source_hash = _tree_hash([*package.glob("*.py"), *package.glob("*.sql")])
    root = cfg.data_dir / "eval" / "texting"
    src = _fresh_source(root, source_hash, texting.build_texting_corpus)
    items = load_gold(src / ("gold-verbatim.jsonl" if verbatim else "gold.jsonl"))
    return Corpus(
        "texting",
        items,
        src / "chat.db",
        src / "AddressBook",
        root,
        texting.TIMEZONE,
        dict(texting.pools(i.category for i in items)),
        (texting.OWNER_FIRST,),
    )


def locomo_corpora(
    cfg: Config,
    path: Path | None,
    conversations: int | None,
    *,
    verbatim: bool = False,
    split: str = "all",
) -> tuple[list[Corpus], dict[str, Any]]:
    """One corpus per LoCoMo conversation under CASPER_HOME/eval/locomo/<sample_id>/."""
    convs = locomo.load_locomo(
        path or locomo.default_locomo_path(), conversations, verbatim=verbatim
    )
    convs = [c for c in convs if splits.in_split(splits.conversation_half(c.sample_id), split)]
    root = cfg.data_dir / "eval" / "locomo"
    corpora = []
    for conv in convs:
        chat_db, contacts = locomo.prepare_corpus(conv, root)
        corpora.append(
            Corpus(
                conv.sample_id,
                list(conv.questions),
                chat_db,
                contacts,
                root / conv.sample_id,
                locomo.LOCOMO_TZ,
                {locomo.POOLED: locomo.POOLED_MEMBERS},
                (conv.speaker_a,),
                session_of=locomo.session_of_guid,
            )
        )
    style = "verbatim" if verbatim else "first-person (owner's name → I/me/my)"
    return corpora, {**locomo.summary(convs), "questions_style": style}


def realtalk_corpora(
    cfg: Config, *, ambiguous: bool = False, split: str = "all"
) -> tuple[list[Corpus], dict[str, Any]]:
    """One corpus per owner's phone under CASPER_HOME/eval/realtalk[-ambiguous]/<owner>/; the
    first owner's phone is the tune half, the other the report half."""
    phones = realtalk.load_phones(realtalk.default_realtalk_path())
    root = cfg.data_dir / "eval" / ("realtalk-ambiguous" if ambiguous else "realtalk")
    corpora = []
    for phone in phones:
        if not splits.in_split(realtalk.phone_half(phones, phone), split):
            continue
        chat_db, contacts = realtalk.prepare_phone(phone, root, ambiguous=ambiguous)
        corpora.append(
            Corpus(
                phone.key,
                phone.questions,
                chat_db,
                contacts,
                root / phone.key,
                realtalk.TIMEZONE,
                me_names=(phone.owner,),
                session_of=session_of_guid,
            )
        )
    halves = {h: [p.owner for p in phones if realtalk.phone_half(phones, p) == h]
              for h in ("tune", "report")}  # fmt: skip
    info = realtalk.summary([p for p in phones if p.key in {c.name for c in corpora}], ambiguous)
    return corpora, {**info, "halves": halves, "questions_style": "as written (owner named)"}


DATASETS = ("synthetic", "gold-style", "locomo", "locomo-verbatim", "texting", "texting-verbatim",
            "realtalk", "realtalk-ambiguous")  # fmt: skip


def load_dataset(
    cfg: Config,
    dataset: str,
    *,
    locomo_path: Path | None = None,
    conversations: int | None = None,
    split: str = "all",
) -> tuple[list[Corpus], dict[str, Any]]:
    """A named dataset (DATASETS) or a gold JSONL PATH (current index), cut to `split`."""
    splits.check(split)
    if dataset in ("locomo", "locomo-verbatim"):
        corpora, info = locomo_corpora(
            cfg, locomo_path, conversations, verbatim=dataset == "locomo-verbatim", split=split
        )
    elif dataset in ("realtalk", "realtalk-ambiguous"):
        corpora, info = realtalk_corpora(cfg, ambiguous=dataset.endswith("ambiguous"), split=split)
    else:
        corpora, info = _one_corpus(cfg, dataset)
        corpora = [dataclasses.replace(c, items=splits.keep(c.items, split)) for c in corpora]
    if split != "all" and not any(i.answerable for c in corpora for i in c.items):
        raise CasperError(
            f"no questions with evidence in the {split} half of {dataset}",
            hint="use --split all, or more --conversations",
        )
    return corpora, {**info, "split": split}


def _one_corpus(cfg: Config, dataset: str) -> tuple[list[Corpus], dict[str, Any]]:
    if dataset == "synthetic":
        return [synthetic_corpus(cfg)], {}
    if dataset == "gold-style":
        return [gold_style_corpus(cfg)], {"locale": "en_GB"}
    if dataset in ("texting", "texting-verbatim"):
        verbatim = dataset == "texting-verbatim"
        style = "verbatim (owner named)" if verbatim else "first-person (owner as I/me/my)"
        return [texting_corpus(cfg, verbatim=verbatim)], {"questions_style": style}
    path = Path(dataset).expanduser()
    if not path.exists():
        raise CasperError(
            f"unknown dataset {dataset!r}",
            hint=f"use {', '.join(DATASETS)} or the path of a gold .jsonl file",
        )
    return [Corpus("current", load_gold(path))], {"gold": str(path)}


# ---- the run ----------------------------------------------------------------------------------
class QueryCache:
    """Wraps an Embedder so each question is embedded once across runs; the cost is replayed.

    `replayed_ms` holds the original embedding time of the last cached query, which the harness
    adds back to that search's latency so every run reports what a user would wait.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.dim: int = inner.dim
        self.checksum: str = getattr(inner, "checksum", "")
        self.replayed_ms = 0.0
        self._cache: dict[str, tuple[Any, float]] = {}

    def embed_documents(self, texts: Sequence[str], *args: Any, **kwargs: Any) -> Any:
        return self.inner.embed_documents(texts, *args, **kwargs)

    def embed_query(self, text: str) -> Any:
        hit = self._cache.get(text)
        if hit is not None:
            self.replayed_ms = hit[1]
            return hit[0]
        t0 = time.perf_counter()
        vec = self.inner.embed_query(text)
        self._cache[text] = (vec, (time.perf_counter() - t0) * 1000.0)
        return vec


@dataclass(slots=True)
class _Acc:
    spec: RunSpec
    embedder: str
    rows: list[tuple[str | None, dict[str, float]]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    indexes: list[dict[str, Any]] = field(default_factory=list)


def _load_models(
    cfg: Config, specs: Sequence[RunSpec]
) -> tuple[dict[str, Any], Any, list[dict[str, Any]]]:
    """Embedders by model id, the reranker (or None) and the runs skipped for want of a model."""
    embedders: dict[str, Any] = {}
    skipped: list[dict[str, Any]] = []
    for model in dict.fromkeys(s.embed_model for s in specs):
        try:
            loaded = runtime.make_embedder(dataclasses.replace(cfg, embed_model=model))
            embedders[model] = QueryCache(loaded)
        except ModelUnavailable as exc:
            skipped += [_skip(s, exc.message) for s in specs if s.embed_model == model]
    reranker = None
    if any(s.rerank for s in specs):
        wanted = dataclasses.replace(cfg, rerank=True)
        reranker, _reason = runtime.make_reranker(wanted)
        if reranker is None:  # the short reason search and ask give (the long one: doctor)
            why = f"not reranked: {not_reranked_because(wanted, True)}"
            skipped += [_skip(s, why) for s in specs if s.rerank and s.embed_model in embedders]
    return embedders, reranker, skipped


def _skip(spec: RunSpec, reason: str) -> dict[str, Any]:
    return {"label": spec.label, **_describe(spec), "embedder": spec.embed_model, "reason": reason}


def _describe(spec: RunSpec) -> dict[str, Any]:
    return {
        "mode": spec.mode,
        "lexical": spec.lexical,
        "rerank": spec.rerank,
        "unit": spec.unit,
        "literal": spec.literal,
        "fuse": spec.fuse,
        "feedback": spec.feedback,
    }


def _evaluate_corpus(
    cfg: Config,
    corpus: Corpus,
    specs: Sequence[RunSpec],
    accs: dict[RunSpec, _Acc],
    embedders: dict[str, Any],
    reranker: Any,
    ks: Sequence[int],
    progress: Progress,
    stages: StageProgress = _no_stages,
) -> None:
    scored = [item for item in corpus.items if item.answerable]
    max_k = max(ks)
    # the reader's figures need the hits a reader gets (5 and 8), whatever k is scored
    wanted = max(max_k, *reader.READER_HITS)
    for key in dict.fromkeys(s.index_key for s in specs):
        group = [s for s in specs if s.index_key == key]
        vcfg = variant_config(cfg, corpus, group[0])
        part = f"{corpus.name} {group[0].unit}"
        index_stages = lambda st, d, t, part=part: stages(f"{part} · {st}", d, t)  # noqa: E731
        built = ensure_index(vcfg, index_stages) if corpus.root is not None else {"reused": True}
        progress(f"{corpus.name} {group[0].unit}: index {'reused' if built['reused'] else 'built'}")
        store = open_store(vcfg)
        sessions = _sessions(store, corpus)
        guid_of = dict(store.conn.execute("SELECT rowid, guid FROM messages"))
        try:
            for spec in group:
                acc = accs[spec]
                acc.indexes.append({"corpus": corpus.name, **built})
                search = make_search(
                    variant_config(cfg, corpus, spec),
                    store,
                    embedders[spec.embed_model],
                    reranker if spec.rerank else None,
                    max_k=wanted,
                    spec=spec,
                )
                cache = embedders[spec.embed_model]
                scoring = f"{corpus.name} {spec.label} · score"
                for done, item in enumerate(scored):
                    stages(scoring, done, len(scored))
                    cache.replayed_ms = 0.0
                    t0 = time.perf_counter()
                    result = search.search(
                        item.question,
                        k=wanted,
                        mode=spec.mode,
                        rerank=spec.rerank,
                        literal=spec.literal,
                    )
                    acc.latencies.append((time.perf_counter() - t0) * 1000 + cache.replayed_ms)
                    hits = result.hits
                    chunks = [[m.guid for m in hit.messages] for hit in hits[:max_k]]
                    ranked = reader.ranked_messages(result, guid_of)
                    row = metrics.score_question(
                        chunks, item.relevant, ks, corpus.session_of, ranked
                    )
                    row.update(reader.score_hits(hits, item.relevant, item.expected, sessions))
                    acc.rows.append((item.category, row))
                stages(scoring, len(scored), len(scored))
                progress(f"{corpus.name} {spec.label}: {len(scored)} questions")
        finally:
            store.close()


def _sessions(store: Any, corpus: Corpus) -> Any:
    """Each message's session and chat and each chat's sessions (`reader.sessions_by_chat`),
    for the chance level of session recall; None for a history without sessions."""
    if corpus.session_of is None:
        return None
    rows = store.conn.execute("SELECT guid, chat_id FROM messages")
    return reader.sessions_by_chat(rows, corpus.session_of)


def _run_doc(acc: _Acc, groups: dict[str, Collection[str]]) -> dict[str, Any]:
    overall, by_category = metrics.aggregate(acc.rows, groups)
    spec = acc.spec
    return {
        "label": spec.label,
        **_describe(spec),
        "reranked": spec.rerank,  # a run whose reranker did not load is skipped, not run
        "embedder": acc.embedder,
        "chunk_size": spec.chunk_size,
        "chunk_stride": spec.chunk_stride,
        "questions": len(acc.rows),
        "metrics": overall,
        "by_category": by_category,
        "latency_ms": {
            "p50": round(metrics.percentile(acc.latencies, 50), 2),
            "p95": round(metrics.percentile(acc.latencies, 95), 2),
        },
        "indexes": acc.indexes,
    }


def run_eval(
    cfg: Config,
    dataset: str,
    *,
    modes: Sequence[str] = MODES,
    ks: Sequence[int] = metrics.KS,
    units: Sequence[tuple[int, int]] | None = None,
    embedders: Sequence[str] | None = None,
    rerank: bool = True,
    out_dir: Path | None = None,
    locomo_path: Path | None = None,
    conversations: int | None = None,
    answers: bool = False,
    engine: Any = None,
    answers_limit: int | None = None,
    progress: Progress | None = None,
    split: str = "all",
    stages: StageProgress = _no_stages,
) -> dict[str, Any]:
    """Evaluate retrieval on a dataset; returns the `eval` JSON document (and writes it).
    `progress` gets a line per finished part; `stages` the counted stages inside them."""
    say = progress or (lambda _msg: None)
    ks = sorted(set(ks))
    corpora, info = load_dataset(
        cfg, dataset, locomo_path=locomo_path, conversations=conversations, split=split
    )
    current = corpora[0].root is None
    specs = plan_runs(modes, units or DEFAULT_UNITS, embedders or (cfg.embed_model,), rerank=rerank)
    skipped: list[dict[str, Any]] = []
    if current:  # a PATH dataset is scored against the index the user already has
        mine = (cfg.chunk_size, cfg.chunk_stride, cfg.embed_model)
        skipped += [
            _skip(s, "a gold file is scored against the current index only")
            for s in specs
            if s.index_key != mine
        ]
        specs = [s for s in specs if s.index_key == mine]
    stages("load", 0, None)  # the embedder (and reranker) load before the first part starts
    models, reranker, missing = _load_models(cfg, specs)
    skipped += missing
    gone = {s["label"] for s in missing}
    specs = [s for s in specs if s.label not in gone]
    accs = {s: _Acc(s, getattr(models[s.embed_model], "name", s.embed_model)) for s in specs}
    started = time.perf_counter()
    for corpus in corpora:
        _evaluate_corpus(cfg, corpus, specs, accs, models, reranker, ks, say, stages)
    groups = {k: v for c in corpora for k, v in c.groups.items()}
    items = [i for c in corpora for i in c.items]
    doc: dict[str, Any] = {
        "dataset": dataset if not current else str(Path(dataset).expanduser()),
        "split": split,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "questions": len(items),
        "scored_questions": sum(1 for i in items if i.answerable),
        "ks": ks,
        "fusion": cfg.fusion,  # how the runs without a `fuse` of their own were fused
        "info": info,
        "runs": [_run_doc(accs[s], groups) for s in specs],
        "skipped": skipped,
        "elapsed_s": round(time.perf_counter() - started, 2),
    }
    if dataset.startswith("locomo"):
        doc["reference"] = dragon_reference()
    if any(i.category == "stats" for i in items) or answers:
        doc.update(
            answers_mod.evaluate_corpora(
                cfg,
                corpora,
                specs,
                models,
                reranker,
                with_llm=answers,
                engine=engine,
                progress=say,
                answers_limit=answers_limit,
            )
        )
    if out_dir is not None:
        doc["files"] = {k: str(v) for k, v in report.write_run(doc, out_dir).items()}
    return doc
