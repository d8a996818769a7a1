"""How much one run may allocate: a tensor an operator would create from sizes in the data (ConstantOfShape,
Expand, Tile, Range, Resize, Pad, ...) or what a Loop / Scan accumulates, refused before it is allocated.

A file can ask for 2**62 scan inputs or a 2**40-element constant; without this the run climbs until the
machine runs out of memory. MAX_BYTES (default 4 GiB, environment ONNX_QTYPES_RUN_MAX_BYTES) bounds one tensor
and the scan outputs of one Loop / Scan; MAX_ITERATIONS (default 10**6, ONNX_QTYPES_RUN_MAX_ITERATIONS)
bounds one Loop's iterations, which onnx.reference runs at about 10**4 per second.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Refused


def _limit(variable: str, default: int) -> int:
    text = os.environ.get(variable, "")
    try:
        return int(text) if text.strip() else default
    except ValueError:
        raise Refused(f"{variable}={text!r}: expected a whole number") from None


def max_bytes() -> int:
    return _limit("ONNX_QTYPES_RUN_MAX_BYTES", 4 << 30)


def max_iterations() -> int:
    return _limit("ONNX_QTYPES_RUN_MAX_ITERATIONS", 10**6)


def require_fits(op: str, shape: Sequence[int], dtype: np.dtype | type, what: str = "its output") -> None:
    """Refused when a tensor of ``shape`` and ``dtype`` would exceed MAX_BYTES (or has a negative size)."""
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise Refused(f"{op}: {what} would have the negative shape {dims}")
    size = math.prod(dims) * np.dtype(dtype).itemsize
    if size > max_bytes():
        raise Refused(f"{op}: {what} would take {_human(size)} (shape {dims}), more than the run's limit of "
                      f"{_human(max_bytes())} (ONNX_QTYPES_RUN_MAX_BYTES)")


def _human(size: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} bytes"  # pragma: no cover
