"""Operators of a producer's own domain that its quantizer leaves in the models it writes, computed as the
producer's runtime library computes them, so that ``run`` executes such a model instead of refusing it.

They are not ONNX operators and the proposal defines none of them: the lift leaves their nodes as they are, named
as unknown quantization (``interop.left``), and no quantized type covers their tensors. Each Quark class transcribes
the CPU kernel of the producer's own onnxruntime custom-op library (the source the producer ships), one operator per
file, and ``tests/test_reference_producer_ops.py`` compares each with that library's results, recorded by
``tests/data/record_quark_custom_ops.py``. A node outside what the library computes (a storage type, an element
type, an attribute it refuses or builds differently) is refused (``Refused``), never guessed.

onnxruntime's com.microsoft QOperator operators, which the lift keeps as written where it types none of their
tensors (a scale of infinity, a channels_last pool, a QLinearSoftmax whose opset and the model's differ), are
computed as their schemas describe them (``onnxruntime_qlinear``), each compared with onnxruntime's unoptimized path
by ``tests/test_reference_onnxruntime_qlinear.py``. It takes some inputs onnxruntime requires as optional (zero
points, QLinearSoftmax's ``opset``), with the schemas' meaning when they are given. Its com.microsoft QuantizeLinear
/ DequantizeLinear are the standard operators of opset 21 (``onnxruntime_contrib_qdq``), as the lift reads them,
compared with onnxruntime by ``tests/test_reference_onnxruntime_contrib_qdq.py``.
"""

from __future__ import annotations

from onnx_qtypes.reference_ops.producer_ops._quark_layout import QUARK_DOMAIN
from onnx_qtypes.reference_ops.producer_ops.onnxruntime_contrib_qdq import CONTRIB_QDQ_OPS
from onnx_qtypes.reference_ops.producer_ops.onnxruntime_qlinear import CONTRIB_QLINEAR_OPS
from onnx_qtypes.reference_ops.producer_ops.quark_bfp_quantize_dequantize import BFPQuantizeDequantize
from onnx_qtypes.reference_ops.producer_ops.quark_extended_dequantize_linear import ExtendedDequantizeLinear
from onnx_qtypes.reference_ops.producer_ops.quark_extended_quantize_linear import ExtendedQuantizeLinear
from onnx_qtypes.reference_ops.producer_ops.quark_mx_quantize_dequantize import MXQuantizeDequantize

__all__ = ["PRODUCER_OPS", "QUARK_DOMAIN"]

PRODUCER_OPS = [BFPQuantizeDequantize, ExtendedDequantizeLinear, ExtendedQuantizeLinear, MXQuantizeDequantize,
                *CONTRIB_QLINEAR_OPS, *CONTRIB_QDQ_OPS]
