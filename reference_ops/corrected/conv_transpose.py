"""ConvTranspose as ONNX's text defines it, computed directly: every input element times the kernel, added at
stride * i + dilation * k - pads_begin of the output; groups split the input channels (W is C x M/group x k...).

onnx.reference's ConvTranspose with group > 1 slices W by output channels and adds the whole bias B[0] to
every group: it fails ("could not broadcast"), or, in a depthwise transposed convolution with a bias
(one input and one output channel per group), adds B[0] to every channel without a word.

Output size per axis: output_shape if given (pads then follow from total_padding, the extra one at the end for
SAME_UPPER, at the beginning otherwise), input * stride for SAME_UPPER / SAME_LOWER, else
stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pads_begin - pads_end. A negative
total_padding (output_shape, or SAME with a stride above the kernel: an output longer than the values reach)
is refused: ONNX's pads are >= 0, its formula splits a negative total by an integer division whose rounding
it does not fix, and onnxruntime makes such outputs shorter than SAME's input * stride.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused


class ConvTranspose(Corrected):
    def _run(self, x: Any, w: Any, b: Any = None, **_: Any) -> tuple:
        x, w = np.asarray(x), np.asarray(w)
        spatial = x.ndim - 2
        group = int(getattr(self, "group", 1) or 1)
        if spatial < 1 or w.ndim != x.ndim or x.shape[1] != w.shape[0] or x.shape[1] % group:
            raise Refused(f"ConvTranspose takes X (N x C x D...) and W (C x M/group x k...) with C divisible by "
                          f"group {group}; got X {list(x.shape)}, W {list(w.shape)}")
        kernel = list(w.shape[2:])
        strides = list(self._ints("strides") or [1] * spatial)
        dilations = list(self._ints("dilations") or [1] * spatial)
        output_padding = list(self._ints("output_padding") or [0] * spatial)
        begin, end = self._pads(x.shape[2:], kernel, strides, dilations, output_padding)
        reach = [s * (n - 1) + (k - 1) * d + 1 + p
                 for n, k, s, d, p in zip(x.shape[2:], kernel, strides, dilations, output_padding)]
        n, c = x.shape[:2]
        m = w.shape[1] * group
        full = np.zeros((n, m, *reach), np.float64)
        cg, mg = c // group, m // group
        for g in range(group):
            xs, ws = x[:, g * cg:(g + 1) * cg].astype(np.float64), w[g * cg:(g + 1) * cg].astype(np.float64)
            for offset in itertools.product(*(range(k) for k in kernel)):
                contribution = np.tensordot(xs, ws[(slice(None), slice(None), *offset)], axes=([1], [0]))
                contribution = np.moveaxis(contribution, -1, 1)  # (n, mg, *in)
                where = tuple(slice(o * d, o * d + s * (size - 1) + 1, s)
                              for o, d, s, size in zip(offset, dilations, strides, x.shape[2:]))
                full[(slice(None), slice(g * mg, (g + 1) * mg), *where)] += contribution
        crop = tuple(slice(bg, full.shape[2 + i] - e) for i, (bg, e) in enumerate(zip(begin, end)))
        y = full[(slice(None), slice(None), *crop)]
        if any(size <= 0 for size in y.shape[2:]):
            raise Refused(f"ConvTranspose: the pads leave no output (output spatial shape {list(y.shape[2:])})")
        if b is not None:
            y = y + np.asarray(b, np.float64).reshape(1, -1, *([1] * spatial))
        return (y.astype(x.dtype),)

    def _ints(self, name: str) -> list[int] | None:
        value = getattr(self, name, None)
        return None if value is None else [int(v) for v in value]

    def _pads(self, sizes, kernel, strides, dilations, output_padding) -> tuple[list[int], list[int]]:
        spatial = len(sizes)
        auto_pad = getattr(self, "auto_pad", "NOTSET") or "NOTSET"
        auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
        output_shape = self._ints("output_shape")
        if output_shape is not None and len(output_shape) == spatial + 2:
            output_shape = output_shape[2:]  # N and C included, as some exporters write it
        if output_shape is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            output_shape = [n * s for n, s in zip(sizes, strides)]
        if output_shape is not None:
            if len(output_shape) != spatial:
                raise Refused(f"ConvTranspose output_shape {output_shape} does not have {spatial} spatial sizes")
            total = [s * (n - 1) + p + (k - 1) * d + 1 - o
                     for n, k, s, d, p, o in zip(sizes, kernel, strides, dilations, output_padding, output_shape)]
            if min(total) < 0:
                why = f"output_shape {output_shape}" if self._ints("output_shape") else f"auto_pad {auto_pad}"
                raise Refused(f"ConvTranspose: {why} needs a negative total padding {total}, which ONNX does not "
                              "define (pads are >= 0)")
            if auto_pad == "SAME_UPPER":
                return [t // 2 for t in total], [t - t // 2 for t in total]
            return [t - t // 2 for t in total], [t // 2 for t in total]
        if auto_pad == "VALID":
            return [0] * spatial, [0] * spatial
        pads = self._ints("pads") or [0] * (2 * spatial)
        if len(pads) != 2 * spatial or min(pads) < 0:
            raise Refused(f"ConvTranspose pads {pads}: expected {2 * spatial} values >= 0")
        return pads[:spatial], pads[spatial:]
