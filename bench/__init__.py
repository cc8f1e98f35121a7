"""Benchmarks, e.g. `python -m bench.retrieval`; results go to bench/results/."""
