"""Slice with ONNX's clamping: a negative start / end counts from the end; then, for a positive step, start and
end are clamped to [0, dim]; for a negative step, start to [0, dim - 1] and end to [-1, dim - 1], where -1 means
"before the first element". onnx.reference hands the clamped -1 to numpy, which reads it as the last element:
x[5, 5, 1] sliced on its last axis with starts = ends = -2, steps = -2 gives 0 elements where ONNX gives 1."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused


class Slice(Corrected):
    def _run(self, data: Any, starts: Any = None, ends: Any = None, axes: Any = None, steps: Any = None,
             **_: Any) -> tuple:
        data = np.asarray(data)
        rank = data.ndim
        starts = [int(v) for v in np.asarray(starts).reshape(-1)]
        ends = [int(v) for v in np.asarray(ends).reshape(-1)]
        axes = list(range(len(starts))) if axes is None else [int(v) for v in np.asarray(axes).reshape(-1)]
        steps = [1] * len(starts) if steps is None or self.opset < 10 else [int(v) for v in np.asarray(steps).reshape(-1)]
        if not len(starts) == len(ends) == len(axes) == len(steps):
            raise Refused(f"Slice takes starts, ends, axes and steps of one length, got {len(starts)}, {len(ends)}, "
                          f"{len(axes)}, {len(steps)}")
        index = [slice(None)] * rank
        seen = set()
        for start, end, axis, step in zip(starts, ends, axes, steps):
            if not -rank <= axis < rank or axis % max(rank, 1) in seen:
                raise Refused(f"Slice axis {axis} is outside [-{rank}, {rank - 1}] or repeated")
            if step == 0:
                raise Refused("Slice step 0")
            axis %= rank
            seen.add(axis)
            dim = data.shape[axis]
            start = start + dim if start < 0 else start
            end = end + dim if end < 0 else end
            if step > 0:
                start, end = min(max(start, 0), dim), min(max(end, 0), dim)
            else:
                start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
            index[axis] = slice(start, None if end < 0 else end, step)
        return (data[tuple(index)],)
