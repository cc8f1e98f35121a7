"""`make pictures`: the README's pictures, drawn from the demo corpus — `casper stats Sam` in a
terminal, its `--png`, and the 2023 review page. Needs headless Chromium for the two
screenshots (`apt-get install chromium fonts-noto-color-emoji`); CI never runs it, the images
are committed. The demo is indexed with the tests' fake embedder: stats and the review read the
store only, so the pictures are those of a real index.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

IMG = Path(__file__).resolve().parent / "img"
REPO = IMG.parents[1]
sys.path.insert(0, str(REPO))  # `tests.helpers` (the fake embedder) from this checkout


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    sys.exit("make pictures needs headless Chromium: apt-get install chromium")


def screenshot(page: Path, out: Path, width: int, height: int) -> None:
    subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--force-device-scale-factor=1", f"--window-size={width},{height}",
         f"--screenshot={out}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip


def main() -> None:
    from rich.console import Console
    from rich.text import Text

    from casper.app.handlers import stats
    from casper.app.requests import StatsRequest
    from casper.app.review import build_review, full_privacy
    from casper.app.runtime import Runtime, open_store
    from casper.cli.charts import write_png
    from casper.cli.review_html import review_html
    from casper.cli.stats_view import stats_view
    from casper.config import load_config, remember
    from casper.dates.zones import local_tz
    from ingest.synthetic import DEMO_TIMEZONE, build_demo_corpus
    from tests.helpers import index_home, use_fake_search_models

    IMG.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        work = Path(tmp)
        mp.setenv("CASPER_SERVICE", "0")
        use_fake_search_models(mp)
        corpus = build_demo_corpus(work / "src")
        home = work / "home"
        remember(home, chat_db=corpus.chat_db, contacts=corpus.contacts, timezone=DEMO_TIMEZONE)
        index_home(home, corpus)
        cfg = load_config(home)
        tz = local_tz(cfg.timezone)
        store = open_store(cfg)
        doc = stats(Runtime(cfg), StatsRequest(person="Sam"))  # what `stats Sam --json` prints

        term = Console(record=True, width=92, highlight=False, file=open("/dev/null", "w"))  # noqa: SIM115
        term.print(Text("$ casper stats Sam", style="bold"))
        for part in stats_view(doc, 92, Text):
            term.print(part)
        svg = work / "stats.svg"
        svg.write_text(term.export_svg(title="casper stats Sam"), encoding="utf-8")
        page = work / "stats.html"
        page.write_text(f'<body style="margin:0;background:#fff">{svg.read_text()}</body>')
        screenshot(page, IMG / "stats-terminal.png", 1010, 866)

        write_png(doc, IMG / "stats-sam.png", work, force=True)
        (IMG / "stats-sam.png").chmod(0o644)

        review = work / "review.html"
        review.write_text(review_html(build_review(store, tz, 2023, full_privacy())))
        screenshot(review, IMG / "review-2023.png", 1000, 1640)
    print(f"wrote {', '.join(p.name for p in sorted(IMG.glob('*.png')))} in {IMG}")


if __name__ == "__main__":
    main()
