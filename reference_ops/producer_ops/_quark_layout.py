"""What AMD Quark's ExtendedQuantizeLinear and ExtendedDequantizeLinear share: their inputs, how the scale and zero
point lie over the data (checked for float16 storage too, which then ignores them), and which storage types the
library computes.

Its library (``quark/onnx/operators/custom_ops``, PrepareForQDQ) takes one scale and one zero point for the whole
tensor when the scale holds one value, else one per slice along ``axis``, whose default is 0, not ONNX's 1 (the
library applies a per-channel axis to weights). The three inputs are required, the scale float32.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused

QUARK_DOMAIN = "com.amd.quark"
INTEGER_STORAGE = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32))
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
# float16 storage: the CPU library is built with USE_NATIVE_OP_CAST (custom_op_qdq.h defines it), which casts,
# clipped to float16's range, and ignores the scale and the zero point
FLOAT16 = np.dtype(np.float16)
# the one NaN of onnxruntime's BFloat16 (kPositiveQNaNBits), which the library's bfloat16 quantize writes for any NaN
BFLOAT16_NAN_BITS = 0x7FC1
C_INT = range(-(2**31), 2**31)  # the values of a C int, which the library passes attributes and counts on as
FLOAT_MANTISSA = 23  # the bits of a float32's mantissa field, below its 8-bit exponent field


class QuarkOp(Corrected):
    op_domain = QUARK_DOMAIN


def operands(op_type: str, inputs: tuple, count: int) -> tuple:
    """``inputs`` when the node gives exactly ``count`` of them, none omitted; Refused otherwise (the library
    refuses the graph)."""
    if len(inputs) != count or any(i is None for i in inputs):
        given = ", ".join("omitted" if i is None else "one" for i in inputs) or "none"
        raise Refused(f"{op_type} takes {count} input(s), all given; the node gives {len(inputs)} ({given})")
    return inputs


def integer_attribute(name: str, value: Any) -> int:
    """``value`` of the integer attribute ``name``; Refused when the node gives another type (the library would
    not read it and take its default instead: refused as a node that says something the library ignores)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise Refused(f"attribute {name} = {value} ({type(value).__name__}) is not an integer: the library would "
                      "ignore it and take its default")
    return int(value)


def parameters(x: Any, scale: Any, zero_point: Any, axis: int | None) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """(scale, zero point, storage dtype), the parameters shaped to broadcast against ``x``."""
    scale, zero_point = np.asarray(scale), np.asarray(zero_point)
    if scale.dtype != np.float32:
        raise Refused(f"scale of {scale.dtype}: the library computes float32 scales only")
    storage = zero_point.dtype
    if storage not in INTEGER_STORAGE and storage not in (BFLOAT16, FLOAT16):
        raise Refused(f"storage {storage}: the library computes 8-, 16- and 32-bit integers, bfloat16 and float16")
    shape = np.shape(x)
    if scale.size == 1 and scale.ndim <= 1:
        if zero_point.size != 1 or zero_point.ndim > 1:
            raise Refused(f"a single scale with a zero point of shape {list(zero_point.shape)}")
        return scale.reshape(()), zero_point.reshape(()), storage
    rank = len(shape)
    axis = 0 if axis is None else integer_attribute("axis", axis)
    if not -rank <= axis < rank:
        raise Refused(f"axis {axis} outside a tensor of rank {rank}")
    axis %= rank
    if scale.ndim != 1 or scale.shape[0] != shape[axis] or zero_point.shape != scale.shape:
        raise Refused(f"scale of shape {list(scale.shape)} and zero point of shape {list(zero_point.shape)} for axis "
                      f"{axis} of a tensor of shape {list(shape)}: the library takes one of each per slice")
    along = [1] * rank
    along[axis] = shape[axis]
    return scale.reshape(along), zero_point.reshape(along), storage


