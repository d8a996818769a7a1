"""The expressed type is too narrow for the storage range: dequantized values round by half a step or more, or overflow.

## What it checks
For every scale / zero-point group of a type whose storage has at most 16
bits, let `m = max(storage_max - zero_point, zero_point - storage_min)`, the
largest `|q - zero_point|` the storage range allows, and `p` the expressed
type's significand precision, implicit bit included (float32 24, float16 11,
bfloat16 8). The rule warns when

- `m > 2^(p-1)`, unless the scale is exactly a power of two and `m <= 2^p`
  (then `q - zero_point` and its product with the scale are exact); or
- `m * scale` rounds to inf in the expressed type: it reaches the largest
  finite value plus half a unit in its last place (65520 for float16, whose
  largest finite value is 65504).

A dynamic type (no scale) is judged on the first test alone, with zero
point 0 under the symmetric schemas (`m = max(storage_max, -storage_min)`)
and `m = storage_max - storage_min` under the others (its zero point may
fall anywhere in the range); under a power-of-two schema the exception
applies. INT32 storage is not checked: it types biases and accumulators,
whose values the data bound, not the storage range (QT407 judges
accumulation). So with float32 only the overflow test can fire (`m <= 65535
< 2^23`); float16 fires for 16-bit storage; bfloat16 for 16-bit storage and
for 8-bit storage whose zero point lets `|q - zero_point|` pass 128 (uint8
with zero point 0, int8 with -128), not for symmetric int8 (`m = 128`). The
first offending group is reported, at its scale, with its index and values.

## Why
The spec defines real values exactly (`(q - zero_point) * scale`,
semantics.md section 2), but the QDQ form of a typed model, and any runtime
computing in the expressed type, dequantizes into the expressed type and
rounds each product to `p` significant bits: an error of up to
`m * scale * 2^-p`, about `m * 2^-p` steps. Beyond `2^(p-1)` that reaches
half a step, and DequantizeLinear -> QuantizeLinear no longer returns `q`.
Measured: DequantizeLinear -> Transpose -> QuantizeLinear of every int16
value with zero point 0 and a float16 scale returns values up to 16 steps
off in onnxruntime 1.32 (unoptimized), none with a float32 scale; of the 84
conformance cases with int16 / uint16 storage and float16, onnxruntime 1.32
(unoptimized) fails 60 (by up to 48 steps) and OpenVINO 2026.4 fails 58.
From the overflow threshold on, dequantized values become inf.

StableHLO dequantizes in the expressed type too (its `dequantize` converts
`q - zero_point` to the expressed type and multiplies there). Its first
definition of quantized element types ([openxla/stablehlo PR #1352](sources.md#src-stablehlo-1352), 2023)
had a coarser constraint, (C1) `num_bits(storage_type) <
num_bits(expressed_type)`, which rejected i16:f16 but admitted u8:bf16; [PR
#2211](sources.md#src-stablehlo-2211) (April 2024, [issue #2205](sources.md#src-stablehlo-2205)) removed it so that i32 storage could go
with f32 or bf16 (convolution outputs), and the current spec has no such
constraint. This rule judges precision instead of bit widths and exempts
INT32 for the same reason. It is a warning: the type is well defined, but
its results depend on where it is computed.

Float storage (float8, float4e2m1) is judged on overflow only: its values
carry at most 4 significant bits, so a rounding of `q · scale` by half a
unit in the expressed type's last place (2^−p relative, p ≥ 8) never moves
it to another storage value.

## Invalid example
`int16:float16<0.375:0>` (`m = 32768 > 2^10`: rounds by up to about 16
steps); `uint8:bfloat16<0.375:0>` (`m = 255 > 2^7`); `int8:float16<768:0>`
(`128 * 768 = 98304`, beyond 65504).

## Valid example
`int16:float32<0.375:0>`; `int8:float16<0.375:0>` (`m = 128 <= 2^10`);
`int8:bfloat16<0.375:0, symmetric>` (`m = 128 = 2^7`);
`uint8:bfloat16<0.0625:0>` (a power-of-two scale and `m = 255 <= 2^8`).

## Fix
Declare float32 as the expressed type (the QDQ form then carries float32
scales), or store in fewer bits: int8 for float16, a zero point near the
middle of the range for bfloat16 (uint8 with 128, symmetric int8), or a
storage range narrowed to `2^(p-1)` either side of the zero point.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from fractions import Fraction

import ml_dtypes
import numpy as np

from onnx_qtypes.checker.columns import Columns, columns, well_formed
from onnx_qtypes.checker.context import Context, Declared, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import fmt, not_pow2, summarize_flagged
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.storage_types import EXPRESSED_TYPES

MAX_STORAGE_BITS = 16  # wider storage (int32) types biases and accumulators: the data bound their values


@functools.cache
def _precision(expressed: str) -> tuple[int, float]:
    """(significand bits p with the implicit one, overflow threshold) of an expressed type: a real value of at
    least the threshold, the largest finite value plus half a unit in its last place, rounds to inf."""
    info = ml_dtypes.finfo(EXPRESSED_TYPES[expressed].np_dtype)
    p = int(info.nmant) + 1
    return p, 2.0**info.maxexp * (1 - 2.0 ** -(p + 1))  # float16: 2^16 - 2^4 = 65520


@rule("QT120", "expressed-type-too-narrow", "warning")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    for decl in cols.declarations(_screen(cols)):
        qt = decl.qtype
        if not well_formed(ctx, qt) or qt.storage_type.bits > MAX_STORAGE_BITS:
            continue  # the type rules report an ill-formed type; this one judges it once it is well formed
        finding = _dynamic(decl) if qt.is_dynamic else _static(decl)
        if finding is not None:
            yield finding


def _screen(cols: Columns) -> np.ndarray:
    """Per row, whether the type might break the rule (a superset: m is at most the range's span)."""
    n = len(cols.types)
    limits = [_precision(d.qtype.expressed) if known else (64, np.inf)
              for d, known in zip(cols.types, cols.known_expressed.tolist())]
    precision, threshold = np.array(limits, np.float64).reshape(n, 2).T
    narrow = cols.known_storage & cols.known_expressed & (cols.type_max - cols.type_min < 2**MAX_STORAGE_BITS)
    span = (cols.storage_max - cols.storage_min).astype(np.float64)
    widest = np.zeros(n, np.float64)
    with np.errstate(invalid="ignore"):
        np.fmax.at(widest, cols.scale_owner, np.abs(cols.scales))  # a NaN scale is QT101's (not well formed)
        return narrow & ((span > 2.0 ** (precision - 1)) | (span * widest >= threshold / 2))


def _groups(qt: QType) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(m, zero points, rounds, overflows) per scale / zero-point group of a static type."""
    p, threshold = _precision(qt.expressed)
    scales = np.asarray(qt.scale, np.float64)
    zero_points = np.asarray(qt.zero_point, np.int64)
    m = np.maximum(qt.storage_max - zero_points, zero_points - qt.storage_min)
    rounds = (m > 2 ** (p - 1)) & (not_pow2(scales) | (m > 2**p)) & (not qt.storage_type.is_float)
    return m, zero_points, rounds, _overflows(m, scales, threshold)


def _dynamic_reach(qt: QType) -> tuple[int, str, int] | None:
    """(m, where the zero point lies, the exponent of the limit m passes) of a dynamic type that breaks the rule."""
    p, _ = _precision(qt.expressed)
    lo, hi = qt.storage_min, qt.storage_max
    if qt.storage_type.is_float:
        return None  # judged on overflow only, which a dynamic scale avoids
    if qt.schema.symmetric:
        m, where = max(hi, -lo), "symmetric: zero point 0"
    else:
        m, where = hi - lo, f"a zero point anywhere in [{lo}, {hi}]"
    if m <= 2 ** (p - 1) or (qt.schema.pow2 and m <= 2**p):
        return None
    return m, where, p if qt.schema.pow2 else p - 1


def too_narrow(qt: QType) -> bool:
    """The rule's test on one valid type: its values round or overflow in the expressed type (``lower`` then
    computes in float32 inside, proposal/spec/interop.md#lower-qdq)."""
    if qt.storage_type.bits > MAX_STORAGE_BITS:
        return False
    if qt.is_dynamic:
        return _dynamic_reach(qt) is not None
    _, _, rounds, overflows = _groups(qt)
    return bool((rounds | overflows).any())


def _static(decl: Declared) -> Finding | None:
    qt = decl.qtype
    m, zero_points, rounds, overflows = _groups(qt)
    decide = functools.partial(_group_message, qt=qt, m=m, zero_points=zero_points, rounds=rounds,
                               overflows=overflows)
    if found := summarize_flagged(rounds | overflows, qt.scale, decide, "scale / zero-point groups"):
        index, message = found
        return Finding(decl_location(decl, "quantization", "scale", index), message)
    return None


def _dynamic(decl: Declared) -> Finding | None:
    qt = decl.qtype
    reach = _dynamic_reach(qt)
    if reach is None:
        return None
    m, where, limit = reach
    p, _ = _precision(qt.expressed)
    return Finding(decl_location(decl, "quantization", "expressed_type"),
                   f"{_name(qt)} (dynamic, {where}): |q - zero_point| can reach {m} > 2^{limit}, "
                   f"{_consequence(qt.expressed, m, p)}; use a float32 expressed type or a narrower storage type")


def _overflows(m: np.ndarray, scales: np.ndarray, threshold: float) -> np.ndarray:
    """Per group, whether m * scale (exact) reaches ``threshold``."""
    with np.errstate(over="ignore"):
        product = m * scales  # rounded, monotonically: above the threshold only if the exact product is
    out = product > threshold
    for i in np.flatnonzero(product == threshold):  # equal to it: the exact product decides
        out[i] = Fraction(float(scales[i])) * int(m[i]) >= Fraction(threshold)
    return out


def _group_message(i: int, scale: float, qt: QType, m: np.ndarray, zero_points: np.ndarray, rounds: np.ndarray,
                   overflows: np.ndarray) -> str:
    p, _ = _precision(qt.expressed)
    problems = []
    if rounds[i]:
        pow2 = not not_pow2([scale])[0]
        limit = f"2^{p} (the limit for a power-of-two scale)" if pow2 else f"2^{p - 1}"
        problems.append(f"|q - zero_point| reaches {int(m[i])} > {limit}, {_consequence(qt.expressed, int(m[i]), p)}")
    if overflows[i]:
        largest = float(ml_dtypes.finfo(EXPRESSED_TYPES[qt.expressed].np_dtype).max)
        problems.append(f"|q - zero_point| * scale reaches {fmt(int(m[i]) * scale)}, beyond {qt.expressed}'s largest "
                        f"finite value {fmt(largest)}: dequantized in {qt.expressed} it becomes inf")
    fix = "" if rounds[i] and overflows[i] else " or a narrower storage type" if rounds[i] else " or a smaller scale"
    return (f"{_name(qt)} scale[{i}] = {fmt(scale)}, zero_point[{i}] = {int(zero_points[i])}: "
            f"{'; and '.join(problems)}; use a float32 expressed type{fix}")


def _consequence(expressed: str, m: int, p: int) -> str:
    steps = m * 2.0**-p
    return (f"and {expressed} keeps {p} significant bits: its QDQ form, or a runtime computing in {expressed}, "
            f"rounds real values by up to about {steps:.3g} step{'' if steps == 1 else 's'}")


def _name(qt: QType) -> str:
    storage = qt.storage_type
    narrowed = (qt.storage_min, qt.storage_max) != (storage.min, storage.max)
    return f"{qt.storage}{f'<{qt.storage_min}:{qt.storage_max}>' if narrowed else ''}:{qt.expressed}"
