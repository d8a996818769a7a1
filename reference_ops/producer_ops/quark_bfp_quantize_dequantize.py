"""AMD Quark's BFPQuantizeDequantize (domain com.amd.quark): a block floating point quantize-dequantize whose
shared exponents come from the data at run time, as its library's CPU kernels compute it (Quark's BFP16 preset,
``bfp_method`` "to_bfp", and its MX4 / MX6 / MX9 presets, "to_bfp_prime").

Blocks of ``block_size`` values run along ``axis`` (a rank-1 tensor: along its only axis); the library pads the last
block of a row with zeros, which change no exponent: here it is left short. ``bit_width`` counts a sign bit, 8
shared exponent bits and m = bit_width - 9 mantissa bits.
- "to_bfp": a block's shared exponent e is the largest exponent field of its finite values; each value is divided
  by 2^(e - 127 - m + 1), rounded as ``rounding_mode`` says (0: half away from zero, 1: a negative tie upward,
  2: half to even), multiplied back and clamped to +-(2^(e - 126) - that step). Infinities and NaN pass through.
  ``use_compiler_version_cpu_kernel`` != 0: the library's other kernel, which doubles the step when a value of the
  largest exponent rounds to 2^7 or beyond, and clamps to [-2^(e - 127) 2^m, 2^(e - 127) (2^m - 1)].
- "to_bfp_prime" (also "to_bfp_prime_shared"): every ``sub_block_size`` values share a shift of up to
  2^sub_block_shift_bits - 1 below the block's exponent; mantissas are rounded by their bits (a subnormal counts as
  zero), never past 2^m - 1; a block holding an infinity or NaN is all NaN (0x7FFFFFFF).
``convert_to_bfloat_before_bfp`` != 0 rounds the input to bfloat16 first (to nearest even on its bits: a NaN may
come out as -0, as the library's conversion gives). A tensor of one value passes through (after that rounding),
whatever the other attributes say, as the library checks none of them then; float16 input is computed in float32,
both ways cast as onnxruntime's Cast does (a NaN made quiet).

Refused, as the library leaves them undefined: a rounding_mode other than 0-2 in to_bfp (the value is never set),
and in to_bfp_prime on a tie (only there is it read); to_bfp_prime's bit_width below 9 or above 39 (its shifts
overflow) or sub-blocks that leave a value of the tensor unwritten (sub_block_size not dividing the block, where
the block holds values past the last whole sub-block); an attribute the library passes on as a C int beyond that.

The library rounds the input to bfloat16 in onnxruntime's own buffer of the input, so that other consumers of the
same tensor may see the rounded values in its runs; here the input is left as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Refused
from onnx_qtypes.reference_ops.producer_ops._quark_layout import (C_INT, FLOAT_MANTISSA, QuarkOp, along_axis,
                                                                  block_size_attribute, c_int_attribute,
                                                                  float32_exponents, integer_attribute, operands,
                                                                  per_block, text_attribute)
from onnx_qtypes.reference_ops.producer_ops._quark_rounding import ROUNDINGS

METHODS = ("to_bfp", "to_bfp_prime", "to_bfp_prime_shared")
PRIME_BIT_WIDTHS = range(9, 40)  # the prime kernel shifts a C int 1 by bit_width - 9: 31 and beyond overflow
SHIFT_BITS = range(31)  # the library shifts a C int 1 by it: 31 and beyond overflow
COMPILER_LIMIT = 128  # the compiler kernel's bound on a rounded value of the largest exponent (2^7, for 16 bits)
NAN_BITS = 0x7FFFFFFF  # what the prime kernel writes for every value of a block with an infinity or NaN
EXPONENT_CLIP = 2000  # 2^k beyond +-2000 is 0 or inf in float64 already: std::pow's result, without ldexp's overflow
TO_BFP_WIDTH_LIMIT = 2**30  # |bit_width| beyond: the library's int arithmetic on it overflows near the C int's ends


class BFPQuantizeDequantize(QuarkOp):
    def _run(self, *inputs: Any, bfp_method: Any = "to_bfp", axis: Any = 1, bit_width: Any = 16,
             block_size: Any = 8, rounding_mode: Any = 0, sub_block_size: Any = 2, sub_block_shift_bits: Any = 1,
             convert_to_bfloat_before_bfp: Any = 0, use_compiler_version_cpu_kernel: Any = 0) -> tuple:
        (x,) = operands("BFPQuantizeDequantize", inputs, 1)
        x = np.asarray(x)
        method = text_attribute(bfp_method)
        axis = integer_attribute("axis", axis)
        bits, block, rounding, sub_block, shift_bits, compiler = (integer_attribute(n, v) for n, v in (
            ("bit_width", bit_width), ("block_size", block_size), ("rounding_mode", rounding_mode),
            ("sub_block_size", sub_block_size), ("sub_block_shift_bits", sub_block_shift_bits),
            ("use_compiler_version_cpu_kernel", use_compiler_version_cpu_kernel)))
        to_bfloat = integer_attribute("convert_to_bfloat_before_bfp", convert_to_bfloat_before_bfp) != 0

        def blocks(rows: np.ndarray) -> np.ndarray:  # (more than one value: only then does the library look further,
            # and only at what the method reads)
            if method not in METHODS:
                raise Refused(f"bfp_method {method!r}: the library knows {', '.join(METHODS)}")
            block_size_attribute(block)  # (the library divides by it, as a C int)
            if rows.size == 0:  # (nothing to compute: no other attribute is read)
                return rows
            padded = rows.size // rows.shape[-1] * (-(-rows.shape[-1] // block) * block)
            if padded not in C_INT:
                raise Refused(f"{padded} values with the last block of each row padded: the library counts them in "
                              "a C int")
            c_int_attribute("rounding_mode", rounding)  # (both methods read it)
            if method == "to_bfp":
                c_int_attribute("use_compiler_version_cpu_kernel", compiler)
                if not -TO_BFP_WIDTH_LIMIT <= bits <= TO_BFP_WIDTH_LIMIT:
                    raise Refused(f"bit_width {bits}: the library's int arithmetic on it (bit_width - 9, then the "
                                  "step's exponent) overflows")
                return _to_bfp(rows, block, bits - 9, rounding, compiler != 0)
            c_int_attribute("sub_block_size", sub_block)
            if bits not in PRIME_BIT_WIDTHS or sub_block < 1 or shift_bits not in SHIFT_BITS:
                raise Refused(f"bit_width {bits}, sub_block_size {sub_block}, sub_block_shift_bits {shift_bits}: the "
                              "library's to_bfp_prime takes 9 to 39 bits, sub-blocks of at least 1 value and shifts "
                              "of 0 to 30 bits (beyond, it divides by zero or shifts past a C int)")
            written = block // sub_block * sub_block
            if written < block and rows.shape[-1] > written:
                raise Refused(f"sub_block_size {sub_block} does not divide block_size {block}: the library leaves "
                              f"the last {block - written} value(s) of a block unwritten, and this tensor has values "
                              "there")
            return _to_bfp_prime(rows, block, bits - 9, sub_block, shift_bits, rounding)

        return (along_axis(x, axis, blocks, _to_bfloat if to_bfloat else None),)


def _to_bfloat(x: np.ndarray) -> np.ndarray:
    """The library's float2bfloat_cpu: round the bits to nearest even at bit 16 (in 32-bit arithmetic, so that a
    NaN's carry may wrap) and clear the low half."""
    bits = np.array(x, order="C").view(np.uint32)  # (rank 0 kept: not ascontiguousarray)
    low = bits & np.uint32(0xFFFF)
    up = (low > 0x8000) | ((low == 0x8000) & ((bits & np.uint32(0x10000)) != 0))
    rounded = np.where(up, bits + np.uint32(0x10000), bits) & np.uint32(0xFFFF0000)
    return np.asarray(rounded, np.uint32).reshape(x.shape).view(np.float32)


