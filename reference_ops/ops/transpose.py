"""Transpose (a per-axis type's axis moves with its dimension): data movement on the storage integers, bit-identical to the
definition when input and output parameters agree, requantized otherwise."""

from __future__ import annotations

from onnx_qtypes.reference_ops.ops._movement import move as run
from onnx_qtypes.reference_ops.ops._movement import plan

__all__ = ["plan", "run"]
