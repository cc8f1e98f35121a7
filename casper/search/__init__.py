"""Search: reading the question (dates, people, first person), the legs (vector, BM25, n-gram),
fusion, the feedback pass, and `Retriever.search`.

May import: casper's leaf modules, casper.dates, casper.store, casper.index. Models arrive as
arguments (Embedder, Reranker).
"""
