"""`python -m casper`: the same CLI (the service's auto-start spawns `python -m casper serve`)."""

from casper.cli import app

if __name__ == "__main__":
    app(prog_name="casper")
