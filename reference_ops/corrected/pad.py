"""Pad with negative pads: ONNX's `pads` give "the number of padding elements to add or remove (if negative)";
onnx.reference hands them to numpy.pad, which refuses negative widths. The removal is a crop before padding
(onnxruntime's order); the rest is onnx.reference's own Pad. ONNX does not say what `reflect` adds beyond
the axis's length - 1 elements, nor what `reflect`, `edge` or `wrap` add to an empty axis (numpy repeats or
fails; onnxruntime refuses): refused."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected import _budget
from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused

FIRST_PADS_INPUT = 11


class Pad(Corrected):
    def _run(self, data: Any, *inputs: Any, **attributes: Any) -> tuple:
        data = np.asarray(data)
        if self.opset >= FIRST_PADS_INPUT:
            pads_at, pads = "input", (np.asarray(inputs[0]) if inputs else None)
        else:
            pads_at = "pads" if attributes.get("pads") is not None else "paddings"
            pads = attributes.get(pads_at)
        if pads is None:
            raise Refused("Pad without pads")
        pads = [int(p) for p in np.asarray(pads).reshape(-1)]
        axes_input = inputs[2] if self.opset >= FIRST_PADS_INPUT and len(inputs) > 2 else None
        rank = data.ndim
        axes = list(range(rank)) if axes_input is None else [int(a) % rank for a in np.asarray(axes_input).reshape(-1)]
        if len(pads) != 2 * len(axes):
            raise Refused(f"Pad takes {2 * len(axes)} pads (begin and end per axis), got {len(pads)}")
        crop = [slice(None)] * rank
        for i, axis in enumerate(axes):
            begin, end = pads[i], pads[len(axes) + i]
            crop[axis] = slice(max(-begin, 0), max(data.shape[axis] - max(-end, 0), 0))
        cropped = data[tuple(crop)]
        mode = attributes.get("mode") or "constant"
        mode = mode.decode() if isinstance(mode, bytes) else mode
        for i, axis in enumerate(axes):
            widest, size = max(pads[i], pads[len(axes) + i]), cropped.shape[axis]
            if mode != "constant" and widest > 0 and (size == 0 or (mode == "reflect" and widest > size - 1)):
                raise Refused(f"Pad mode {mode!r} adds {widest} elements to axis {axis} of {size} (after "
                              "negative pads); ONNX does not define that")
        grown = list(cropped.shape)
        for i, axis in enumerate(axes):
            grown[axis] += max(pads[i], 0) + max(pads[len(axes) + i], 0)
        _budget.require_fits("Pad", grown, data.dtype)
        if min(pads, default=0) >= 0:
            return self.stock_run(data, *inputs, **attributes)
        kept = np.maximum(pads, 0)
        if pads_at == "input":
            return self.stock_run(cropped, kept.astype(np.int64), *inputs[1:], **attributes)
        return self.stock_run(cropped, *inputs, **{**attributes, pads_at: [int(p) for p in kept]})
