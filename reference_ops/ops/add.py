"""Add: y = zp_y + round((a - zp_a) * s_a / s_y + (b - zp_b) * s_b / s_y), with broadcasting.

Any granularity (parameters are broadcast per element).
"""

from __future__ import annotations

from onnx_qtypes.reference_ops.ops._elementwise import linear_plan as plan
from onnx_qtypes.reference_ops.ops._elementwise import linear_run
from onnx_qtypes.reference_ops.ops._kernel import KernelContext

__all__ = ["plan", "run"]


def run(ctx: KernelContext) -> tuple:
    return linear_run(ctx, +1)
