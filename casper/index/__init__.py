"""The chunk index: one LanceDB table (FTS + n-gram + scalar indexes) and the vector side
(float16 rows, sign-bit shortlist, exact rescoring), published by generation.

May import: casper's leaf modules, lancedb/pyarrow/numpy, rank-bm25. Not the store: the two
are siblings that the indexer keeps in step.
"""
