"""Dates as people write them: the local time zone, date phrases and holidays, and the one
function that turns `--since`/`--until` into UTC seconds.

May import: casper.errors, stdlib, dateparser, holidays. Below search and agent, so neither
reaches up for a date.
"""
