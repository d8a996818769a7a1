"""DequantizeLinear for every opset, for plain (untyped) Q/DQ pairs.

onnx.reference implements DequantizeLinear from opset 19 only, so QDQ
models exported at opset 10 or 13 do not run in it. This operator
delegates to onnx.reference's implementation where one exists and uses
``quant.dequantize`` (the same formula) for the older opsets, except with a
scale no quantized type holds (0, infinity, NaN: a pair a lift keeps as
written), which opset 19's implementation computes as IEEE arithmetic does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx.reference.op_run import OpRun

from onnx_qtypes.proto.validity import first_bad_scale
from onnx_qtypes.reference_ops import quant
from onnx_qtypes.reference_ops.corrected._base import refuse_axis_out_of_range
from onnx_qtypes.reference_ops.operands import operand_qtype

_OLD_STORAGE = {"int8": "int8", "uint8": "uint8", "int32": "int32"}
FIRST_REFERENCE_OPSET = 19


class DequantizeLinear(OpRun):
    op_domain = ""

    def _run(self, x: Any, x_scale: Any, x_zero_point: Any = None, **attributes: Any) -> tuple:
        refuse_axis_out_of_range(self.onnx_node, x, x_scale, attributes.get("axis"))
        version = int(self.run_params["opsets"].get("", FIRST_REFERENCE_OPSET))
        operands = (x, x_scale) if x_zero_point is None else (x, x_scale, x_zero_point)
        if version >= FIRST_REFERENCE_OPSET:
            return self._onnx_reference(version).run(*operands)
        # a pair a lift keeps as written (no type holds its scale): the formula as IEEE computes it
        if first_bad_scale(np.asarray(x_scale, np.float64).reshape(-1)) is not None:
            return self._onnx_reference(FIRST_REFERENCE_OPSET).run(*operands)  # unchanged since opset 13 for these
        x = np.asarray(x)
        storage = _OLD_STORAGE.get(x.dtype.name)
        if storage is None:
            raise TypeError(f"DequantizeLinear-{version} takes int8, uint8 or int32 input, got {x.dtype}")
        scale = np.asarray(x_scale)
        axis = attributes.get("axis")
        qtype = operand_qtype(storage, scale, x_zero_point, x.shape, axis=1 if axis is None else int(axis))
        return (quant.dequantize(x, qtype).astype(scale.dtype),)

    def _onnx_reference(self, version: int) -> OpRun:
        cached = getattr(self, "_delegate", None)
        if cached is None:
            from onnx.reference.ops import load_op  # noqa: PLC0415

            cached = load_op("", "DequantizeLinear", version)(self.onnx_node, self.run_params)
            self._delegate = cached
        return cached
