"""Softsign: x / (1 + |x|). onnx.reference's fails on a rank-0 input (it divides into a numpy scalar)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected


class Softsign(Corrected):
    def _run(self, x: Any, **_: Any) -> tuple:
        x = np.asarray(x)
        return (np.asarray(x / (1 + np.abs(x)), x.dtype),)
