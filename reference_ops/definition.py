"""How the definition feeds dequantized values to an onnx.reference operator.

Real values are float64, so that the operator rounds once, when its result is
quantized (proposal/spec/semantics.md: the definition computes on exact reals,
approximated by float64). Operators that onnx.reference runs through an ONNX
function body (HardSwish, Mish, a model-local function, ...) get float64 too:
their body is evaluated on the reals, not in the expressed type. The one
exception is a body with typed float constants (MeanVarianceNormalization's
float32 epsilon), which onnx.reference refuses to mix with float64: it gets
float32, never narrower. The evaluator and the lookup-table kernels both use
this, so a table built from the definition equals the definition.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto
from onnx.reference.op_run import OpFunction, OpRun

from onnx_qtypes.proto.qtype import QType

_TYPED_FLOATS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}


def runs_function_body(inner: OpRun) -> bool:
    return isinstance(inner, OpFunction)


def _typed_constants(inner: OpRun) -> bool:
    """The function body holds a Constant of a float type narrower than float64."""
    body = getattr(getattr(inner, "impl_", None), "proto_", None)
    for node in getattr(body, "node", ()):
        if node.op_type != "Constant":
            continue
        for a in node.attribute:
            if a.name == "value_float" or (a.name == "value" and a.t.data_type in _TYPED_FLOATS):
                return True
    return False


def body_dtype(inner: OpRun) -> np.dtype | None:
    """The float type ``inner`` must be fed in: float64, or float32 for a body with typed float constants; None
    for an operator onnx.reference implements directly (it takes float64)."""
    if not runs_function_body(inner):
        return None
    return np.dtype(np.float32) if _typed_constants(inner) else np.dtype(np.float64)


def operator_input(inner: OpRun, real: np.ndarray, qtype: QType) -> np.ndarray:
    """``real`` (float64 dequantized values) in the float type ``inner`` computes in."""
    dtype = body_dtype(inner)
    return real if dtype is None else real.astype(dtype)
