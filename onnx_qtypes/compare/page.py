"""A comparison as one self-contained HTML page, in the report page's style (``onnx_qtypes.report.style``).

Every string from the model or the backend goes through ``escape``; nothing is loaded from anywhere and
there is no script.
"""

from __future__ import annotations

from html import escape

from onnx_qtypes.report.style import CSS

from .comparison import BEYOND, NO_BOUND, NOT_OBSERVED, Comparison
from .render import HEADINGS, NUMERIC, cells, headline, input_text

DEFINITIONS = (
    "<b>Deviation</b>: the largest distance between the backend's and the reference's values of the tensor, in "
    "its <b>unit</b>: <i>steps</i> of its storage type for a quantized tensor (a dynamic one dequantized with the "
    "parameters each side bound, in steps of the reference's scale), <i>real</i> for a float tensor (the "
    "difference of the values), <i>value</i> for another output (1 where they differ). <b>Tolerance</b>: how far "
    "they may be apart: the operator's own step (0 for copies and QuantizeLinear, 1 for an operator that computes "
    "a new real value; proposal/spec/semantics.md#tolerance-table), plus what the deviations of that node's "
    "inputs may grow into (proposal/spec/semantics.md#chains); a float value also its expressed type's rounding "
    "(proposal/spec/semantics.md#float-values); <i>no bound</i> where the rule gives none, and a tensor that "
    "deviates there is not judged. <b>Beyond</b>: elements further apart than the tolerance. Rows are in the "
    "model's node order, so the first row beyond its tolerance is where the backend departs."
)


def _stat(value: object, label: str, tone: str = "") -> str:
    return (f'<div class="stat {tone}"><span class="value">{escape(str(value))}</span>'
            f'<span class="label">{escape(label)}</span></div>')


def _table(result: Comparison) -> str:
    head = "".join(f'<th{" class=num" if i in NUMERIC else ""}>{escape(h)}</th>' for i, h in enumerate(HEADINGS))
    body = []
    first = result.first
    for row in result.rows:
        values = cells(row)
        tds = []
        for i, value in enumerate(values):
            text = f"<code>{escape(value)}</code>" if i == 0 else escape(value)
            if i == NUMERIC[0] and row.status == BEYOND:
                text = f'<span class="bad">{text}</span>'
            tds.append(f'<td{" class=num" if i in NUMERIC else ""}>{text}</td>')
        mark = ' id="first" class="flagged"' if row is first else (' class="flagged"' if row.status == BEYOND else "")
        title = escape(row.reason + (f"; {row.note}" if row.note else ""), quote=True)
        body.append(f'<tr{mark} title="{title}">{"".join(tds)}</tr>')
    return (f'<section class="panel"><h2>Every tensor compared</h2><div class="scroll"><table class="summary">'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div></section>')


def _first(result: Comparison) -> str:
    first = result.first
    if first is None:
        return f'<section class="panel"><h2>Result</h2><p>{escape(headline(result))}</p></section>'
    inputs = "".join(f"<li><code>{escape(input_text(s))}</code></li>" for s in first.inputs)
    return (f'<section class="panel"><h2>First departure</h2><p><span class="bad">{escape(headline(result))}</span></p>'
            f'<p class="muted">Tolerance: {escape(first.reason)}</p><h4>Its inputs</h4><ul>{inputs}</ul></section>')


def _notes(result: Comparison) -> str:
    notes = [f"{r.tensor}: {r.note}" for r in result.rows if r.status in (NOT_OBSERVED, NO_BOUND)] + list(result.notes)
    if not notes:
        return ""
    return (f'<section class="panel"><h2>Notes</h2><ul>{"".join(f"<li>{escape(n)}</li>" for n in notes)}'
            f"</ul></section>")


def render_html(result: Comparison) -> str:
    beyond = sum(r.status == BEYOND for r in result.rows)
    unseen = sum(r.status == NOT_OBSERVED for r in result.rows)
    unjudged = sum(r.status == NO_BOUND for r in result.rows)
    label = f"{result.backend} {result.backend_version}".strip()
    head = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>compare {escape(label)} · onnx-qtypes</title><style>{CSS}</style></head><body>")
    how = [f"Backend: {label}, against the reference (definitional kernels).",
           f"Inputs: {' '.join(result.feeds_how)}", f"Backend values: {result.how} ({result.runs} run(s))."]
    header = (f'<header><div class="brand">onnx-qtypes compare</div><h1>{escape(result.model)}</h1>'
              f'<div class="stats">{_stat(len(result.rows) - unseen, "tensors compared")}'
              f'{_stat(beyond, "beyond tolerance", "bad" if beyond else "good")}'
              f'{_stat(unseen, "not observed", "warn" if unseen else "good")}'
              f'{_stat(unjudged, "not judged (no bound)", "warn" if unjudged else "good")}</div>'
              f'{"".join(f"<p class=note>{escape(n)}</p>" for n in how)}</header>')
    return "".join([head, header, "<main>", _first(result), _table(result),
                    f'<p class="definitions">{DEFINITIONS}</p>', _notes(result),
                    "</main><footer>Generated by <code>onnx-qtypes compare --format html</code>. "
                    "Self-contained: no scripts, no network.</footer></body></html>\n"])


__all__ = ["render_html"]
