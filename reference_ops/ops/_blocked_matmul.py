"""MatMul with a weight blocked along K (B[K, N], axis 0): exact integer sums per block, combined by each block's
scale and offset, the way llama.cpp's K-quant dot products and MatMulNBits kernels compute.

    y[m, n] = s_a * sum_b ( s_B[b, n] * acc_b[m, n] + o_B[b, n] * rowsum_b[m] )
    acc_b[m, n] = sum_{k in b} (a[m, k] - z_a) * v[k, n]        rowsum_b[m] = sum_{k in b} (a[m, k] - z_a)

with v = B - z_B, or an integer codebook's entry codebook[B - storage_min] (IQ4_NL), so that every sum is an
exact integer. A quantized output is one fixed-point rescale of all the block terms (a negative block scale, as
Q3_K / Q6_K sub-blocks and -dmin offsets have, negates its integer term so that its multiplier stays positive:
proposal/spec/semantics.md); a float output is the same sum in float64, rounded once to the expressed type.
A per-tensor A is required; a codebook of non-integers (NF4) or float storage has no integer kernel.
"""

from __future__ import annotations

import math

import numpy as np

from onnx_qtypes.proto.errors import QTypeError
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.validity import offset_problem
from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops._matmul import exact_matmul
from onnx_qtypes.reference_ops.ops._requant import output
from onnx_qtypes.reference_ops.quant import broadcast_parameters, codebook_entries


def applies(b_t: QType | None, b_rank: int) -> bool:
    """Whether this kernel is the one for a MatMul whose B has type ``b_t``: blocked along K of a 2-D B."""
    return b_t is not None and b_rank == 2 and b_t.axis == 0 and b_t.block_size is not None


def reads_negative_scales(a_t: QType | None, b_t: QType | None, y_t: QType | None) -> bool:
    """B's negative block scales are handled; A's and the output's must be positive."""
    return all(t is None or not t.has_negative_scale for t in (a_t, y_t))


def run(ctx: KernelContext) -> tuple:
    a, a_t = ctx.typed_input(0)
    b, b_t = ctx.typed_input(1, llm_formats=True)
    if a_t.axis is not None:
        raise Unsupported(f"A must be per-tensor next to a blocked B, found {a_t}")
    y_t = ctx.output_qtypes[0] if ctx.output_qtypes else None
    if y_t is not None and (y_t.is_dynamic or (y_t.axis is not None and y_t.axis != a.ndim - 1)):
        raise Unsupported(f"the output must be per-tensor or per-column, found {y_t}")
    values = _weight_integers(b, b_t)
    k, n = b.shape
    blocks = math.ceil(k / b_t.block_size)
    if len(b_t.scale) != blocks * n:  # a type built unvalidated (the checker's view)
        raise QTypeError("scale", f"a [{k}, {n}] weight in blocks of {b_t.block_size} along K has {blocks * n} "
                         f"scales, found {len(b_t.scale)}", ctx.node.input[1])
    if b_t.offset and (problem := offset_problem(b_t.offset, len(b_t.scale))):
        raise QTypeError("offset", problem, ctx.node.input[1])
    scales = np.asarray(b_t.scale, np.float64).reshape(blocks, n)
    offsets = np.asarray(b_t.offset, np.float64).reshape(blocks, n) if b_t.offset else None
    da = a.astype(np.int64) - a_t.zero_point[0]
    s_a = a_t.scale[0]
    terms = []  # (integer array broadcastable to the result, real multiplier per column)
    for i, start in enumerate(range(0, k, b_t.block_size)):
        part = slice(start, start + b_t.block_size)
        terms.append((exact_matmul(da[..., part], values[part]), s_a * scales[i]))
        if offsets is not None:
            terms.append((da[..., part].sum(axis=-1, keepdims=True), s_a * offsets[i]))
    shape = (*a.shape[:-1], n)
    if y_t is None:
        real = sum(term.astype(np.float64) * multiplier for term, multiplier in terms)
        return (np.broadcast_to(real, shape).astype(b_t.expressed_type.np_dtype),)
    s_y, _ = broadcast_parameters(y_t, shape)
    signed = [(term * np.sign(multiplier).astype(np.int64), np.abs(multiplier) / s_y) for term, multiplier in terms]
    return (output(signed, y_t, shape),)


def _weight_integers(b: np.ndarray, b_t: QType) -> np.ndarray:
    """The integer each weight code contributes: B - z_B, or its (integer) codebook entry."""
    if not b_t.codebook:
        _, zero_point = broadcast_parameters(b_t, b.shape)
        return b.astype(np.int64) - zero_point
    if not all(float(v).is_integer() for v in b_t.codebook):
        raise Unsupported("a codebook of non-integers (NF4) has no integer kernel")
    return codebook_entries(b, b_t).astype(np.int64)
