"""Model backends: concrete Engine/Embedder/Reranker adapters, built lazily by one factory.

May import: casper.config, casper.errors, casper.protocols; heavy libraries (mlx, torch,
sentence-transformers) only inside functions.
"""
