"""What every corrected operator shares: the opset it runs at, onnx.reference's own implementation to
delegate to where it is right, and the error that refuses a node."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx.reference.op_run import OpRun

from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.validity import node_axis_problem


class Refused(QTypesError):
    """An input whose result ONNX does not define (or defines only for training), refused rather than guessed.
    The reference evaluator puts the node's name in front."""


class Corrected(OpRun):
    """An onnx.reference operator replaced for one node; registered through ``new_ops`` (one class per op type,
    every opset: ``opset`` says which version of the operator the node is)."""

    op_domain = ""

    @property
    def opset(self) -> int:
        return int(self.run_params["opsets"].get(self.op_domain, 1))

    def stock(self) -> OpRun:
        """onnx.reference's implementation of this node, for the inputs it computes right."""
        cached = self.__dict__.get("_stock")
        if cached is None:
            from onnx.reference.ops import load_op  # noqa: PLC0415

            cached = load_op(self.op_domain, self.onnx_node.op_type, self.opset)(self.onnx_node, self.run_params)
            self.__dict__["_stock"] = cached
        return cached

    def stock_run(self, *inputs: Any, **attributes: Any) -> tuple:
        return self.stock()._run(*inputs, **attributes)


def refuse_axis_out_of_range(node: Any, x: Any, scale: Any, axis: int | None) -> None:
    """Refuse a QuantizeLinear / DequantizeLinear whose per-axis or blocked parameters (more than one scale) name an
    axis ``x`` does not have, as the lift does (QT108): onnx.reference fails there with an IndexError of its own, and
    onnxruntime refuses the node. One scale is per-tensor, whatever the axis."""
    if np.size(scale) <= 1:
        return
    problem = node_axis_problem(1 if axis is None else int(axis), np.ndim(x))
    if problem is not None:
        quantized = node.output[0] if node.op_type == "QuantizeLinear" else node.input[0]
        raise Refused(f"tensor {quantized!r}: {problem} (QT108, as `check` reports it)")
