"""The application: the composition root (runtime: Config → store, index, models), the
handlers both transports share (the CLI in-process and the service), their `--json`
documents, input checks, `doctor`, and notices said once.

May import: everything below it (leaves, dates, store, index, backends, indexer, search,
agent) and ingest. Only this package builds concrete backends.
"""
