"""Element-wise functions as lookup tables built from the definition.

For a per-tensor input of at most 16 bits, every storage value is
dequantized, passed through onnx.reference's implementation of the
operator and quantized to the output type, once; the kernel is then a
table lookup, identical to the definition by construction.
"""

from __future__ import annotations

import numpy as np

from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.reference_ops.definition import operator_input
from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.quant import dequantize, quantize, storage_range, to_storage

MAX_TABLE = 1 << 16


def table(ctx: KernelContext, source: QType, out: QType) -> np.ndarray:
    """out[q - storage_min] for every storage value q of ``source``."""
    if source.axis is not None or out.axis is not None:
        raise Unsupported("lookup tables need per-tensor input and output types")
    lo, hi = storage_range(source)
    if hi - lo + 1 > MAX_TABLE:
        raise Unsupported(f"a lookup table over {source.storage} would have {hi - lo + 1} entries (limit {MAX_TABLE})")
    key = ("table", source, out)
    cache = ctx.cache()
    if key not in cache:
        grid = to_storage(np.arange(lo, hi + 1), source)
        reals = operator_input(ctx.inner, dequantize(grid, source), source)
        with np.errstate(over="ignore", invalid="ignore"):  # the grid spans the whole storage range
            cache[key] = quantize(np.asarray(ctx.reference(reals)[0], np.float64), out).astype(np.int64)
    return cache[key]


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    source, out = ctx.input_type(0), ctx.output_type(0)
    return {"table": table(ctx, source, out)}


def lookup(ctx: KernelContext) -> tuple:
    q, source = ctx.typed_input(0)
    out = ctx.output_type(0)
    values = table(ctx, source, out)[q - storage_range(source)[0]]
    return (to_storage(values, out),)
