"""Concat: every input requantized to the output type (an integer shift where the scales
agree), then concatenated. Inputs of any granularity; the output may be
per-axis only along an axis other than the concatenation axis."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.proto.errors import QTypeError
from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops._requant import convert_type, scales


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    out = ctx.output_type(0)
    multipliers = {}
    for i in range(len(ctx.node.input)):
        shape = ctx.shape(i)
        ratio = np.asarray(scales(ctx.input_type(i), shape) / scales(out, shape))
        if not np.all(ratio == 1):
            multipliers[f"rescale_{i}"] = ratio
    return multipliers


def run(ctx: KernelContext) -> tuple:
    out = ctx.output_type(0)
    parts = []
    for i in range(len(ctx.node.input)):
        q, source = ctx.typed_input(i)
        try:
            parts.append(convert_type(q, source, out).astype(np.int64))
        except QTypeError as exc:  # the output's per-axis parameters do not fit the part
            raise Unsupported(f"the output type does not apply to input {i} alone ({exc})") from None
    joined = ctx.reference(*parts)[0]
    return (np.asarray(joined).astype(out.storage_type.np_dtype),)
