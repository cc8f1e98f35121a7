"""The closed vocabularies and bounds more than one layer speaks, each named once: a `Literal`
type for mypy and the tuple of its words (`get_args` of it) for the checks at run time — typer's
choices, the thin client's table, the request checks, config.toml's, the Retriever's.

Imports: `typing` only. The thin client reads it before every request, so it stays this small.
"""

from __future__ import annotations

from typing import Literal, get_args

# how `casper search` ranks (`--mode`)
Mode = Literal["hybrid", "bm25", "vector"]
MODES: tuple[Mode, ...] = get_args(Mode)

# the lexical backend (`--lexical`, setting `lexical`): LanceDB's FTS, or rank-bm25 in memory
Lexical = Literal["lancedb", "rank-bm25"]
LEXICAL: tuple[Lexical, ...] = get_args(Lexical)

# how the hybrid legs are fused (setting `fusion`; casper/search/fusion.py)
Fusion = Literal["convex", "adaptive", "rrf"]
FUSIONS: tuple[Fusion, ...] = get_args(Fusion)

# the most an MCP client or a model on another machine is shown (setting `privacy`, `casper mcp
# --privacy`), loosest first: a stricter one is further on (casper/agent/redact.py)
Privacy = Literal["full", "redacted", "aggregate"]
PRIVACY_MODES: tuple[Privacy, ...] = get_args(Privacy)

# what an answer rests on, `grounding` in `ask --json` (docs/architecture.md, "Grounding")
Grounding = Literal[
    "cited",
    "corrected",
    "stats",
    "abstained",
    "exempt",
    "fallback",
    "search_only",
    "nothing_found",
]
GROUNDINGS: tuple[Grounding, ...] = get_args(Grounding)

# the calendar buckets messages are counted in (the agent's volume tool, casper.stats)
Period = Literal["day", "week", "month", "year"]
PERIODS: tuple[Period, ...] = get_args(Period)
# of those, what `stats --by` draws messages over time by
STATS_PERIODS: tuple[Period, ...] = ("week", "month")

# the longest string a tool argument may be (a query, a person, a date), for the agent's model
# and an MCP client alike: said in each tool's JSON Schema (`maxLength`), a longer one refused
# at once (casper.agent.tool_args, casper.cli.mcp_wire)
MAX_ARGUMENT_CHARS = 2_000

# hits per search (`search -k`, setting `top_k`): more is a mistake, and each one is fetched and
# rendered
MAX_K = 1_000
# model calls in one answer's tool loop (`ask --max-iterations`, setting `max_iterations`)
MAX_ITERATIONS = 50
