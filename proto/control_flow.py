"""Where If, Loop and Scan hand a value across a subgraph boundary without arithmetic.

A branch output becomes the If's output; a Loop-carried value goes from the
Loop's input to the body's input, from the body's output to the next
iteration's input and finally to the Loop's output; Scan does the same for
its state and slices / stacks its scan inputs and outputs. No operator runs
there that could requantize, so the two tensors of each crossing must have
one quantized type (StableHLO's `if`, `case` and `while` require the same of
their branch, body and result types). Stacking per-iteration values adds an
axis, which moves a per-axis type's axis by one.

The checker (QT312) and the ReferenceEvaluator both read ``crossings``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import onnx

from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS
from onnx_qtypes.proto.qtype import QType

CONTROL_FLOW = ("If", "Loop", "Scan")


@dataclasses.dataclass(frozen=True)
class Crossing:
    """Tensor ``inner`` reaches tensor ``outer`` unchanged (``outer`` with an axis inserted at ``stacked``)."""

    inner: str
    outer: str
    what: str  # e.g. "then_branch output 0 -> output 0"
    port: tuple[str, int] | None  # the node's ("input" | "output", index) holding ``outer``, if it is one
    stacked: int | None = None  # the axis of ``outer`` the iterations are stacked along (negative: from the end)


def _names(values: object) -> list[str]:
    return [v.name for v in values]  # type: ignore[attr-defined]


def _ints(node: onnx.NodeProto, name: str) -> list[int]:
    return next((list(a.ints) for a in node.attribute if a.name == name), [])


def crossings(node: onnx.NodeProto, opset: int) -> Iterator[Crossing]:
    """Every crossing of an If, Loop or Scan node of the default domain (none for any other node).

    Scan before opset 9 (a ``sequence_lens`` input and a batch axis) is not read: no crossing is reported.
    """
    if (node.domain not in STANDARD_DOMAINS or node.op_type not in CONTROL_FLOW
            or (node.op_type == "Scan" and opset < 9)):
        return
    graphs = {a.name: a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
    if node.op_type == "If":
        for branch in ("then_branch", "else_branch"):
            outs = _names(graphs[branch].output) if branch in graphs else []
            for k, (inner, outer) in enumerate(zip(outs, node.output)):
                if inner and outer:
                    yield Crossing(inner, outer, f"{branch} output {k} -> output {k}", ("output", k))
        return
    if "body" not in graphs:
        return
    body_in, body_out = _names(graphs["body"].input), _names(graphs["body"].output)
    if node.op_type == "Loop":  # inputs M, cond, v...; body (iter, cond, v...) -> (cond, v..., scan...)
        carried = max(len(node.input) - 2, 0)
        yield from _carried(node, carried, body_in, body_out, first_in=2, first_body_in=2, first_body_out=1)
        for j, (inner, outer) in enumerate(zip(body_out[1 + carried:], node.output[carried:])):
            if inner and outer:
                yield Crossing(inner, outer, f"body scan output {j} -> output {carried + j}", ("output", carried + j),
                               stacked=0)
        return
    scans = next((a.i for a in node.attribute if a.name == "num_scan_inputs"), 0)
    state = min(max(len(node.input) - scans, 0), len(node.input))  # a negative count (invalid) carries no more
    yield from _carried(node, state, body_in, body_out, first_in=0, first_body_in=0, first_body_out=0)
    in_axes, out_axes = _ints(node, "scan_input_axes"), _ints(node, "scan_output_axes")
    for j, (inner, outer) in enumerate(zip(body_in[state:], node.input[state:])):
        if inner and outer:
            axis = in_axes[j] if j < len(in_axes) else 0
            yield Crossing(inner, outer, f"scan input {state + j} -> body input {state + j} (one slice per iteration)",
                           ("input", state + j), stacked=axis)
    for j, (inner, outer) in enumerate(zip(body_out[state:], node.output[state:])):
        if inner and outer:
            axis = out_axes[j] if j < len(out_axes) else 0
            yield Crossing(inner, outer, f"body scan output {state + j} -> output {state + j}",
                           ("output", state + j), stacked=axis)


def _carried(node: onnx.NodeProto, count: int, body_in: list[str], body_out: list[str], *, first_in: int,
             first_body_in: int, first_body_out: int) -> Iterator[Crossing]:
    for k in range(count):
        outer_in = node.input[first_in + k] if first_in + k < len(node.input) else ""
        inner_in = body_in[first_body_in + k] if first_body_in + k < len(body_in) else ""
        inner_out = body_out[first_body_out + k] if first_body_out + k < len(body_out) else ""
        outer_out = node.output[k] if k < len(node.output) else ""
        if outer_in and inner_in:
            yield Crossing(inner_in, outer_in, f"carried value {k}: input {first_in + k} -> body input "
                           f"{first_body_in + k}", ("input", first_in + k))
        if inner_out and inner_in:
            yield Crossing(inner_in, inner_out, f"carried value {k}: body output {first_body_out + k} -> the next "
                           f"iteration's body input {first_body_in + k}", None)
        if inner_out and outer_out:
            yield Crossing(inner_out, outer_out, f"carried value {k}: body output {first_body_out + k} -> output {k}",
                           ("output", k))


def expected_outer(crossing: Crossing, inner: QType, outer_rank: int | None = None) -> QType | None:
    """The type ``crossing.outer`` must have given ``inner``'s; None when a stacking axis counted from the end
    meets an unknown rank."""
    stacked = crossing.stacked
    if stacked is None or inner.axis is None:
        return inner
    if stacked < 0:
        if outer_rank is None:
            return None
        stacked += outer_rank
    axis = inner.axis + 1 if inner.axis >= stacked else inner.axis
    return inner.replace(axis=axis, validate=False)


def crossing_problem(node: onnx.NodeProto, crossing: Crossing, inner: QType | None, outer: QType | None,
                     outer_rank: int | None = None) -> str | None:
    """Why the two types of ``crossing`` cannot both hold, or None (neither quantized, or consistent)."""
    if inner is None and outer is None:
        return None
    op = node.op_type
    if inner is None or outer is None:
        typed, plain = (crossing.inner, crossing.outer) if outer is None else (crossing.outer, crossing.inner)
        kind = inner if outer is None else outer
        return (f"{crossing.what}: {typed!r} is {kind} but {plain!r} is not quantized; {op} passes the stored values "
                f"across unchanged, so {plain!r} would read them as plain numbers: give it the same type")
    want = expected_outer(crossing, inner, outer_rank)
    if want is None or want == outer:
        return None
    moved = f" (the axis moved by the stacking along axis {crossing.stacked})" if want.axis != inner.axis else ""
    return (f"{crossing.what}: {crossing.outer!r} is {outer} but {crossing.inner!r} is {inner}; {op} passes the "
            f"stored values across unchanged, so {crossing.outer!r} must be {want}{moved}")


__all__ = ["CONTROL_FLOW", "Crossing", "crossing_problem", "crossings", "expected_outer"]
