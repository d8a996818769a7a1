"""onnxruntime's com.microsoft QuantizeLinear / DequantizeLinear, computed as the standard operators of opset 21.

onnxruntime's quantizer writes them (``UseQDQContribOps``, 16-bit and 4-bit pairs below opset 21), as do AMD Quark
and onnxruntime's int4 weight quantizer; they compute the standard formula for every type their kernels take, and
the lift reads them so (``interop.contrib_qdq``). ``run`` of such a file as written computes each here: the node,
moved to the default domain, runs the project's own standard operator (its corrections included) at opset 21.
``tests/test_reference_onnxruntime_contrib_qdq.py`` holds each, for every storage type the contrib kernels take, to
onnxruntime's unoptimized results bit for bit.
"""

from __future__ import annotations

from typing import Any

from onnx import NodeProto
from onnx.reference.op_run import OpRun

from onnx_qtypes.interop.graph import MS_DOMAIN
from onnx_qtypes.reference_ops.corrected.quantize_linear import QuantizeLinear as StandardQuantizeLinear
from onnx_qtypes.reference_ops.dequantize_any_opset import DequantizeLinear as StandardDequantizeLinear

STANDARD_OPSET = 21  # the first whose QuantizeLinear / DequantizeLinear take every type the contrib kernels take


class _Contrib(OpRun):
    op_domain = MS_DOMAIN
    standard: type[OpRun]

    def _run(self, *inputs: Any, **attributes: Any) -> tuple:
        op = self.__dict__.get("_standard")
        if op is None:
            node = NodeProto()
            node.CopyFrom(self.onnx_node)
            node.domain = ""
            opsets = {**self.run_params["opsets"], "": STANDARD_OPSET}
            op = self.__dict__["_standard"] = self.standard(node, {**self.run_params, "opsets": opsets})
        return op._run(*inputs, **attributes)


class QuantizeLinear(_Contrib):
    standard = StandardQuantizeLinear


class DequantizeLinear(_Contrib):
    standard = StandardDequantizeLinear


CONTRIB_QDQ_OPS = [QuantizeLinear, DequantizeLinear]
