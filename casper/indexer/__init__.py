"""The `casper index` run: chat.db (through `ingest`) → the store and per-person stats → chunks
→ the chunk index. Incremental: only new work is done.

May import: ingest, casper's leaf modules, casper.dates, casper.store, casper.index. Models
arrive as arguments (an Embedder), never built here.
"""
