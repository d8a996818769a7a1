"""Reference semantics of unmodified ONNX operators on quantized types.

The proposal (``proposal/spec/semantics.md``) wins over this code wherever
they disagree. Stable API, used by the other wings:

``onnx_qtypes.reference_ops.quant`` -- the one quantize / dequantize formula
    ``dequantize(q, qtype) -> float64 ndarray``
    ``quantize(x, qtype) -> storage ndarray`` (static types)
    ``broadcast_parameters(qtype, shape) -> (scale, zero_point)`` arrays
    ``parameter_index(qtype, shape)``, ``storage_range(qtype)``
    ``dynamic_parameters(x, qtype) -> QType`` / ``resolve`` / ``quantize_dynamic``

``onnx_qtypes.reference_ops.fixed_point`` -- integer requantization
    ``quantize_multiplier(real) -> (multiplier, shift)`` with
    ``real ~= multiplier * 2**-shift``, multiplier in [2**30, 2**31)
    ``quantize_multipliers(reals)`` (element-wise), ``to_tflite``, ``to_tosa``
    ``rounding_shift_right(x, shift, rounding)``,
    ``multiply_by_quantized_multiplier(x, multiplier, shift, rounding)``,
    ``requantize(terms, zero_point, lo, hi)``, ``rescale(...)`` (real multipliers)

``ReferenceEvaluator(model).run(output_names, feeds)`` -- runs a typed
    model, the same call shape as ``onnx.reference.ReferenceEvaluator``;
    ``kernels="definitional"`` (default) or ``"integer"``. Raises
    ``EvaluationError`` for a model it cannot run (names defined twice,
    disagreeing declarations, invalid types) and its subclass ``FeedError``
    for feeds that do not fit the declared inputs (``feeds.py``).

``fixed_point_parameters(model)`` -- per node, the integer multipliers,
    shifts, zero points and tables an integer-only target needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from onnx_qtypes.reference_ops import fixed_point, quant
from onnx_qtypes.reference_ops.quant import (
    broadcast_parameters,
    dequantize,
    dynamic_parameters,
    parameter_index,
    quantize,
    quantize_dynamic,
    resolve,
    storage_range,
)

if TYPE_CHECKING:
    from onnx_qtypes.reference_ops.errors import EvaluationError, FeedError
    from onnx_qtypes.reference_ops.evaluator import ReferenceEvaluator
    from onnx_qtypes.reference_ops.export import fixed_point_parameters

__all__ = [
    "EvaluationError",
    "FeedError",
    "ReferenceEvaluator",
    "broadcast_parameters",
    "dequantize",
    "dynamic_parameters",
    "fixed_point",
    "fixed_point_parameters",
    "parameter_index",
    "quant",
    "quantize",
    "quantize_dynamic",
    "resolve",
    "storage_range",
]

_LAZY = {
    "ReferenceEvaluator": "onnx_qtypes.reference_ops.evaluator",
    "EvaluationError": "onnx_qtypes.reference_ops.errors",
    "FeedError": "onnx_qtypes.reference_ops.errors",
    "fixed_point_parameters": "onnx_qtypes.reference_ops.export",
}


def __getattr__(name: str) -> Any:  # the evaluator pulls in onnx.reference: load it on first use
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
