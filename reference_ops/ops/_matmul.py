"""Exact integer matrix products through floating-point BLAS.

A product of integer-valued float arrays is exact when every partial sum
is an integer the float type represents exactly: ``K * max|a| * max|b|``
below 2**24 (float32) or 2**53 (float64), whatever order BLAS sums in.
int8 x int8 with K up to about a thousand fits float32; the contraction is
split into a few float32 chunks when it does not, then float64, then
int64 / Python integers, so the result is always the exact integer sum.
"""

from __future__ import annotations

import math

import numpy as np

FLOAT32_EXACT = 1 << 24
FLOAT64_EXACT = 1 << 53
MAX_FLOAT32_CHUNKS = 4


def plan_dtype(k: int, max_a: int, max_b: int) -> tuple[np.dtype, int]:
    """(dtype to hold the operands in, contraction chunk length) for an exact product."""
    per_term = max(max_a * max_b, 1)
    chunk = (FLOAT32_EXACT - 1) // per_term
    if chunk >= 1 and math.ceil(k / chunk) <= MAX_FLOAT32_CHUNKS:
        return np.dtype(np.float32), min(chunk, max(k, 1))
    if per_term * k < FLOAT64_EXACT:
        return np.dtype(np.float64), max(k, 1)
    if per_term * k < (1 << 63):
        return np.dtype(np.int64), max(k, 1)
    return np.dtype(object), max(k, 1)


def max_abs(x: np.ndarray) -> int:
    return int(np.max(np.abs(x))) if x.size else 0


def exact_matmul(a: np.ndarray, b: np.ndarray, dtype: np.dtype | None = None, chunk: int | None = None) -> np.ndarray:
    """``a @ b`` (numpy matmul broadcasting) of integer-valued arrays, exactly, as int64 (or object)."""
    k = a.shape[-1]
    if dtype is None or chunk is None:
        dtype, chunk = plan_dtype(k, max_abs(a), max_abs(b))
    a = a.astype(dtype, copy=False)
    b = b.astype(dtype, copy=False)
    if chunk >= k:
        result = np.matmul(a, b)
    else:
        result = sum(np.matmul(a[..., i : i + chunk], b[..., i : i + chunk, :]).astype(np.int64) for i in range(0, k, chunk))
    return result if dtype == object else np.asarray(result).astype(np.int64)
