"""The distance between two storage tensors, element by element, in storage steps.

Integer storage: |a - b| on the integers. Float storage (float8, float4): the number of representable values
between the two codes, sign-magnitude ordered with +0 and -0 one position apart (semantics.md#steps); NaN against NaN
is 0 steps, NaN against a number infinitely many.
"""

from __future__ import annotations

import numpy as np

from onnx_qtypes.conformance.execution_cases import widen
from onnx_qtypes.proto.qtype import QType


def _ordinal(codes: np.ndarray, bits: int) -> np.ndarray:
    """Each code's position on the number line: magnitude codes count up from +0; -0 sits just below +0."""
    codes = codes.astype(np.int64)
    sign = (codes >> (bits - 1)) & 1
    magnitude = codes & ((1 << (bits - 1)) - 1)
    return np.where(sign == 1, -magnitude - 1, magnitude)


def storage_steps(reference: np.ndarray, actual: np.ndarray, qtype: QType) -> np.ndarray:
    """|actual - reference| in steps of ``qtype``'s storage, as float64 (inf where only one side is NaN)."""
    storage = qtype.storage_type
    if not storage.is_float:
        return np.abs(widen(actual).astype(np.int64) - widen(reference).astype(np.int64)).astype(np.float64)
    dtype = storage.np_dtype
    ref = np.asarray(reference).view(dtype) if np.asarray(reference).dtype != dtype else np.asarray(reference)
    act = np.asarray(actual).astype(dtype) if np.asarray(actual).dtype != dtype else np.asarray(actual)
    bits = storage.bits
    ref_codes, act_codes = ref.view(np.uint8), act.view(np.uint8)  # every float storage type is one byte a code
    if bits < 8:  # float4 is held one code per byte, in the low bits
        ref_codes, act_codes = ref_codes & ((1 << bits) - 1), act_codes & ((1 << bits) - 1)
    diff = np.abs(_ordinal(act_codes, bits) - _ordinal(ref_codes, bits)).astype(np.float64)
    ref_nan, act_nan = np.isnan(ref.astype(np.float32)), np.isnan(act.astype(np.float32))
    return np.where(ref_nan & act_nan, 0.0, np.where(ref_nan | act_nan, np.inf, diff))
