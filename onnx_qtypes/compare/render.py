"""A comparison as text (a table with the first departure under it) or as one JSON object.

JSON: ``first`` (the first tensor beyond its tolerance, or null) and ``tensors`` (every compared tensor in node
order), each with ``tensor``, ``node``, ``op`` (as the user's file names them), ``status`` (ok / beyond / not
observed / no bound), ``unit`` (steps: storage steps; real: the difference of the values; value: exact
equality, 1 where they differ), ``max_deviation`` in that unit (null: not observed, or shapes differ),
``beyond`` and ``elements``, ``tolerance`` (in that unit, the largest over the elements; null where no bound
is known) with ``tolerance_reason``, and ``inputs`` (each input's state and deviation); ``summary`` counts them.
"""

from __future__ import annotations

import json
import math
from typing import Any

from onnx_qtypes.conformance.judging import steps_text as _steps

from .comparison import BEYOND, NO_BOUND, NOT_OBSERVED, REAL, STEPS, Comparison, InputState, Row

HEADINGS = ("tensor", "producer", "op", "unit", "deviation", "beyond", "tolerance")
NUMERIC = (4, 5, 6)


def steps_text(value: float | None, unit: str = STEPS) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "no bound"
    if unit == REAL:
        return "0" if value == 0 else f"{value:.3g}"
    return _steps(value)


def cells(row: Row) -> tuple[str, ...]:
    if row.status == NOT_OBSERVED:
        worst, beyond = "not observed", "-"
    else:
        worst = steps_text(row.deviation, row.unit) if row.deviation is not None else "shape differs"
        beyond = f"{row.beyond} of {row.total}"
    return row.tensor, row.node, row.op, row.unit, worst, beyond, steps_text(row.tolerance, row.unit)


def _amount(value: float | None, unit: str) -> str:
    return f"{steps_text(value, unit)} step(s)" if unit == STEPS else f"{steps_text(value, unit)} ({unit})"


def input_text(state: InputState) -> str:
    if state.state in ("within tolerance", "beyond tolerance"):
        return f"{state.name} {state.state} ({_amount(state.deviation, state.unit)})"
    if state.state in ("not observed", "not compared") and state.deviation is not None:
        return f"{state.name} {state.state} (taken at its tolerance, {_amount(state.deviation, state.unit)})"
    return f"{state.name} {state.state}"


def headline(result: Comparison) -> str:
    first = result.first
    if first is None:
        observed = [r for r in result.rows if r.status != NOT_OBSERVED]
        floats = sum(r.unit != STEPS for r in observed)
        unjudged = sum(r.status == NO_BOUND for r in result.rows)
        text = (f"no tensor beyond its tolerance: {len(observed)} of {len(result.rows)} tensor(s) compared "
                f"({len(observed) - floats} quantized, {floats} float or other) agree with the reference within it")
        if unjudged:
            text += (f"; {unjudged} deviate where the rule gives no bound, so are not judged (not an all-clear for "
                     "them)")
        return text
    if first.deviation is None:
        return f"first departure: {first.tensor}, written by {first.node} ({first.op}): {first.note}"
    return (f"first departure: {first.tensor}, written by {first.node} ({first.op}): {first.beyond} of "
            f"{first.total} element(s) beyond {_amount(first.tolerance, first.unit)}, at most "
            f"{_amount(first.deviation, first.unit)}")


def render_text(result: Comparison) -> str:
    version = f" {result.backend_version}" if result.backend_version else ""
    form = "typed model" if result.form == "typed" else "QDQ / QOperator file, compared through its lifted form"
    lines = [f"compare {result.model}: {result.backend}{version} against the reference (definitional kernels); {form}",
             "inputs: " + result.feeds_how[0], *result.feeds_how[1:],
             f"backend values: {result.how} ({result.runs} run(s))", ""]
    table = [HEADINGS, *(cells(r) for r in result.rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADINGS))]
    numeric = set(NUMERIC)
    first = result.first
    for k, row in enumerate(table):
        text = "  ".join(c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
        if k and first is not None and result.rows[k - 1] is first:
            text += "  <- first"
        lines.append(text.rstrip())
    lines.append("")
    lines.append(headline(result))
    if first is not None:
        lines.append("  its inputs: " + "; ".join(input_text(s) for s in first.inputs))
        lines.append(f"  tolerance: {first.reason}")
        if first.note and first.deviation is not None:  # (without a deviation, the headline is the note)
            lines.append(f"  note: {first.note}")
    lines.extend(f"note: {r.tensor}: {r.note}" for r in result.rows if r.status in (NOT_OBSERVED, NO_BOUND))
    lines.extend(f"note: {n}" for n in result.notes)
    return "\n".join(lines) + "\n"


def _number(value: float | None) -> Any:
    if value is None or math.isinf(value):
        return None
    return int(value) if float(value).is_integer() else value


def _row(row: Row) -> dict[str, Any]:
    return {"tensor": row.tensor, "node": row.node, "op": row.op, "status": row.status,
            "unit": row.unit, "max_deviation": _number(row.deviation), "beyond": row.beyond, "elements": row.total,
            "tolerance": _number(row.tolerance), "tolerance_reason": row.reason,
            "inputs": [{"name": s.name, "state": s.state, "deviation": _number(s.deviation), "unit": s.unit}
                       for s in row.inputs],
            **({"note": row.note} if row.note else {})}


def render_json(result: Comparison) -> str:
    first = result.first
    data = {"model": result.model, "backend": result.backend, "backend_version": result.backend_version,
            "form": result.form, "inputs": result.feeds_how, "backend_values": result.how, "runs": result.runs,
            "first": None if first is None else _row(first),
            "tensors": [_row(r) for r in result.rows], "notes": result.notes,
            "summary": {"compared": sum(r.status != NOT_OBSERVED for r in result.rows),
                        "beyond": sum(r.status == BEYOND for r in result.rows),
                        "not_observed": sum(r.status == NOT_OBSERVED for r in result.rows),
                        "no_bound": sum(r.status == NO_BOUND for r in result.rows)}}
    return json.dumps(data, indent=2) + "\n"
