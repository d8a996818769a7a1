"""onnx.reference operators replaced where they are wrong or missing, one operator per file.

Each class is an ``onnx.reference.op_run.OpRun`` registered by the reference evaluator through ``new_ops``
(``CORRECTED_OPS``), so it runs for every node of its type, quantized or not, in subgraphs too. Each gives
the result ONNX defines, or refuses (``Refused``, one line naming what is not defined); where onnx.reference
is right it delegates to it. ``proposal/experiments/float_op_differential.py`` measures every operator
against onnxruntime's unoptimized path; ``tests/test_reference_onnx_gaps.py`` has a test per correction.
Another onnx.reference user can pass the same list: ``onnx.reference.ReferenceEvaluator(model,
new_ops=CORRECTED_OPS)``.
"""

from __future__ import annotations

from onnx_qtypes.reference_ops.corrected._base import Refused
from onnx_qtypes.reference_ops.corrected.average_pool import AveragePool
from onnx_qtypes.reference_ops.corrected.batch_normalization import BatchNormalization
from onnx_qtypes.reference_ops.corrected.constant_of_shape import ConstantOfShape
from onnx_qtypes.reference_ops.corrected.conv_transpose import ConvTranspose
from onnx_qtypes.reference_ops.corrected.expand import Expand
from onnx_qtypes.reference_ops.corrected.gather_elements import GatherElements
from onnx_qtypes.reference_ops.corrected.global_max_pool import GlobalMaxPool
from onnx_qtypes.reference_ops.corrected.hardmax import Hardmax
from onnx_qtypes.reference_ops.corrected.log_softmax import LogSoftmax
from onnx_qtypes.reference_ops.corrected.loop import Loop
from onnx_qtypes.reference_ops.corrected.max_pool import MaxPool
from onnx_qtypes.reference_ops.corrected.pad import Pad
from onnx_qtypes.reference_ops.corrected.qlinear_conv import QLinearConv
from onnx_qtypes.reference_ops.corrected.quantize_linear import QuantizeLinear
from onnx_qtypes.reference_ops.corrected.range import Range
from onnx_qtypes.reference_ops.corrected.resize import Resize
from onnx_qtypes.reference_ops.corrected.scan import Scan
from onnx_qtypes.reference_ops.corrected.shape import Shape
from onnx_qtypes.reference_ops.corrected.slice import Slice
from onnx_qtypes.reference_ops.corrected.softmax import Softmax
from onnx_qtypes.reference_ops.corrected.softsign import Softsign
from onnx_qtypes.reference_ops.corrected.tile import Tile
from onnx_qtypes.reference_ops.dequantize_any_opset import DequantizeLinear

__all__ = ["CORRECTED_OPS", "Refused"]

CORRECTED_OPS = [AveragePool, BatchNormalization, ConstantOfShape, ConvTranspose, DequantizeLinear, Expand,
                 GatherElements, GlobalMaxPool, Hardmax, LogSoftmax, Loop, MaxPool, Pad, QLinearConv, QuantizeLinear,
                 Range, Resize, Scan, Shape, Slice, Softmax, Softsign, Tile]
