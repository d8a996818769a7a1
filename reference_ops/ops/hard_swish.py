"""HardSwish: a lookup table over every input storage value, built from onnx.reference's
HardSwish (see _lut); identical to the definition by construction."""

from __future__ import annotations

from onnx_qtypes.reference_ops.ops._lut import lookup as run
from onnx_qtypes.reference_ops.ops._lut import plan

__all__ = ["plan", "run"]