def _to_bfp(rows: np.ndarray, block: int, m: int, rounding: int, compiler: bool) -> np.ndarray:
    """BFPCPUKernel / BFPCPUKernelCompiler on float32 ``rows`` (blocks along the last axis)."""
    exponents = float32_exponents(rows)
    special = exponents == 0xFF
    if rounding not in ROUNDINGS:  # read for every finite value (an infinity or NaN passes before it)
        if not special.all():
            raise Refused(f"rounding_mode {rounding}: the library's to_bfp leaves a finite value undefined for a "
                          f"mode other than {', '.join(map(str, ROUNDINGS))}")
        return rows
    starts = np.arange(0, rows.shape[-1], block)
    shared = per_block(np.where(special, 0, exponents), starts, np.maximum)
    power = shared - 127
    round_ = ROUNDINGS[rounding]
    with np.errstate(all="ignore"):
        # std::pow in double, stored in a float (an exponent far out of range: 0 or inf, as pow gives)
        scale = np.ldexp(1.0, np.clip(power - (m - 1), -EXPONENT_CLIP, EXPONENT_CLIP)).astype(np.float32)

        def rounded(step: np.ndarray) -> np.ndarray:  # round(x / step) in float32, exact in float64
            return round_((rows / step).astype(np.float64)).astype(np.float32)

        if compiler:
            first = rounded(scale)
            over = per_block((exponents == shared) & ((first >= COMPILER_LIMIT) | (first < -COMPILER_LIMIT)),
                             starts, np.logical_or)
            power = power + over
            scale = np.where(over, scale * np.float32(2), scale)
            levels = np.ldexp(1.0, np.clip(m, -EXPONENT_CLIP, EXPONENT_CLIP))
            high = (np.ldexp(1.0, power) * (levels - 1)).astype(np.float32)
            low = (-np.ldexp(1.0, power) * levels).astype(np.float32)
        else:
            high = (np.ldexp(1.0, power + 1) - scale.astype(np.float64)).astype(np.float32)
            low = -high
        y = rounded(scale) * scale
        y = np.where(high < y, high, y)  # std::min(y, high), then std::max(low, that): NaN as the library has it
        y = np.where(low < y, y, low)
    return np.where(special, rows, y).astype(np.float32)


