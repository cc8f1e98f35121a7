"""`casper serve`: a per-user background process that keeps the store, index and models warm.

protocol.py (paths, framing, version; stdlib), client.py (the thin side the CLI uses; stdlib),
server.py (the service; builds everything through casper.app.runtime).
May import: casper.app (server only), casper.config, casper.errors.
"""
