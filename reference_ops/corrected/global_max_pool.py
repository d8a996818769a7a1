"""GlobalMaxPool: the maximum over every spatial axis, kept as size 1 (N x C x 1 x ...).

onnx.reference's GlobalMaxPool on a 3-D input (N x C x D) reduces the channel axis too: [N, 1] for [N, C, 1].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused


class GlobalMaxPool(Corrected):
    def _run(self, x: Any, **_: Any) -> tuple:
        x = np.asarray(x)
        if x.ndim < 3:
            raise Refused(f"GlobalMaxPool takes an input (N x C x D1 x ...), got shape {list(x.shape)}")
        return (x.max(axis=tuple(range(2, x.ndim)), keepdims=True),)
