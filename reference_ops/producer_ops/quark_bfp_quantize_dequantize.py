"""AMD Quark's BFPQuantizeDequantize (domain com.amd.quark): a block floating point quantize-dequantize whose
shared exponents come from the data at run time, as its library's CPU kernels compute it (Quark's BFP16 preset,
``bfp_method`` "to_bfp", and its MX4 / MX6 / MX9 presets, "to_bfp_prime").

Blocks of ``block_size`` values run along ``axis`` (a rank-1 tensor: along its only axis); the last block of a row
is padded with zeros. ``bit_width`` counts a sign bit, 8 shared exponent bits and m = bit_width - 9 mantissa bits.
- "to_bfp": a block's shared exponent e is the largest exponent field of its finite values; each value is divided
  by 2^(e - 127 - m + 1), rounded as ``rounding_mode`` says (0: half away from zero, 1: a negative tie upward,
  2: half to even), multiplied back and clamped to +-(2^(e - 126) - that step). Infinities and NaN pass through.
  ``use_compiler_version_cpu_kernel`` != 0: the library's other kernel, which doubles the step when a value of the
  largest exponent rounds to 2^7 or beyond, and clamps to [-2^(e - 127) 2^m, 2^(e - 127) (2^m - 1)].
- "to_bfp_prime" (also "to_bfp_prime_shared"): every ``sub_block_size`` values share a shift of up to
  2^sub_block_shift_bits - 1 below the block's exponent; mantissas are rounded by their bits (a subnormal counts as
  zero), never past 2^m - 1; a block holding an infinity or NaN is all NaN (0x7FFFFFFF).
``convert_to_bfloat_before_bfp`` != 0 rounds the input to bfloat16 first (to nearest even on its bits: a NaN may
come out as -0, as the library's conversion gives). A tensor of one value passes through (after that rounding);
float16 input is computed in float32, both ways cast as onnxruntime's Cast does (a NaN made quiet).

The library rounds the input to bfloat16 in onnxruntime's own buffer of the input, so that other consumers of the
same tensor may see the rounded values in its runs; here the input is left as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Refused
from onnx_qtypes.reference_ops.producer_ops._quark_layout import (QuarkOp, along_axis, block_size_attribute,
                                                                  integer_attribute, operands, text_attribute)
from onnx_qtypes.reference_ops.producer_ops._quark_rounding import ROUNDINGS

METHODS = ("to_bfp", "to_bfp_prime", "to_bfp_prime_shared")
# 1 sign and 8 exponent bits, then at most float32's 23 mantissa bits: beyond, the kernels' steps underflow to 0
# and their shifts wrap; below, they have no mantissa to shift
BIT_WIDTHS = range(9, 33)
SHIFT_BITS = range(31)  # the library shifts a C int 1 by it: 31 and beyond overflow
COMPILER_LIMIT = 128  # the compiler kernel's bound on a rounded value of the largest exponent (2^7, for 16 bits)
NAN_BITS = 0x7FFFFFFF  # what the prime kernel writes for every value of a block with an infinity or NaN


class BFPQuantizeDequantize(QuarkOp):
    def _run(self, *inputs: Any, bfp_method: Any = "to_bfp", axis: Any = 1, bit_width: Any = 16,
             block_size: Any = 8, rounding_mode: Any = 0, sub_block_size: Any = 2, sub_block_shift_bits: Any = 1,
             convert_to_bfloat_before_bfp: Any = 0, use_compiler_version_cpu_kernel: Any = 0) -> tuple:
        (x,) = operands("BFPQuantizeDequantize", inputs, 1)
        x = np.asarray(x)
        method = text_attribute(bfp_method)
        axis, bits = integer_attribute("axis", axis), integer_attribute("bit_width", bit_width)
        block = block_size_attribute(block_size)
        rounding = integer_attribute("rounding_mode", rounding_mode)
        sub_block, shift_bits = (integer_attribute(n, v) for n, v in
                                 (("sub_block_size", sub_block_size), ("sub_block_shift_bits", sub_block_shift_bits)))
        to_bfloat = integer_attribute("convert_to_bfloat_before_bfp", convert_to_bfloat_before_bfp) != 0
        compiler = integer_attribute("use_compiler_version_cpu_kernel", use_compiler_version_cpu_kernel) != 0
        if method not in METHODS:
            raise Refused(f"bfp_method {method!r}: the library knows {', '.join(METHODS)}")
        if bits not in BIT_WIDTHS:
            raise Refused(f"bit_width {bits}: the library's kernels hold a sign, 8 exponent bits and 0 to 23 mantissa "
                          "bits (9 to 32); beyond, their steps underflow and their shifts wrap")
        if rounding not in ROUNDINGS:
            raise Refused(f"rounding_mode {rounding}: the library's kernels leave the result undefined for a mode "
                          f"other than {', '.join(map(str, ROUNDINGS))}")
        prime = method != "to_bfp"
        if prime and (sub_block < 1 or block % sub_block or shift_bits not in SHIFT_BITS):
            raise Refused(f"sub_block_size {sub_block} / sub_block_shift_bits {shift_bits} with block_size {block}: "
                          "the library writes every value only for sub-blocks that divide the block, shifted by 0 "
                          "to 30 bits")

        def blocks(rows: np.ndarray) -> np.ndarray:  # the last block of a row padded with zeros, as the library pads
            length = rows.shape[-1]
            padded = np.pad(rows, [(0, 0)] * (rows.ndim - 1) + [(0, -length % block)])
            grouped = padded.reshape(*padded.shape[:-1], -1, block)
            if prime:
                done = _to_bfp_prime(grouped, bits - 9, sub_block, shift_bits, rounding)
            else:
                done = _to_bfp(grouped, bits - 9, rounding, compiler)
            return done.reshape(padded.shape)[..., :length]

        return (along_axis(x, axis, blocks, _to_bfloat if to_bfloat else None),)

def _to_bfloat(x: np.ndarray) -> np.ndarray:
    """The library's float2bfloat_cpu: round the bits to nearest even at bit 16 (in 32-bit arithmetic, so that a
    NaN's carry may wrap) and clear the low half."""
    bits = np.array(x, order="C").view(np.uint32)  # (rank 0 kept: not ascontiguousarray)
    low = bits & np.uint32(0xFFFF)
    up = (low > 0x8000) | ((low == 0x8000) & ((bits & np.uint32(0x10000)) != 0))
    rounded = np.where(up, bits + np.uint32(0x10000), bits) & np.uint32(0xFFFF0000)
    return rounded.astype(np.uint32).view(np.float32)


