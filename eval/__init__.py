"""Retrieval eval harness (`casper eval`, `python -m eval`): metrics, gold files, LoCoMo, runs."""
