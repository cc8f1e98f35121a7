"""The agent: a pure state machine (core) and its texts (prompts, replies, grounding), the five
tools, the imperative loop, and one question end to end (answer).

May import: casper's leaf modules, casper.dates, casper.store. Search and the engine arrive as
arguments.
"""
