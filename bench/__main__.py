"""`python -m bench` (`make bench`): every benchmark; results in bench/results/*.{json,md}."""

from __future__ import annotations

from bench import agent, cli, cold_path, ingest, models, retrieval, scale


def main() -> None:
    ingest.main([])
    ingest.main(["--messages", "1000000"])  # issue 11's size; reads the cached scale chat.db
    retrieval.main([])
    models.main()
    agent.main()
    cold_path.main([])
    cli.main([])
    scale.main([])  # 1M generated messages, the longest; its chat.db is cached outside the repo


if __name__ == "__main__":
    main()