def _to_bfp_prime(rows: np.ndarray, block: int, m: int, sub_block: int, shift_bits: int, rounding: int) -> np.ndarray:
    """BFPPrimeCPUKernel on float32 ``rows``: each block's largest exponent field (infinities and NaN count), each
    sub-block's shift below it, the mantissas rounded by their bits (round_bits)."""
    length = rows.shape[-1]
    bits = rows.view(np.uint32).astype(np.int64)
    exponents = float32_exponents(rows)
    shared = per_block(exponents, np.arange(0, length, block), np.maximum)
    position = np.arange(length)  # each value's sub-block: its block, then its place in it
    sub = position // block * (block // sub_block + 1) + position % block // sub_block
    sub_max = per_block(exponents, np.flatnonzero(np.diff(sub, prepend=-1)), np.maximum)
    shift = np.minimum(shared - sub_max, (1 << shift_bits) - 1)
    mantissa = np.where(exponents == 0, 0, (bits & ((1 << FLOAT_MANTISSA) - 1)) | (1 << FLOAT_MANTISSA))  # subnormals flushed
    # the bits shifted out; the library's count is unsigned: below 0 it wraps past 25 (then 0), at 0 it keeps all
    tail_bits = shared - shift - exponents + FLOAT_MANTISSA - m + 1
    clipped = np.clip(tail_bits, 1, 26)
    half = np.left_shift(1, clipped - 1)
    tail = mantissa & (np.left_shift(1, clipped) - 1)
    kept = mantissa >> clipped
    negative = (bits >> 31) != 0
    upper = (1 << m) - 1
    if rounding == 0:
        tie = kept + 1
    elif rounding == 1:
        tie = np.where(negative, kept, kept + 1)
    elif rounding == 2:
        tie = np.where(kept % 2 == 1, kept + 1, kept)
    else:
        tied = (tail == half) & (tail_bits >= 1) & (tail_bits <= 25)
        if (tied & (kept != upper) & (shared != 0xFF)).any():
            raise Refused(f"rounding_mode {rounding} on a tie: the library's to_bfp_prime leaves that value "
                          "undefined (modes 0-2 are defined)")
        tie = kept
    result = np.where(kept == upper, kept, np.where(tail < half, kept, np.where(tail > half, kept + 1, tie)))
    result = np.where(tail_bits == 0, mantissa, np.where((tail_bits < 0) | (tail_bits > 25), 0, result))
    sign = np.where(negative, -1.0, 1.0)
    with np.errstate(all="ignore"):  # sign * 2^k * mantissa in double, stored in a float (a -0 stays -0)
        step = np.ldexp(1.0, shared - 127 - shift + 1 - m)
        out = (sign * step * result.astype(np.float64)).astype(np.float32)
    return np.where(shared == 0xFF, np.uint32(NAN_BITS).view(np.float32), out)
