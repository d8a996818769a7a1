"""AveragePool: the mean over each window of the input's elements, or (count_include_pad=1) over the input's
and the padding's (explicit pads and auto_pad's; the ceil_mode extension never counts).

onnx.reference's AveragePool refuses auto_pad with ceil_mode ("ceil_mode is not supported with auto_pad") and
fails where SAME padding would be negative (stride larger than the kernel: no padding at all).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected
from onnx_qtypes.reference_ops.corrected._pooling import padded_windows, pooling_geometry


class AveragePool(Corrected):
    def _run(self, x: Any, **_: Any) -> tuple:
        x = np.asarray(x)
        g = pooling_geometry(self, x)
        axes = tuple(range(-len(g["kernel"]), 0))
        sums = padded_windows(x, g, 0).sum(axis=axes, dtype=np.float64)
        ones = np.ones((1, 1, *x.shape[2:]), np.float64)
        if int(getattr(self, "count_include_pad", 0) or 0):
            ones = np.pad(ones, [(0, 0), (0, 0), *zip(g["begin"], g["end"])], constant_values=1)
            g = {**g, "begin": [0] * len(g["begin"]), "end": [0] * len(g["end"])}
        counts = padded_windows(ones, g, 0).sum(axis=axes)
        return ((sums / counts).astype(x.dtype),)
