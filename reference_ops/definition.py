"""How the definition feeds dequantized values to an onnx.reference operator.

Real values are float64, so that the operator rounds once, when its result is
quantized. Operators that onnx.reference runs through their ONNX function
body (HardSwish, MeanVarianceNormalization, ...) are the exception: the body
carries typed constants (an epsilon in float32) and refuses float64, so they
get the expressed type. The evaluator and the lookup-table kernels both use
this, so a table built from the definition equals the definition.
"""

from __future__ import annotations

import numpy as np
from onnx.reference.op_run import OpFunction, OpRun

from onnx_qtypes.proto.qtype import QType


def runs_function_body(inner: OpRun) -> bool:
    return isinstance(inner, OpFunction)


def operator_input(inner: OpRun, real: np.ndarray, qtype: QType) -> np.ndarray:
    """``real`` (float64 dequantized values) in the float type ``inner`` computes in."""
    return real.astype(qtype.expressed_type.np_dtype) if runs_function_body(inner) else real
