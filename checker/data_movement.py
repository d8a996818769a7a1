"""Data-movement ops: which type their output must have, given their input's.

A data-movement op copies stored values without computing on them, so its
output keeps the input's parameters. Per-axis parameters follow their axis:
Transpose moves it, Reshape-like ops keep it when the axis survives intact
(same size, same number of elements before it), and ops that select along
the axis (Slice, Gather, Split, Concat) select the parameters with the data.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from onnx_qtypes.checker.context import Context, NodeRef, derived
from onnx_qtypes.proto.data_movement import DATA_MOVEMENT, moves_data
from onnx_qtypes.proto.qtype import QType

RESHAPES = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze"})


@dataclasses.dataclass(frozen=True)
class Expectation:
    """What the output type must be: ``qtype``, or ``impossible`` (why), or neither (cannot tell)."""

    qtype: QType | None = None
    impossible: str | None = None


UNKNOWN = Expectation()


def is_data_movement(ref: NodeRef) -> bool:
    """A default-domain data-movement node with its data input and an output (a node missing them is the
    schema's error, QT310's to report)."""
    return (ref.is_onnx and bool(ref.inputs) and bool(ref.outputs) and bool(ref.outputs[0])
            and moves_data(ref.op_type, ref.attr("mode", b"nearest")))


def data_indices(ref: NodeRef, kind: str) -> list[int]:
    spec = DATA_MOVEMENT[ref.op_type][0 if kind == "input" else 1]
    names = ref.inputs if kind == "input" else ref.outputs
    indices = range(len(names)) if spec is None else spec
    return [i for i in indices if i < len(names) and names[i]]


def _same(qt: QType, **changes: object) -> Expectation:
    return Expectation(derived(qt, **changes))


def _reshaped_axis(before: tuple, after: tuple, axis: int) -> int | None | str:
    """The output axis carrying input ``axis`` intact, None when it does not survive, "?" when unknown."""
    if None in before[: axis + 1]:
        return "?"
    prefix = math.prod(before[:axis])
    for j, size in enumerate(after):
        if None in after[: j + 1]:
            return "?"
        if math.prod(after[:j]) == prefix and size == before[axis]:
            return j
        if math.prod(after[:j]) > prefix:
            break
    return None


def _select(qt: QType, index: range | np.ndarray, axis: int) -> Expectation:
    """The parameters of the selected slices (indices into the parameters), in order."""
    count = len(qt.scale)
    if len(qt.zero_point) != count:
        return UNKNOWN
    if isinstance(index, range):  # Slice, Split: a slice of the tuples, however many parameters
        if index and not (0 <= min(index[0], index[-1]) and max(index[0], index[-1]) < count):
            return UNKNOWN
        part = slice(index.start, None if index.stop < 0 else index.stop, index.step) if index else slice(0)
        return _same(qt, axis=axis, scale=qt.scale[part], zero_point=qt.zero_point[part])
    if index.size and not (0 <= index.min() and index.max() < count):
        return UNKNOWN
    scales = tuple(np.asarray(qt.scale, np.float64)[index].tolist())  # Gather: one vector selection
    zero_points = tuple(np.asarray(qt.zero_point, np.int64)[index].tolist())
    return _same(qt, axis=axis, scale=scales, zero_point=zero_points)


def _slice_indices(ctx: Context, ref: NodeRef, axis: int, dim: int) -> range | None:
    inputs = list(ref.inputs) + [""] * 5
    values = [ctx.constant_array(ref.scope, n) if n else None for n in inputs[1:5]]
    starts, ends, axes, steps = values
    if starts is None or ends is None or (inputs[3] and axes is None) or (inputs[4] and steps is None):
        return None
    if any(v is not None and (v.ndim != 1 or v.dtype.kind not in "iu") for v in values):
        return None  # not 1-D integer lists: the node's own error (QT310), no slice to follow
    rank = len(ctx.shape(ref.scope, ref.inputs[0]) or ())
    axes_list = [int(a) + rank if a < 0 else int(a) for a in (axes if axes is not None else range(len(starts)))]
    if axis not in axes_list:
        return range(dim)
    k = axes_list.index(axis)
    if not k < min(len(starts), len(ends), len(steps) if steps is not None else k + 1):
        return None  # lists of different lengths: the node's own error
    step = int(steps[k]) if steps is not None else 1
    return range(dim)[slice(int(starts[k]), int(ends[k]), step)] if step else None


def expect(ctx: Context, ref: NodeRef, qt: QType, out_index: int) -> Expectation:
    """The type output ``out_index`` must have when data input 0 has type ``qt``."""
    if qt.axis is None or qt.axis < 0:
        return _same(qt)
    scope, op = ref.scope, ref.op_type
    source = ref.inputs[0]
    before = ctx.shape(scope, source)
    after = ctx.shape(scope, ref.outputs[out_index])
    axis = qt.axis
    if op == "Identity":
        return _same(qt)
    if before is not None and axis >= len(before):
        return UNKNOWN  # QT108
    if qt.block_size is not None:
        return _same(qt) if before is not None and before == after and None not in before else UNKNOWN
    if op == "Transpose":
        rank = len(before) if before is not None else None
        perm = ref.attr("perm", []) or (list(reversed(range(rank))) if rank is not None else None)
        if perm is None or axis not in perm:
            return UNKNOWN
        return _same(qt, axis=list(perm).index(axis))
    if before is None or after is None:
        return UNKNOWN
    if op in RESHAPES:
        moved = _reshaped_axis(before, after, axis)
        if moved == "?":
            return UNKNOWN
        if moved is None:
            return Expectation(impossible=f"{op} from {list(before)} to {list(after)} splits or merges axis {axis}")
        return _same(qt, axis=moved)
    if op == "Gather":
        return _gather(ctx, ref, qt, before)
    if op == "GatherND" or (op in ("ReduceMax", "ReduceMin") and not ref.attr("keepdims", 1)):
        return UNKNOWN  # axes drop out or mix: where a per-axis parameter lands is not a position rule
    if op == "GatherElements" and _norm(int(ref.attr("axis", 0)), len(before)) == axis:
        return UNKNOWN  # each output element picks its own position along the parameters' axis
    offset = len(after) - len(before)  # Expand may prepend dimensions
    out_axis = axis + max(offset, 0)
    if out_axis >= len(after):
        return UNKNOWN
    if op == "Slice" and before[axis] == after[out_axis] == len(qt.scale) and before[axis] is not None:
        index = _slice_indices(ctx, ref, axis, before[axis])  # as many slices, maybe in another order (step < 0)
        if index is not None:
            return _select(qt, index, axis)
    if before[axis] is not None and before[axis] == after[out_axis]:
        return _same(qt, axis=out_axis)
    if before[axis] is None or after[out_axis] is None or before[axis] != len(qt.scale):
        return UNKNOWN  # selections index the parameters: only when they fit the data (QT107 reports otherwise)
    if op == "Slice":
        index = _slice_indices(ctx, ref, axis, before[axis])
        return UNKNOWN if index is None else _select(qt, index, axis)
    if op == "Split" and _norm(ref.attr("axis", 0), len(before)) == axis:
        start = sum((ctx.shape(scope, n) or (0,) * (axis + 1))[axis] or 0 for n in ref.outputs[:out_index])
        return _select(qt, range(start, min(start + after[axis], len(qt.scale) + 1)), axis)
    return Expectation(
        impossible=f"{op} changes dimension {axis} from {before[axis]} to {after[out_axis]}, "
        f"so the {len(qt.scale)} per-axis parameters along it cannot follow"
    )


def _norm(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _gather(ctx: Context, ref: NodeRef, qt: QType, before: tuple) -> Expectation:
    gather_axis = _norm(int(ref.attr("axis", 0)), len(before))
    indices_shape = ctx.shape(ref.scope, ref.inputs[1]) if len(ref.inputs) > 1 else None
    if indices_shape is None:
        return UNKNOWN
    if qt.axis < gather_axis:
        return _same(qt)
    if qt.axis > gather_axis:
        return _same(qt, axis=qt.axis + len(indices_shape) - 1)
    indices = ctx.constant_array(ref.scope, ref.inputs[1])
    if indices is None or indices.ndim > 1 or before[qt.axis] != len(qt.scale):
        return UNKNOWN
    dim = before[qt.axis]
    picked = np.atleast_1d(indices).astype(np.int64)
    picked = np.where(picked < 0, picked + dim, picked)
    if picked.size and not (0 <= picked.min() and picked.max() < dim):
        return UNKNOWN  # out-of-range indices are the op's own error
    if indices.ndim == 0:
        first = int(picked[0])
        return _same(qt, axis=None, scale=(qt.scale[first],), zero_point=(qt.zero_point[first],))
    return _select(qt, picked, qt.axis)


def expect_concat(ctx: Context, ref: NodeRef, inputs: list[QType], out: QType) -> Expectation:
    """The output type of a Concat whose data inputs all have (the listed) types."""
    rank = len(ctx.shape(ref.scope, ref.outputs[0]) or ()) or None
    axis = _norm(int(ref.attr("axis", 0)), rank) if rank else None
    if out.axis is None or axis is None or out.axis != axis:
        return UNKNOWN  # each input is compared with the output instead
    scales: list[float] = []
    zero_points: list[int] = []
    for name, qt in zip(ref.inputs, inputs):
        shape = ctx.shape(ref.scope, name)
        if shape is None or shape[axis] is None:
            return UNKNOWN
        if qt.axis is None:
            if not qt.scale or shape[axis] > len(out.scale):
                return UNKNOWN
            scales += [qt.scale[0]] * shape[axis]
            zero_points += [qt.zero_point[0]] * shape[axis]
        elif qt.axis == axis:
            scales += qt.scale
            zero_points += qt.zero_point
        else:
            return UNKNOWN
    return _same(inputs[0], axis=axis, scale=tuple(scales), zero_point=tuple(zero_points))