def _exponents(blocks: np.ndarray) -> np.ndarray:
    return ((blocks.view(np.uint32) >> 23) & 0xFF).astype(np.int64)


def _to_bfp(blocks: np.ndarray, m: int, rounding: int, compiler: bool) -> np.ndarray:
    """BFPCPUKernel / BFPCPUKernelCompiler on float32 ``blocks`` (values along the last axis)."""
    exponents = _exponents(blocks)
    special = exponents == 0xFF
    shared = np.where(special, 0, exponents).max(axis=-1, keepdims=True)
    power = shared - 127
    round_ = ROUNDINGS[rounding]
    with np.errstate(all="ignore"):
        # std::pow in double, stored in a float
        scale = np.ldexp(1.0, (power - (m - 1)).astype(np.int32)).astype(np.float32)

        def rounded(step: np.ndarray) -> np.ndarray:  # round(x / step) in float32, exact in float64
            return round_((blocks / step).astype(np.float64)).astype(np.float32)

        if compiler:
            first = rounded(scale)
            over = ((exponents == shared) & ((first >= COMPILER_LIMIT) | (first < -COMPILER_LIMIT))).any(
                axis=-1, keepdims=True)
            power = power + over
            scale = np.where(over, scale * np.float32(2), scale)
            high = (np.ldexp(1.0, power.astype(np.int32)) * (2.0**m - 1)).astype(np.float32)
            low = (-np.ldexp(1.0, power.astype(np.int32)) * 2.0**m).astype(np.float32)
        else:
            high = (np.ldexp(1.0, (power + 1).astype(np.int32)) - scale.astype(np.float64)).astype(np.float32)
            low = -high
        y = rounded(scale) * scale
        y = np.where(high < y, high, y)  # std::min(y, high), then std::max(low, that): NaN as the library has it
        y = np.where(low < y, y, low)
    return np.where(special, blocks, y).astype(np.float32)


def _to_bfp_prime(blocks: np.ndarray, m: int, sub_block: int, shift_bits: int, rounding: int) -> np.ndarray:
    """BFPPrimeCPUKernel on float32 ``blocks``: the mantissas rounded by their bits (round_bits)."""
    bits = blocks.view(np.uint32).astype(np.int64)
    exponents = (bits >> 23) & 0xFF
    shared = exponents.max(axis=-1, keepdims=True)  # (infinities and NaN count here)
    subs = exponents.reshape(*exponents.shape[:-1], -1, sub_block)
    sub_max = np.repeat(subs.max(axis=-1), sub_block, axis=-1)
    shift = np.minimum(shared - sub_max, (1 << shift_bits) - 1)
    mantissa = np.where(exponents == 0, 0, (bits & 0x7FFFFF) | (1 << 23))  # subnormals flushed
    tail_bits = shared - shift - exponents + 23 - m + 1  # >= 1: no value's exponent passes its shifted block's
    negative = (bits >> 31) != 0
    clipped = np.minimum(tail_bits, 26)  # beyond 25 tail bits the result is 0 (and shifts stay defined)
    half = np.left_shift(1, clipped - 1)
    tail = mantissa & (np.left_shift(1, clipped) - 1)
    kept = mantissa >> clipped
    if rounding == 0:
        tie = kept + 1
    elif rounding == 1:
        tie = np.where(negative, kept, kept + 1)
    else:
        tie = np.where(kept % 2 == 1, kept + 1, kept)
    upper = (1 << m) - 1
    result = np.where(kept == upper, kept, np.where(tail < half, kept, np.where(tail > half, kept + 1, tie)))
    result = np.where(tail_bits > 25, 0, result)
    sign = np.where(negative, -1.0, 1.0)
    with np.errstate(all="ignore"):  # sign * 2^k * mantissa in double, stored in a float (a -0 stays -0)
        step = np.ldexp(1.0, (shared - 127 - shift + 1 - m).astype(np.int32))
        out = (sign * step * result.astype(np.float64)).astype(np.float32)
    return np.where(shared == 0xFF, np.uint32(NAN_BITS).view(np.float32), out)
