"""Model backends: concrete Engine/Embedder/Reranker adapters, built lazily by one factory."""