def text_attribute(value: Any) -> str:
    """A string attribute as the library reads it (onnx.reference hands bytes or str)."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


# onnxruntime's Cast between float16 and float32 converts whole runs of values in vector registers (F16C) and the
# rest of the tensor, its last n % run values, one by one; the two make different NaNs. Runs measured with
# onnxruntime 1.32.0 on an x86-64 CPU with F16C (tests/data/record_quark_custom_ops.py records both kinds). These
# are one thread's bits: with more, onnxruntime splits a tensor of over 128,000 values into pieces, each with a
# one-by-one end of its own, so that a NaN's bits there depend on the session's thread count
WIDEN_RUN, NARROW_RUN = 16, 8


def _in_runs(size: int, run: int) -> np.ndarray:
    """Per value of a flat tensor of ``size``: converted in a vector run (True) or one by one at the end."""
    return np.arange(size) < size - size % run


def float16_cast(x: np.ndarray) -> np.ndarray:
    """float32 -> float16 as onnxruntime's Cast converts on an x86 CPU with F16C: to nearest even; a NaN in a vector
    run made quiet, keeping its sign and the top 10 bits of its payload (numpy keeps a signalling NaN signalling),
    one of the last values 0x7E00 and its sign (no payload). These NaN bits depend on the CPU."""
    x = np.asarray(x)  # (np.clip of a tensor of rank 0 hands back a scalar)
    out = np.array(x.astype(FLOAT16), ndmin=0)
    nan = np.isnan(x)
    if nan.any():
        bits = np.array(x, order="C").view(np.uint32)  # (rank 0 kept: not ascontiguousarray)
        run = _in_runs(x.size, NARROW_RUN).reshape(x.shape)
        payload = np.where(run, (bits >> 13) & 0x3FF, 0)
        quiet = ((bits >> 16) & 0x8000) | 0x7E00 | payload
        out[nan] = quiet[nan].astype(np.uint16).view(FLOAT16)
    return out


def float16_widen(x: np.ndarray) -> np.ndarray:
    """float16 -> float32 as onnxruntime's Cast converts on an x86 CPU with F16C: exact; a NaN in a vector run made
    quiet (sign and payload kept), one of the last values kept as it is, as numpy converts it."""
    x = np.asarray(x)
    out = np.array(x, np.float32)
    nan = np.isnan(out) & _in_runs(x.size, WIDEN_RUN).reshape(x.shape)
    if nan.any():
        out.view(np.uint32)[nan] |= np.uint32(0x00400000)
    return out


def c_int_attribute(name: str, value: Any) -> int:
    """An integer attribute the library passes on as a C int; Refused beyond one (the library would cut it)."""
    number = integer_attribute(name, value)
    if number not in C_INT:
        raise Refused(f"attribute {name} = {number}: the library passes it on as a C int, which would cut it")
    return number


def block_size_attribute(value: Any) -> int:
    """``block_size`` as the library passes it on: a C int of at least 1."""
    block_size = integer_attribute("block_size", value)
    if block_size < 1 or block_size not in C_INT:
        raise Refused(f"block_size {block_size}: the library takes 1 to 2^31 - 1 values per block (a C int)")
    return block_size


def along_axis(x: np.ndarray, axis: int, blocks: Callable[[np.ndarray], np.ndarray],
               prepare: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """What the library's blocked quantize-dequantize kernels share around their arithmetic: float16 input cast to
    float32 and back (as onnxruntime's Cast), ``prepare`` on the float32 values, a tensor of one value passed
    through, and ``blocks`` computed on the values with ``axis`` moved last (a rank-1 tensor: its only axis, the
    attribute unread), as the library transposes it."""
    if x.dtype not in (np.float32, FLOAT16):
        raise Refused(f"input of {x.dtype}: the library computes float32 and float16")
    values = float16_widen(x) if x.dtype == FLOAT16 else x.astype(np.float32)
    if prepare is not None:
        values = prepare(values)
    if values.size == 1:
        out = values
    else:
        rank = values.ndim
        if rank > 1 and not -rank <= axis < rank:
            raise Refused(f"axis {axis} outside a tensor of rank {rank}")
        along = 0 if rank == 1 else axis % rank
        out = np.swapaxes(blocks(np.ascontiguousarray(np.swapaxes(values, along, -1))), along, -1)
    return float16_cast(out) if x.dtype == FLOAT16 else np.array(out, order="C")  # (ascontiguousarray makes a
    # tensor of rank 0 one of rank 1)


def float32_exponents(x: np.ndarray) -> np.ndarray:
    """The 8-bit exponent field of each float32 value (255: an infinity or NaN; 0: zero or subnormal), as int64."""
    return ((np.asarray(x, np.float32).view(np.uint32) >> FLOAT_MANTISSA) & 0xFF).astype(np.int64)


def per_block(values: np.ndarray, starts: np.ndarray, reduce: Any) -> np.ndarray:
    """``reduce`` (a ufunc) over each run of ``values`` along the last axis that begins at one of ``starts``,
    repeated over the run's values (a short last block as it is: the library's padding zeros change no maximum)."""
    widths = np.diff(np.append(starts, values.shape[-1]))
    return np.repeat(reduce.reduceat(values, starts, axis=-1), widths, axis=-1)
