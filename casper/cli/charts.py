"""`stats --png`: the same charts as the terminal view, drawn by matplotlib into one PNG file —
messages over time (sent and received stacked, a person's group messages apart, each legend
saying what it counts), hour × weekday heatmap, reply-time trend from zero with months without
a reply left as gaps, who starts conversations — titled with the name, the range and the zone.

A neutral grey card with dark ink, so the picture reads on a light page and on a dark one.
matplotlib is imported only here, with the Agg backend (no window) and its cache folder
inside Casper's data dir (MPLCONFIGDIR), so drawing writes nothing anywhere else.

Imports: stdlib, casper.cli.stats_view, matplotlib (lazily); the document types for checking only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from casper.cli.stats_view import over_time_parts, range_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from casper.app.documents import StatsDoc

CARD = "#e9e9e6"  # neutral: neither a white page nor a black one swallows it
INK = "#202124"
SENT = "#1f6fb2"
RECEIVED = "#c2418f"
IN_GROUPS = "#e6a5cc"  # a person's messages outside our 1:1 chats: received, set apart
PART_COLOURS = (SENT, RECEIVED, IN_GROUPS)
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def pyplot(data_dir: Path) -> Any:
    """matplotlib.pyplot on the Agg backend, its config and font cache under `data_dir`."""
    cache = data_dir / "matplotlib"
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ["MPLCONFIGDIR"] = str(cache)  # read once, when matplotlib is first imported
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def title_of(data: StatsDoc) -> str:
    """ "Sam Rivera · all time · America/Los_Angeles": who, when, and in which zone."""
    return f"{data['scope']['name']} · {range_label(data['range'])} · {data['zone']}"


def footer(data: StatsDoc) -> str:
    """The figures without a chart of their own: streaks and quiet gaps."""
    s = data["series"]
    longest, current, gaps = s["streaks"]["longest"], s["streaks"]["current"], s["gaps"]
    sent, received = ("sent one-to-one", "received in all chats") if "person" in data else (
        "sent", "received")  # fmt: skip
    return (f"{data['sent']} {sent} · {data['received']} {received} · longest streak "
            f"{longest['days']} days · current {current['days']} · quiet gaps of "
            f"{gaps['min_days']}+ days: {gaps['count']} (ended by me {gaps['reconnected']['me']}, "
            f"them {gaps['reconnected']['them']})")  # fmt: skip


def write_png(data: StatsDoc, path: Path, data_dir: Path, *, force: bool = False) -> Path:
    """Draw every chart of `data` into `path` (a PNG, 0600, written as `export` writes: never
    over a file or through a link without `force`); returns the path."""
    import io

    from casper.app.outfile import write_private

    plt = pyplot(data_dir)
    fig = plt.figure(figsize=(12, 8.5), dpi=110, facecolor=CARD)
    grid = fig.add_gridspec(2, 2, height_ratios=(1, 1), hspace=0.45, wspace=0.22)
    fig.suptitle(title_of(data), color=INK, fontsize=15, fontweight="bold")
    axes = [fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])]
    for ax in axes:
        ax.set_facecolor(CARD)
        ax.tick_params(colors=INK, labelsize=8)
        for spine in ax.spines.values():
            spine.set_color("#8a8a8a")
    _over_time(axes[0], data)
    _heatmap(axes[1], data, fig)
    _replies(axes[2], data)
    fig.text(0.5, 0.015, footer(data), ha="center", color=INK, fontsize=10)
    picture = io.BytesIO()  # drawn in memory: matplotlib never opens the path itself
    fig.savefig(picture, format="png", facecolor=CARD)
    plt.close(fig)
    for cached in (data_dir / "matplotlib").rglob("*"):  # its font list: owner-only, like the rest
        if cached.is_file():
            cached.chmod(0o600)
    return write_private(path, picture.getvalue(), force=force)


def _over_time(ax: Axes, data: StatsDoc) -> None:
    rows = data["series"]["over_time"]
    ax.set_title(f"messages by {data['series']['period']}", color=INK, loc="left")
    if not rows:
        ax.text(0.5, 0.5, "no messages in this range", ha="center", va="center", color=INK,
                transform=ax.transAxes)  # fmt: skip
        return
    xs = range(len(rows))
    bottom = [0] * len(rows)
    for part, color in zip(over_time_parts(data), PART_COLOURS, strict=False):
        ax.bar(xs, part.values, bottom=bottom, color=color, width=0.85,
               label=f"{part.label} ({sum(part.values):,})")  # fmt: skip
        bottom = [b + v for b, v in zip(bottom, part.values, strict=True)]
    ax.set_ylim(0, max(max(bottom), 1) * 1.3)  # room above the bars for the legend
    step = max(1, len(rows) // 12)
    ax.set_xticks(list(xs)[::step], [r["period"] for r in rows][::step], rotation=30)
    legend = ax.legend(loc="upper left", frameon=False, ncols=len(PART_COLOURS))
    for label in legend.get_texts():
        label.set_color(INK)


def _heatmap(ax: Axes, data: StatsDoc, fig: Figure) -> None:
    grid = data["series"]["heatmap"]
    ax.set_title("hour of day × weekday (local)", color=INK, loc="left")
    image = ax.imshow(grid, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.set_yticks(range(7), WEEKDAYS)
    ax.set_xticks(range(0, 24, 3), [f"{h:02d}" for h in range(0, 24, 3)])
    bar = fig.colorbar(image, ax=ax, fraction=0.05)
    bar.ax.tick_params(colors=INK, labelsize=8)


def _replies(ax: Axes, data: StatsDoc) -> None:
    series = data["series"]
    months = series["replies"]["by_month"]
    starters = series["starters"]
    ax.set_title(f"median reply by month (min) · conversations started: me {starters['me']}, "
                 f"them {starters['them']}", color=INK, loc="left", fontsize=9)  # fmt: skip
    if not any(p["me"] is not None or p["them"] is not None for p in months):
        ax.text(0.5, 0.5, "no replies in this range", ha="center", va="center", color=INK,
                transform=ax.transAxes)  # fmt: skip
        return
    xs = range(len(months))  # every month: one without a reply is a gap in its line
    for side, color in (("me", SENT), ("them", RECEIVED)):
        ys = [p[side] / 60 if p[side] is not None else None for p in months]  # type: ignore[literal-required]
        ax.plot(xs, [float("nan") if y is None else y for y in ys], marker="o", markersize=3,
                color=color, label=side)  # fmt: skip
    ax.set_ylim(bottom=0)  # from zero: a flat three minutes must not look like a swing
    step = max(1, len(months) // 8)
    ax.set_xticks(list(xs)[::step], [p["period"] for p in months][::step], rotation=30)
    legend = ax.legend(loc="upper left", frameon=False)
    for label in legend.get_texts():
        label.set_color(INK)
