"""A scale is subnormal or not exactly representable in the expressed type.

## What it checks
Every (valid) scale is exactly representable in the type's expressed type
(float32, float16 or bfloat16) and is a normal number there.

## Why
Scales are stored as doubles so that every expressed type is exact, but a
runtime computes with the expressed type. A scale that rounds when converted
gives a different `real` value on every implementation that converts it, and
a subnormal scale is flushed to zero by hardware that runs with
flush-to-zero (measured: a scale of 1e-45 gives all zeros in onnx.reference
and a 0/255 split in onnxruntime). This is a warning: the type is well
defined, but its results will not be reproducible.

## Invalid example
`int8:float16<scale 0.1>` (0.1 is not a float16 value; the nearest is
0.0999755859375), or `int8:float32<scale 1e-45>` (subnormal in float32).

## Valid example
`int8:float16<scale 0.0999755859375>`, `int8:float32<scale 0.02>` stored as
the float32 value 0.019999999552965164.

## Fix
Store the scale as the expressed type's value (round it once, in the tool
that writes the model), and recalibrate tensors whose scale is subnormal.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import summarize_flagged
from onnx_qtypes.proto.storage_types import EXPRESSED_TYPES, ExpressedType
from onnx_qtypes.proto.validity import scale_warning


@rule("QT102", "scale-not-representable", "warning")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    # each row's expressed numpy type (None: QT106's business), looked up once per distinct expressed type
    dtype_of = {name: kind.np_dtype for name, kind in EXPRESSED_TYPES.items()}
    normal_of = {kind.np_dtype: kind.smallest_normal for kind in EXPRESSED_TYPES.values()}
    dtypes = [dtype_of.get(d.qtype.expressed) for d in cols.types]
    suspect = np.zeros(cols.scales.shape, bool)
    with np.errstate(over="ignore", invalid="ignore"):  # a scale beyond float16's range rounds to inf: a finding
        for dtype in {t for t in dtypes if t is not None}:
            mine = cols.per_scale([t is not None and t == dtype for t in dtypes], bool)
            values = cols.scales[mine]
            rounded = values.astype(dtype).astype(np.float64)
            suspect[mine] = (rounded != values) | (np.abs(values) < normal_of[dtype])
        for decl in cols.owners(suspect):
            kind = EXPRESSED_TYPES[decl.qtype.expressed]
            scales = np.asarray(decl.qtype.scale, np.float64)
            rounded = scales.astype(kind.np_dtype).astype(np.float64)
            # scale_warning's test on every scale of the type: a valid scale (else QT101's) that rounds or is subnormal
            inexact = (rounded != scales) | (np.abs(scales) < kind.smallest_normal)
            flagged = np.isfinite(scales) & (scales != 0) & inexact
            if found := summarize_flagged(flagged, decl.qtype.scale, functools.partial(_warning, kind=kind), "scales"):
                index, message = found
                yield Finding(decl_location(decl, "quantization", "scale", index), message)


def _warning(i: int, scale: float, kind: ExpressedType) -> str | None:
    return f"scale[{i}]: {p}" if (p := scale_warning(scale, kind)) else None
