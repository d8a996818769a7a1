"""Gather (per-axis parameters are gathered with their slices): data movement on the storage integers, bit-identical to the
definition when input and output parameters agree, requantized otherwise. With a float output (rows of a quantized
weight, as an embedding lookup reads them) the selected codes move with their parameter indices and only they are
dequantized: what a runtime reading rows of a blocked or GGUF-format weight does."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._movement import move, plan
from onnx_qtypes.reference_ops.quant import dequantize_at, parameter_index

__all__ = ["plan", "run"]


def run(ctx: KernelContext) -> tuple:
    if ctx.output_qtypes and ctx.output_qtypes[0] is None:
        return rows(ctx)
    return move(ctx)


def reads_negative_scales(inputs: list, outputs: list) -> bool:
    """Rows read into a float output are dequantized element by element: a negative scale is just a value."""
    return bool(outputs) and outputs[0] is None


def rows(ctx: KernelContext) -> tuple:
    """The gathered elements' reals, rounded once to the expressed type (the definition's value exactly)."""
    q, source = ctx.typed_input(0, llm_formats=True)
    index = np.broadcast_to(parameter_index(source, q.shape), q.shape).astype(np.int64)
    codes, moved = (np.asarray(ctx.reference(a, *ctx.inputs[1:])[0]) for a in (q, index))
    reals = dequantize_at(codes.astype(np.int64), source, moved.astype(np.int64))
    return (reals.astype(source.expressed_type.np_dtype),)
