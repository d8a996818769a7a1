"""The page: a header with the model's own findings, a summary table, then one card per tensor.

A model with more than CARDS tensors gets a card for the CARDS that need a look most (an error, then a
warning, then the largest clipped fraction, then the lowest SQNR), listed first in a table of their own; the
table of every tensor follows, folded. The page grows by one table row per tensor, so 10,000 tensors make a
page of a few megabytes that opens on its summary, where a card each made hundreds.

Every string from the model (names, messages quoting them) goes through ``escape``: a model is untrusted
input, and a tensor named ``<script>`` must stay text. Nothing is loaded from anywhere: the CSS is inline,
the charts are inline SVG, and there is no script.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from html import escape
from typing import Any

from onnx_qtypes.checker import Diagnostic, Severity
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.statistics import Statistics, TensorStatistics
from onnx_qtypes.report.range_error import (RangeError, displayed_histogram, histogram, range_error, ranges,
                                            tensor_error)
from onnx_qtypes.report.style import CSS
from onnx_qtypes.report.svg import bar_group, channel_svg, histogram_bars, histogram_svg, num, scale_peak

DEFINITIONS = (
    "<b>Range</b>: the real values the type represents, scale·(qmin − zp) to scale·(qmax − zp), low end first. "
    "<b>Clipped</b>: the share of the histogram's mass more than half a step outside that range. "
    "<b>MSE</b>: the expected squared error of quantizing a value drawn from the histogram (rounding, "
    "scale²/12 inside the range, plus clipping outside it); <b>SQNR</b> = 10·log10(E[x²] / MSE) in dB, "
    "higher is better. Values are taken as spread evenly within each bin; per-axis types use one histogram "
    "per channel, weighted by count."
)
CARDS = 200  # cards on one page; every tensor still has its row in the table
CHANNEL_ROWS = 64  # per-channel rows shown before the rest fold away
TABLE_ROWS = 4096  # and at most this many in all: a blocked type may have millions of scales


def attach(rows: Sequence[dict[str, Any]], findings: Sequence[Diagnostic]
           ) -> tuple[list[list[Diagnostic]], list[Diagnostic]]:
    """Each row's findings (naming its tensor, or located at or below where it is declared or applied) and
    the findings no row takes. Rows are looked up by name and by each prefix of the finding's pointer, so the
    cost is one lookup per finding and pointer segment, not rows times findings."""
    by_name: dict[tuple[str, bool], list[int]] = {}
    by_place: dict[str, list[int]] = {}
    for k, row in enumerate(rows):
        by_name.setdefault((row["tensor"], row["function"] is not None), []).append(k)
        for place in row["declared_at"]:
            by_place.setdefault(place, []).append(k)
    per_row: list[list[Diagnostic]] = [[] for _ in rows]
    loose = []
    for d in findings:
        pointer = d.location.pointer
        taken = set(by_name.get((d.location.tensor, _in_scope(pointer, True)), ()))
        parts = pointer.split("/")
        for end in range(1, len(parts) + 1):
            taken.update(by_place.get("/".join(parts[:end]), ()))
        for k in sorted(taken):
            per_row[k].append(d)
        if not taken:
            loose.append(d)
    return per_row, loose


def _in_scope(pointer: str, in_function: bool) -> bool:
    return pointer.startswith("/functions/") == in_function


def render_html(rows: Sequence[dict[str, Any]], source: str, findings: Sequence[Diagnostic] = (),
                notes: Sequence[str] = ()) -> str:
    return "".join(iter_html(rows, source, findings, notes))


def iter_html(rows: Sequence[dict[str, Any]], source: str, findings: Sequence[Diagnostic] = (),
              notes: Sequence[str] = ()) -> Iterator[str]:
    """The page, a section or a card at a time."""
    per_row, loose = attach(rows, findings)
    errors = [d for d in findings if d.severity is Severity.ERROR]
    quantized = sum(r["qtype"] is not None for r in rows)
    judged = [_error(row) for row in rows]  # (estimate, how it was made or why there is none), once per row
    estimates = [estimate for estimate, _ in judged]
    carded = _carded(rows, per_row, estimates)
    yield (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
           f'<meta name="viewport" content="width=device-width, initial-scale=1">'
           f'<title>{escape(_basename(source))} · onnx-qtypes</title><style>{CSS}</style></head><body>')
    if len(carded) < len(rows):
        notes = [*notes, f"{len(rows)} tensors: cards for the {len(carded)} that need a look most (errors, then "
                         "warnings, then the largest clipped fraction and the lowest SQNR), first in their own table; "
                         "the table of every tensor is folded below it; `onnx-qtypes show --format json` lists "
                         "every tensor's parameters and statistics"]
    yield (f'<header><div class="brand">onnx-qtypes report</div><h1>{escape(source)}</h1>'
           f'<div class="stats">{_stat(quantized, "quantized tensors")}'
           f'{_stat(len(rows) - quantized, "with statistics only")}'
           f'{_stat(len(errors), "errors", "bad" if errors else "good")}'
           f'{_stat(len(findings) - len(errors), "warnings", "warn" if len(findings) > len(errors) else "good")}'
           f'</div>{"".join(f"<p class=note>{escape(n)}</p>" for n in notes)}</header><main>')
    if loose:
        yield (f'<section class="panel" id="model-findings"><h2>Model findings</h2>'
               f'<p class="muted">Findings that name no tensor listed below.</p>{_findings(loose)}</section>')
    linked = set(carded)
    if len(carded) < len(rows):
        order = sorted(carded, key=lambda k: _priority(k, per_row, estimates))
        yield from _summary(rows, per_row, estimates, linked, order, f"Tensors that need a look ({len(order)})")
        yield from _summary(rows, per_row, estimates, linked, range(len(rows)), f"All {len(rows)} tensors",
                            folded=True)
    else:
        yield from _summary(rows, per_row, estimates, linked, range(len(rows)), "Tensors")
    yield f'<p class="definitions">{DEFINITIONS}</p>'
    for k in carded:
        yield _card(k, rows[k], per_row[k], judged[k])
    yield ('</main><footer>Generated by <code>onnx-qtypes show --format html</code>. '
           'Self-contained: no scripts, no network.</footer></body></html>\n')


def _priority(k: int, per_row: list[list[Diagnostic]], estimates: list[RangeError | None]) -> tuple:
    found = per_row[k]
    severity = 0 if any(d.severity is Severity.ERROR for d in found) else 1 if found else 2
    estimate = estimates[k]
    clipped = estimate.clipped if estimate is not None else 0.0
    sqnr = estimate.sqnr_db if estimate is not None and estimate.sqnr_db is not None else math.inf
    return severity, -clipped, sqnr, k


def _carded(rows: Sequence[dict[str, Any]], per_row: list[list[Diagnostic]],
            estimates: list[RangeError | None]) -> list[int]:
    """The rows that get a card, in model order: all of them, or the CARDS that need a look most."""
    if len(rows) <= CARDS:
        return list(range(len(rows)))
    return sorted(sorted(range(len(rows)), key=lambda k: _priority(k, per_row, estimates))[:CARDS])


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _stat(value: int, label: str, tone: str = "") -> str:
    return f'<div class="stat {tone}"><span class="value">{value}</span><span class="label">{label}</span></div>'


def _error(row: dict[str, Any]) -> tuple[RangeError | None, str]:
    qtype: QType | None = row["qtype"]
    if qtype is None:
        return None, "not quantized"
    stored = row["statistics"]
    # a per-tensor estimate reads the whole-tensor histogram only: the per-slice statistics stay encoded
    stats = None if stored is None else stored.whole() if len(qtype.scale) <= 1 else stored.decode()
    return tensor_error(qtype, stats, row.get("relu_only", False))


def _summary(rows: Sequence[dict[str, Any]], per_row: list[list[Diagnostic]], estimates: list[RangeError | None],
             linked: set[int], order: Sequence[int], title: str, folded: bool = False) -> Iterator[str]:
    if not rows:
        yield '<section class="panel"><p class="muted">No quantized tensors and no statistics.</p></section>'
        return
    head = f"<h2>{escape(title)}</h2>"
    if folded:
        head = f'<details class="all-tensors"><summary><h2>{escape(title)}</h2></summary>'
    yield (f'<section class="panel">{head}<div class="scroll"><table class="summary"><thead><tr>'
           '<th>Tensor</th><th>Type</th><th>Granularity</th><th class="num">Scale</th><th class="num">Zero point</th>'
           '<th class="num">Clipped</th><th class="num">SQNR</th><th class="num">Findings</th></tr></thead><tbody>')
    for k in order:
        row = rows[k]
        qtype: QType | None = row["qtype"]
        estimate = estimates[k]
        found = per_row[k]
        worst = "bad" if any(d.severity is Severity.ERROR for d in found) else "warn" if found else "none"
        name = f'<a href="#t{k}">{_name(row)}</a>' if k in linked else _name(row)
        yield (f'<tr><td>{name}</td>'
               f'<td>{_type(qtype)}</td><td>{_granularity(qtype)}</td>'
               f'<td class="num">{_values(qtype.scale) if qtype else "–"}</td>'
               f'<td class="num">{_values(qtype.zero_point) if qtype else "–"}</td>'
               f'<td class="num">{_clipped(estimate)}</td><td class="num">{_sqnr(estimate)}</td>'
               f'<td class="num"><span class="count {worst}">{len(found)}</span></td></tr>')
    yield "</tbody></table></div>" + ("</details>" if folded else "") + "</section>"


def _name(row: dict[str, Any]) -> str:
    name = escape(row["tensor"])
    if row["function"] is not None:
        name += f' <span class="muted">in {escape(row["function"])}</span>'
    return name


def _type(qtype: QType | None) -> str:
    return "float (statistics)" if qtype is None else f"{escape(qtype.storage)} → {escape(qtype.expressed)}"


def _granularity(qtype: QType | None) -> str:
    if qtype is None:
        return "–"
    if qtype.is_dynamic:
        return "dynamic"
    text = qtype.granularity
    if qtype.axis is not None:
        text += f", axis {qtype.axis}" + (f", block {qtype.block_size}" if qtype.block_size is not None else "")
    return escape(text)


def _values(values: Sequence[float | int]) -> str:
    if not values:
        return "–"
    if len(values) == 1:
        return _number(values[0])
    finite = [v for v in values if math.isfinite(v)]
    if finite and min(finite) == max(finite) and len(finite) == len(values):
        return f"{_number(finite[0])} <span class=muted>×{len(values)}</span>"
    span = f"{_number(min(finite))} … {_number(max(finite))}" if finite else "non-finite"
    return f"{span} <span class=muted>({len(values)})</span>"


def _number(value: float | int) -> str:
    return str(value) if isinstance(value, int) else num(value)


def _clipped(estimate: RangeError | None) -> str:
    if estimate is None:
        return '<span class="muted">–</span>'
    tone = "bad" if estimate.clipped > 0.01 else "warn" if estimate.clipped > 0.001 else ""
    return f'<span class="{tone}">{estimate.clipped * 100:.3g}%</span>'


def _sqnr(estimate: RangeError | None) -> str:
    value = None if estimate is None else estimate.sqnr_db
    if value is None:
        return '<span class="muted">–</span>'
    return "∞" if math.isinf(value) else f"{value:.1f} dB"


def _card(k: int, row: dict[str, Any], found: list[Diagnostic], judged: tuple[RangeError | None, str]) -> str:
    qtype: QType | None = row["qtype"]
    stats: TensorStatistics | None = row["statistics"].decode() if row["statistics"] is not None else None
    kind = "card" + (" has-errors" if any(d.severity is Severity.ERROR for d in found) else "")
    chips = [f'<span class="chip">{_type(qtype)}</span>']
    if qtype is not None:
        chips += [f'<span class="chip">{_granularity(qtype)}</span>',
                  f'<span class="chip">{escape(qtype.schema.name.lower())}</span>']
    out = [f'<section class="{kind}" id="t{k}"><div class="card-head"><h3>{_name(row)}</h3>'
           f'<div class="chips">{"".join(chips)}</div></div><div class="card-body"><div class="facts">']
    out.append(_facts(row, stats, judged))
    out.append('</div><div class="charts">')
    out.append(_histogram(row, stats))
    if qtype is not None and len(qtype.scale) > 1:
        out.append(_channels(qtype, stats, found, row.get("relu_only", False)))
    out.append("</div></div>")
    if found:
        out.append(f'<div class="card-findings"><h4>Findings</h4>{_findings(found)}</div>')
    out.append("</section>")
    return "".join(out)


def _facts(row: dict[str, Any], stats: TensorStatistics | None, judged: tuple[RangeError | None, str]) -> str:
    qtype: QType | None = row["qtype"]
    items: list[tuple[str, str]] = []
    shape = row["shape"]
    dims = "?" if shape is None else "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
    items.append(("shape", dims))
    if qtype is not None:
        items.append(("storage", f"{escape(qtype.storage)} [{qtype.storage_min}, {qtype.storage_max}]"))
        items.append(("expressed", escape(qtype.expressed)))
        items.append(("schema", escape(qtype.schema.name.lower())))
        scale = _values(qtype.scale) + (f' <span class="muted">in {escape(qtype.scale_tensor)}</span>'
                                        if qtype.scale_tensor else "")
        items.append(("scale", scale))
        items.append(("zero point", _values(qtype.zero_point)))
        spans = ranges(qtype)
        if spans is not None:
            lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
            items.append(("range", f"[{num(lo)}, {num(hi)}]" + (" <span class=muted>(widest channel)</span>"
                                                                 if len(spans) > 1 else "")))
        estimate, how = judged
        if row.get("relu_only"):
            items.append(("read by", "Relu only: values below the range become 0 either way, not counted as "
                                     "clipped"))
        if estimate is not None:
            items.append(("clipped", _clipped(estimate)))
            items.append(("MSE", f"{num(estimate.mse)} <span class=muted>(RMSE {num(math.sqrt(estimate.mse))})</span>"))
            items.append(("SQNR", _sqnr(estimate)))
            items.append(("estimated from", escape(how)))
        else:
            items.append(("error", f'<span class="muted">not estimated: {escape(how)}</span>'))
    if stats is not None:
        items.extend(_statistics_facts(stats))
    places = ", ".join(f"<code>{escape(p)}</code>" for p in row["declared_at"][:3])
    more = len(row["declared_at"]) - 3
    items.append(("declared at", places + (f' <span class="muted">+{more}</span>' if more > 0 else "")))
    return "<dl>" + "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in items) + "</dl>"


def _statistics_facts(stats: TensorStatistics) -> list[tuple[str, str]]:
    items = []
    s = stats.tensor
    if s is not None:
        parts = [f"{n} {num(getattr(s, n))}" for n in ("min", "max", "mean", "std") if getattr(s, n) is not None]
        if s.count is not None:
            parts.append(f"count {s.count}")
        if parts:
            items.append(("statistics", ", ".join(parts)))
    if stats.per_axis:
        items.append(("per-axis", f"{len(stats.per_axis)} slices along axis {stats.axis}"))
    if stats.method:
        items.append(("method", escape(stats.method)))
    return items


def _histogram(row: dict[str, Any], stats: TensorStatistics | None) -> str:
    qtype: QType | None = row["qtype"]
    h, origin = displayed_histogram(stats)
    if h is None:
        why = "parameters only: no statistics" if stats is None else f"parameters and statistics only: {origin}"
        return f'<div class="chart empty">{escape(why)}</div>'
    spans = ranges(qtype) if qtype is not None else None
    s: Statistics | None = stats.tensor if stats is not None else None
    observed = (s.min, s.max) if s is not None else (None, None)
    keys = [("bin", "values")]
    if spans:
        keys.append(("range", "representable range" if len(spans) == 1 else "range of every channel"))
        if len(spans) > 1:
            keys += [("range-some", "range of some channels"), ("partly", "outside some channels' range")]
        keys.append(("clipped", "clipped"))
    items = "".join(f'<span class="item"><span class="key {k}"></span>{text}</span>' for k, text in keys)
    drawn = [count for _, _, count, _ in histogram_bars(h, spans, row.get("relu_only", False))]
    peak, group = scale_peak(drawn), bar_group(h)
    tallest = f"tallest {max(drawn)}" + (f"; bars above {int(peak)} cut, dashed" if peak < max(drawn) else "")
    bins = f"{len(h.counts)} bins" + (f", up to {group} adjacent ones a bar" if group > 1 else "")
    legend = (f'<div class="legend">{items}<span class="item muted">{bins} ({tallest}), '
              f'{escape(origin)}</span></div>')
    return f'<div class="chart">{histogram_svg(h, spans, observed, row.get("relu_only", False))}{legend}</div>'


def _channels(qtype: QType, stats: TensorStatistics | None, found: list[Diagnostic], relu_only: bool = False) -> str:
    """Scale (and zero point when they differ) per channel, then a table of the channels, long ones folded."""
    unit = "block" if qtype.block_size is not None else "channel"
    named = {int(part) for d in found for part in _scale_index(d.location.pointer)}
    flags = [i in named for i in range(len(qtype.scale))]
    out = ['<div class="chart">', channel_svg(qtype.scale, "scale", flags, unit)]
    if len(set(qtype.zero_point)) > 1:
        out.append(channel_svg([float(z) for z in qtype.zero_point], "zero point", unit=unit))
    out.append("</div>")
    per_axis = [histogram(s) for s in stats.per_axis] if stats is not None else []
    spans = ranges(qtype)
    errors: list[RangeError | None] = [None] * len(qtype.scale)
    if spans and qtype.block_size is None and len(per_axis) == len(spans):
        errors = [range_error(h, lo, hi, sc, relu_only) if h is not None else None
                  for h, (lo, hi), sc in zip(per_axis, spans, qtype.scale)]
    rows = []
    zps = qtype.zero_point or (0,) * len(qtype.scale)
    for i, (sc, zp) in enumerate(zip(qtype.scale[:TABLE_ROWS], zps)):
        span = f"[{num(spans[i][0])}, {num(spans[i][1])}]" if spans else "–"
        flagged = ' class="flagged"' if flags[i] else ""
        rows.append(f"<tr{flagged}><td class=num>{i}</td><td class=num>{num(sc)}</td><td class=num>{zp}</td>"
                    f"<td class=num>{span}</td><td class=num>{_clipped(errors[i])}</td>"
                    f"<td class=num>{_sqnr(errors[i])}</td></tr>")
    head = (f'<table class="channels-table"><thead><tr><th class=num>{unit}</th><th class=num>scale</th>'
            f'<th class=num>zero point</th><th class=num>range</th><th class=num>clipped</th>'
            f'<th class=num>SQNR</th></tr></thead><tbody>')
    shown = "".join(rows[:CHANNEL_ROWS])
    table = head + shown + "</tbody></table>"
    if len(rows) > CHANNEL_ROWS:
        table += (f"<details><summary>{len(rows) - CHANNEL_ROWS} more {unit}s</summary>{head}"
                  f"{''.join(rows[CHANNEL_ROWS:])}</tbody></table></details>")
    if len(qtype.scale) > TABLE_ROWS:
        table += (f'<p class="muted">The first {TABLE_ROWS} of {len(qtype.scale)} {unit}s; '
                  "<code>show --format json</code> lists every one.</p>")
    out.append(f'<details class="per-channel"><summary>Per-{unit} parameters ({len(qtype.scale)})</summary>'
               f"{table}</details>")
    return "".join(out)


def _scale_index(pointer: str) -> list[str]:
    """The channel a finding's pointer names (``.../quantization/scale/3``, ``.../statistics/per_axis/3``)."""
    for marker in ("/quantization/scale/", "/quantization/zero_point/", "/statistics/per_axis/"):
        if marker in pointer:
            tail = pointer.split(marker, 1)[1].split("/", 1)[0]
            return [tail] if tail.isdigit() else []
    return []


def _findings(found: Sequence[Diagnostic]) -> str:
    items = []
    for d in sorted(found, key=lambda d: -d.severity.rank):
        where = ", ".join(filter(None, [d.location.describe(), f"at {d.location.pointer}"]))
        items.append(f'<li class="finding {d.severity.value}"><span class="badge {d.severity.value}">'
                     f'{escape(d.severity.value)}</span> <span class="rule">{escape(d.rule)} {escape(d.name)}</span>'
                     f'<div class="message">{escape(d.message)}</div><div class="where">{escape(where)}</div></li>')
    return '<ul class="findings">' + "".join(items) + "</ul>"
