"""The agent: pure state machine (core), its texts (prompts), date hints (enrich), shell (loop)."""
