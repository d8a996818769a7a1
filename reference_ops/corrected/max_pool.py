"""MaxPool: the maximum over each window, padding never chosen; Indices flat over the whole input
(N x C x D1 x ... x Dn, row-major, or column-major over the spatial axes with storage_order=1).

onnx.reference's MaxPool numbers Indices within each (n, c) plane instead of over the whole tensor, gets the
output shape wrong with auto_pad and ceil_mode (SAME_LOWER, kernel [2, 3], strides [2, 3] on 3 x 3: 1 x 1
where ONNX's formula gives 2 x 1) and with ceil_mode and pads (a 2 x 2 input, kernel 2, stride 1, pads 1:
5 x 5 for 3 x 3), and fails when the pads differ between axes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused
from onnx_qtypes.reference_ops.corrected._pooling import padded_windows, pooling_geometry


class MaxPool(Corrected):
    def _run(self, x: Any, **_: Any) -> tuple:
        x = np.asarray(x)
        g = pooling_geometry(self, x)
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        view = padded_windows(x, g, fill)
        spatial = len(g["kernel"])
        flat_view = view.reshape(*view.shape[: 2 + spatial], -1)
        y = flat_view.max(axis=-1)
        if len(self.onnx_node.output) < 2 or not self.onnx_node.output[1]:
            return (y,)
        return y, self._indices(x, g, flat_view.argmax(axis=-1))

    def _indices(self, x: np.ndarray, g: dict, position: np.ndarray) -> np.ndarray:
        """The chosen element's flat index in x, from its position within its window."""
        n, c, *sizes = x.shape
        offsets = np.unravel_index(position, g["kernel"])  # per spatial axis, within the window
        grid = np.indices(position.shape[2:], sparse=True)
        coords = [grid[i] * g["strides"][i] + offsets[i] * g["dilations"][i] - g["begin"][i]
                  for i in range(len(sizes))]
        if any(np.any((k < 0) | (k >= s)) for k, s in zip(coords, sizes)):
            raise Refused("MaxPool: a window holds padding only, so its Indices output is not defined")
        storage_order = int(getattr(self, "storage_order", 0) or 0)
        spatial_index = np.ravel_multi_index(coords, sizes, order="F" if storage_order else "C")
        plane = int(np.prod(sizes))
        channel = np.arange(n * c).reshape(n, c, *([1] * len(sizes))) * plane
        return (channel + spatial_index).astype(np.int64)
