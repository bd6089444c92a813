"""Plots drawn on the server: a series of (day, label, count) rows as one ``<svg>`` element,
a line per label (or stacked areas), with axes, a legend and a text alternative.

Pure: rows in, markup out, nothing but the standard library and
:func:`pipelines.visible.visible_cell`. Every label and the title are shown as text: control,
invisible and direction characters are written out and the rest XML-escaped, so hostile
upstream text can neither run nor reorder the page. Axes and text are drawn in
``currentColor`` so the chart follows the page's light or dark colours; the series colours
are mid-tone and readable on both. The day axis is to scale: a day without a row for a
label counts zero for it (so a series of levels, such as statuses, gives every day).

The element has a fixed ``width`` and ``height`` and a ``viewBox``, and no inline style
(a page's Content-Security-Policy may forbid those): a page that wants it to shrink on a
narrow screen styles ``svg.chart { max-width: 100%; height: auto; }``.
"""

from __future__ import annotations

import hashlib
import html
import math
from collections.abc import Sequence
from datetime import date, timedelta

from pipelines.visible import visible_cell

WIDTH = 640
PLOT_HEIGHT = 240
LEFT, RIGHT, TOP = 56, 16, 32
X_TICKS = 6
Y_TICKS = 5
LEGEND_ROW = 20
LEGEND_COLUMN = 180
LABEL_CHARS = 28
MARKED_DAYS = 62  # at most this many days: each value is a dot with its own tooltip
MAX_FILLED_DAYS = 3660

# Mid-tone colours with a contrast of at least 3:1 on white and on #0d1117.
PALETTE = (
    "#2f81f7",
    "#d4762c",
    "#3fa35b",
    "#c2559b",
    "#8a7fd4",
    "#b59400",
    "#2c9fa6",
    "#e0525a",
)
GREY = "#8b949e"
# The statuses the warehouse knows keep one colour in every chart (green holds, red is
# lost); other labels take the palette in turn.
STATUS_COLOURS = {
    "current": PALETTE[0],
    "tombstoned": GREY,
    "holds": PALETTE[2],
    "stale": PALETTE[5],
    "misattributed": PALETTE[3],
    "missing": PALETTE[7],
    "gone": GREY,
    "unseen": PALETTE[6],
    "unknown": PALETTE[4],
}


def colours(labels: Sequence[str]) -> dict[str, str]:
    """A colour for each label: a known status's own, else the palette's next."""
    if all(label in STATUS_COLOURS for label in labels):
        return {label: STATUS_COLOURS[label] for label in labels}
    return {label: PALETTE[n % len(PALETTE)] for n, label in enumerate(labels)}


def _text(value: object) -> str:
    """``value`` as XML text and attribute value: one line, hidden characters written out,
    ``& < > " '`` escaped."""
    return html.escape(visible_cell(str(value)), quote=True)


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def _chart_id(title: str, rows: Sequence[tuple[date, str, int]]) -> str:
    """An id for the chart's title and description, the same for the same chart, distinct
    between the charts of one page."""
    digest = hashlib.sha256(repr((title, list(rows))).encode()).hexdigest()
    return f"chart-{digest[:12]}"


def nice_step(top: float, ticks: int = Y_TICKS) -> int:
    """A round step (1, 2 or 5 times a power of ten, at least 1) that covers ``top`` in
    about ``ticks`` steps."""
    if top <= ticks:
        return 1
    raw = top / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(int(f * power) for f in (1, 2, 5, 10) if f * power >= raw)


def _days(rows: Sequence[tuple[date, str, int]]) -> list[date]:
    """The days along the axis: every calendar day from the first row's to the last's (a
    day without a row counts zero, and the axis keeps time to scale), or only the days with
    rows when those span more than :data:`MAX_FILLED_DAYS`."""
    present = sorted({day for day, _, _ in rows})
    span = (present[-1] - present[0]).days
    if span > MAX_FILLED_DAYS:
        return present
    return [present[0] + timedelta(days=n) for n in range(span + 1)]


def _empty(title: str, chart_id: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart empty" width="320" height="64" '
        f'viewBox="0 0 320 64" role="img" aria-labelledby="{chart_id}-title" '
        f'aria-label="{_text(title)}: no data">'
        f'<title id="{chart_id}-title">{_text(title)}: no data</title>'
        f'<text x="8" y="22" fill="currentColor" font-size="14" font-weight="600">'
        f"{_text(title)}</text>"
        f'<text x="8" y="48" fill="currentColor" font-size="13" opacity="0.75">no data</text>'
        "</svg>"
    )


