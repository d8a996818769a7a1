"""Inline SVG charts: a histogram with the representable range marked, and a bar per channel.

Plain SVG elements with classes the page's CSS colours; each bar's <title> is its tooltip (no script).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from onnx_qtypes.report.range_error import Histogram

WIDTH, HEIGHT = 620, 190
LEFT, RIGHT, TOP, BOTTOM = 12, 12, 26, 30
MAX_CHANNEL_BARS = 256
MAX_BARS = 200  # a histogram's bars: about 3 px each; more bins are drawn as runs of adjacent ones


def num(value: float) -> str:
    """A number as the page shows it: 4 significant digits."""
    if not math.isfinite(value):
        return str(value)
    return f"{value:.4g}"


def histogram_svg(h: Histogram, spans: Sequence[tuple[float, float]] | None,
                  observed: tuple[float | None, float | None] = (None, None), relu_only: bool = False) -> str:
    """The histogram's non-empty bins as bars; the range every channel represents shaded, the range some channel
    represents (per-axis) lighter, each end marked; bars outside every range in the clipped colour (not
    those below a range reaching 0 of a tensor only Relu reads: they become 0 either way)."""
    inner = outer = None
    if spans:
        inner = (max(lo for lo, _ in spans), min(hi for _, hi in spans))
        outer = (min(lo for lo, _ in spans), max(hi for _, hi in spans))
    populated = [i for i, c in enumerate(h.counts) if c]  # empty bins draw nothing
    first, last = (h.edges[populated[0]], h.edges[populated[-1] + 1]) if populated else (h.edges[0], h.edges[-1])
    width = (last - first) or max(abs(first), 1.0)
    x0, x1 = first, last
    if outer is not None:  # show the range, unless it runs far past the data (then the markers point off-chart)
        x0 = min(x0, max(outer[0], first - width))
        x1 = max(x1, min(outer[1], last + width))
    if x1 <= x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    pad = (x1 - x0) * 0.02
    x0, x1 = x0 - pad, x1 + pad
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    base = TOP + plot_h

    def x(v: float) -> float:
        return LEFT + (min(max(v, x0), x1) - x0) / (x1 - x0) * plot_w

    bars = histogram_bars(h, spans, relu_only)
    peak = scale_peak([count for _, _, count, _ in bars])
    parts = [f'<svg class="histogram" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
             f'role="img" aria-label="histogram with the representable range">']
    if outer is not None and inner is not None:
        if outer != inner:
            parts.append(_band(x(outer[0]), x(outer[1]), TOP, plot_h, "range-some"))
        if inner[0] < inner[1]:
            parts.append(_band(x(inner[0]), x(inner[1]), TOP, plot_h, "range"))
    for a, b, count, what in bars:
        left, right = x(a), x(b)
        bar_h = min(count / peak, 1.0) * plot_h
        if count and bar_h < 1:
            bar_h = 1.0  # a non-empty bin stays visible
        what += " cut" if count > peak else ""
        parts.append(f'<rect class="{what}" x="{left:.2f}" y="{base - bar_h:.2f}" '
                     f'width="{max(right - left - 0.6, 0.8):.2f}" height="{bar_h:.2f}">'
                     f'<title>[{num(a)}, {num(b)}]: {count}</title></rect>')
    parts.append(f'<line class="axis" x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}"/>')
    if outer is not None and inner is not None:
        parts.extend(_markers(outer, TOP - 8, x, (x0, x1)))  # above the plot
        if inner != outer:  # per-axis: the range every channel covers, labelled inside the plot
            parts.extend(_markers(inner, TOP + 10, x, (x0, x1)))
    for label, v in zip(("min", "max"), observed):
        if v is not None and math.isfinite(v):
            parts.append(f'<path class="observed" d="M{x(v):.2f},{base + 1} l-4,7 h8 z">'
                         f'<title>observed {label} {num(v)}</title></path>')
    for v in (first, last):  # centred under the edge, kept inside the picture
        at = min(max(x(v), LEFT + 18), WIDTH - RIGHT - 18)
        parts.append(f'<text class="tick" x="{at:.2f}" y="{base + 20}" text-anchor="middle">{num(v)}</text>')
    if x0 < 0 < x1 and abs(x(0) - x(first)) > 60 and abs(x(last) - x(0)) > 60:
        parts.append(f'<text class="tick" x="{x(0):.2f}" y="{base + 20}" text-anchor="middle">0</text>')
    parts.append("</svg>")
    return "".join(parts)


def bar_group(h: Histogram) -> int:
    """How many adjacent bins one bar draws: 1 up to MAX_BARS bins between the first and last non-empty one."""
    populated = [i for i, c in enumerate(h.counts) if c]
    span = populated[-1] - populated[0] + 1 if populated else 0
    return max(1, math.ceil(span / MAX_BARS))


def histogram_bars(h: Histogram, spans: Sequence[tuple[float, float]] | None, relu_only: bool = False
                   ) -> list[tuple[float, float, int, str]]:
    """(left edge, right edge, count, class) per bar: runs of up to ``bar_group`` adjacent bins of one class
    (clipped, outside some channels' range, kept: a bar never mixes them), the empty runs left out."""
    inner = outer = None
    if spans:
        inner = (max(lo for lo, _ in spans), min(hi for _, hi in spans))
        outer = (min(lo for lo, _ in spans), max(hi for _, hi in spans))
    floor_free = relu_only and outer is not None and outer[0] <= 0
    low = -math.inf if floor_free else outer[0] if outer is not None else None

    def kind(a: float, b: float) -> str:
        clipped = outer is not None and (b < low or a > outer[1] or (a == b and not low <= a <= outer[1]))
        partly = not clipped and outer is not None and inner is not None and (
            a < (low if floor_free else inner[0]) or b > inner[1])
        return "bin clipped" if clipped else "bin partly" if partly else "bin"

    populated = [i for i, c in enumerate(h.counts) if c]
    if not populated:
        return []
    group = bar_group(h)
    bars: list[tuple[float, float, int, str]] = []
    start = populated[0]
    for i in range(populated[0], populated[-1] + 1):
        what = kind(h.edges[i], h.edges[i + 1])
        if i > start and (i - start >= group or what != run_kind):
            bars.append((h.edges[start], h.edges[i], sum(h.counts[start:i]), run_kind))
            start = i
        run_kind = what if i == start else run_kind
    bars.append((h.edges[start], h.edges[populated[-1] + 1], sum(h.counts[start:populated[-1] + 1]), run_kind))
    return [bar for bar in bars if bar[2]]


def scale_peak(counts: Sequence[int]) -> float:
    """The count a full-height bar stands for: the tallest, unless a few bins tower over the rest (a Relu
    output's zeros, a padded tensor's constant); then the tallest of the rest, and the taller bars are cut."""
    ranked = sorted(counts, reverse=True)
    for k in range(min(3, len(ranked) - 1)):
        if ranked[k + 1] and ranked[k] > 4 * ranked[k + 1]:
            return ranked[k + 1] * 1.25
    return ranked[0] if ranked and ranked[0] else 1


def _markers(span: tuple[float, float], y: float, x, view: tuple[float, float]) -> list[str]:
    """A dashed line at each end of ``span`` with its label: inside the band when it is wide enough, outside
    it otherwise (so "lo" and "hi" never overlap); an end past the chart's edge is drawn at the edge, with ◀ ▶."""
    inward = x(span[1]) - x(span[0]) >= 150
    out = []
    for side, v in (("lo", span[0]), ("hi", span[1])):
        off = v < view[0] or v > view[1]
        label = f"{'◀ ' if off and side == 'lo' else ''}{side} {num(v)}{' ▶' if off and side == 'hi' else ''}"
        toward_start = (side == "lo") == inward
        anchor, shift = ("start", 3) if toward_start else ("end", -3)
        out.append(f'<line class="range-marker" x1="{x(v):.2f}" y1="{min(y, TOP) - 4}" x2="{x(v):.2f}" '
                   f'y2="{HEIGHT - BOTTOM}"/><text class="marker-label" x="{x(v) + shift:.2f}" y="{y}" '
                   f'text-anchor="{anchor}">{escape(label)}</text>')
    return out


def _band(left: float, right: float, top: float, height: float, kind: str) -> str:
    return f'<rect class="{kind}" x="{left:.2f}" y="{top}" width="{max(right - left, 0):.2f}" height="{height}"/>'


def channel_svg(values: Sequence[float], label: str, highlight: Sequence[bool] | None = None,
                unit: str = "channel") -> str:
    """One bar per channel (its value, from 0); above MAX_CHANNEL_BARS, each bar the largest of a run of
    channels. ``highlight`` marks channels a finding names or that clip."""
    n = len(values)
    group = max(1, math.ceil(n / MAX_CHANNEL_BARS))
    bars = []
    for start in range(0, n, group):
        chunk = [v for v in values[start:start + group] if math.isfinite(v)]
        flagged = highlight is not None and any(highlight[start:start + group])
        bars.append((start, min(start + group, n) - 1, max(chunk) if chunk else math.nan, flagged))
    height, top, bottom = 64, 6, 4
    peak = max((b[2] for b in bars if math.isfinite(b[2])), default=0.0)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, height - top - bottom
    step = min(plot_w / len(bars), 28.0)  # a few channels stay bars, not blocks
    parts = [f'<svg class="channels" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
             f'aria-label="{escape(label)} per {unit}">']
    for k, (first, last, value, flagged) in enumerate(bars):
        bar_h = value / peak * plot_h if peak > 0 and math.isfinite(value) and value > 0 else 0.0
        which = f"{unit} {first}" if first == last else f"{unit}s {first}–{last} (largest)"
        kind = "channel-bar flagged" if flagged else "channel-bar"
        parts.append(f'<rect class="{kind}" x="{LEFT + k * step:.2f}" y="{top + plot_h - bar_h:.2f}" '
                     f'width="{max(step - 1, 0.6):.2f}" height="{max(bar_h, 0.8):.2f}">'
                     f'<title>{which}: {escape(label)} {num(value)}</title></rect>')
    parts.append(f'<line class="axis" x1="{LEFT}" y1="{top + plot_h}" x2="{WIDTH - RIGHT}" y2="{top + plot_h}"/>')
    parts.append("</svg>")
    caption = f"{label} per {unit}, 0 … {n - 1}" + (f", each bar the largest of {group}" if group > 1 else "")
    parts.append(f'<div class="legend">{escape(caption)}; largest {num(peak)}</div>')
    return "".join(parts)