def chart_svg(title: str, rows: Sequence[tuple[date, str, int]], *, stacked: bool = False) -> str:
    """The rows as a complete ``<svg>`` element: one line per label, or with ``stacked``
    one area per label on top of the previous ones; an empty series is a small "no data"
    chart."""
    chart_id = _chart_id(title, rows)
    if not rows:
        return _empty(title, chart_id)
    days = _days(rows)
    labels = sorted({label for _, label, _ in rows})
    values: dict[str, list[int]] = {label: [0] * len(days) for label in labels}
    index = {day: i for i, day in enumerate(days)}
    for day, label, count in rows:
        values[label][index[day]] += int(count)

    if stacked:
        tops, running = {}, [0] * len(days)
        for label in labels:
            running = [a + b for a, b in zip(running, values[label], strict=True)]
            tops[label] = running
        highest = max(running)
    else:
        highest = max(max(series) for series in values.values())
    step = nice_step(max(highest, 1))
    y_max = step * max(1, math.ceil(max(highest, 1) / step))

    plot_width = WIDTH - LEFT - RIGHT
    per_row = max(1, plot_width // LEGEND_COLUMN)
    legend_rows = math.ceil(len(labels) / per_row)
    legend_top = TOP + PLOT_HEIGHT + 36
    height = legend_top + legend_rows * LEGEND_ROW + 4

    def x(i: int) -> float:
        return LEFT + (plot_width / 2 if len(days) == 1 else plot_width * i / (len(days) - 1))

    def y(count: float) -> float:
        return TOP + PLOT_HEIGHT - PLOT_HEIGHT * count / y_max

    first, last = days[0].isoformat(), days[-1].isoformat()
    span = first if first == last else f"{first} to {last}"
    summary = "; ".join(
        f"{label}: {values[label][-1] if stacked else sum(values[label])}" for label in labels
    )
    description = (
        f"{'Stacked areas' if stacked else 'Lines'} for {len(labels)} "
        f"label{'s' if len(labels) != 1 else ''} over {len(days)} "
        f"day{'s' if len(days) != 1 else ''}, {span}. "
        f"{'Last day' if stacked else 'Totals'}: {summary}."
    )
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-labelledby="{chart_id}-title {chart_id}-desc" aria-label="{_text(title)}" '
        f'font-family="system-ui, sans-serif" font-size="12">',
        f'<title id="{chart_id}-title">{_text(title)}</title>',
        f'<desc id="{chart_id}-desc">{_text(description)}</desc>',
        f'<text x="{LEFT}" y="18" fill="currentColor" font-size="14" font-weight="600">'
        f"{_text(title)}</text>",
    ]
    # the count axis: gridlines and labels
    out.append('<g class="y-axis" fill="currentColor" text-anchor="end">')
    for tick in range(0, y_max + 1, step):
        ty = y(tick)
        out.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}" '
            f'stroke="currentColor" stroke-opacity="{0.6 if tick == 0 else 0.15}"/>'
            f'<text x="{LEFT - 6}" y="{ty + 4:.1f}">{tick}</text>'
        )
    out.append("</g>")
    # the day axis: at most X_TICKS dates, first and last included
    shown = sorted({round(i * (len(days) - 1) / (X_TICKS - 1)) for i in range(X_TICKS)})
    out.append('<g class="x-axis" fill="currentColor" text-anchor="middle">')
    for i in shown:
        tx = x(i)
        anchor = "" if len(days) == 1 else ' text-anchor="start"' if i == 0 else ""
        anchor = ' text-anchor="end"' if i == len(days) - 1 and len(days) > 1 else anchor
        out.append(
            f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{TOP + PLOT_HEIGHT}" '
            f'y2="{TOP + PLOT_HEIGHT + 5}" stroke="currentColor" stroke-opacity="0.6"/>'
            f'<text x="{tx:.1f}" y="{TOP + PLOT_HEIGHT + 20}"{anchor}>{days[i].isoformat()}</text>'
        )
    out.append("</g>")
    # the series
    marked = len(days) <= MARKED_DAYS
    base = [0] * len(days)
    colour_of = colours(labels)
    for label in labels:
        colour = colour_of[label]
        shown_label = _text(label)
        out.append(f'<g class="series" data-label="{shown_label}">')
        if stacked:
            upper = tops[label]
            points = [f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(upper)]
            lower = [f"{x(i):.1f},{y(v):.1f}" for i, v in reversed(list(enumerate(base)))]
            if len(days) == 1:  # one day: a bar, not a line of no width
                half = 12
                points = [
                    f"{x(0) - half:.1f},{y(upper[0]):.1f}",
                    f"{x(0) + half:.1f},{y(upper[0]):.1f}",
                ]
                lower = [
                    f"{x(0) + half:.1f},{y(base[0]):.1f}",
                    f"{x(0) - half:.1f},{y(base[0]):.1f}",
                ]
            out.append(
                f'<polygon points="{" ".join(points + lower)}" fill="{colour}" '
                f'fill-opacity="0.55" stroke="{colour}" stroke-width="1.5"/>'
            )
            series, base = upper, upper
        else:
            series = values[label]
            points = [f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(series)]
            out.append(
                f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour}" '
                f'stroke-width="2" stroke-linejoin="round"/>'
            )
        if marked or len(days) == 1:
            for i, day in enumerate(days):
                count = values[label][i]
                out.append(
                    f'<circle cx="{x(i):.1f}" cy="{y(series[i]):.1f}" r="3" fill="{colour}">'
                    f"<title>{shown_label}, {day.isoformat()}: {count}</title></circle>"
                )
        out.append("</g>")
    # the legend
    out.append('<g class="legend" fill="currentColor">')
    for n, label in enumerate(labels):
        lx = LEFT + (n % per_row) * LEGEND_COLUMN
        ly = legend_top + (n // per_row) * LEGEND_ROW
        out.append(
            f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" rx="2" '
            f'fill="{colour_of[label]}"/>'
            f'<text x="{lx + 18}" y="{ly}">{_text(_short(label))}'
            f"<title>{_text(label)}</title></text>"
        )
    out.append("</g></svg>")
    return "".join(out)
