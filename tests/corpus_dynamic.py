"""The dynamic-quantization corpus: small float models quantized by ``onnxruntime.quantization.quantize_dynamic``.

``quantize_dynamic`` has one output form (QOperator: DynamicQuantizeLinear,
MatMulInteger / ConvInteger and the Cast / Mul glue; activations are always
uint8). Each float model is quantized with int8 and uint8 weights, per tensor
and per channel (and the attention block with MatMuls of two activations), so
that tests see what the tool writes. Nothing is downloaded.

- ``dynamic_models() -> dict[str, onnx.ModelProto]``: keyed ``"<model>-dyn_<s8|u8>[_perchannel]"``, fresh copies.
- ``dynamic_feeds(name) -> dict[str, np.ndarray]``: a deterministic input.
"""

from __future__ import annotations

import functools
import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.corpus import _model, _quiet, _samples, _seed, _weights, attention, cnn, mlp


def matmul() -> onnx.ModelProto:
    """One MatMul + Add on a batched 3-D input."""
    rng = np.random.default_rng(404)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"), helper.make_node("Add", ["h", "b"], ["y"], name="bias")]
    return _model("matmul", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 6])],
                  [_weights(rng, "w", [8, 6]), _weights(rng, "b", [6], 0.1)])


def gemm() -> onnx.ModelProto:
    """Gemm with a transposed weight (quantize_dynamic writes MatMul on the transposed weight, then Add)."""
    rng = np.random.default_rng(505)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transB=1)]
    return _model("gemm", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 10])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 5])],
                  [_weights(rng, "w", [5, 10]), _weights(rng, "b", [5], 0.1)])


def conv() -> onnx.ModelProto:
    """Conv with bias, padding and stride."""
    rng = np.random.default_rng(606)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1], strides=[2, 2])]
    return _model("conv", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 7, 7])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])],
                  [_weights(rng, "w", [4, 3, 3, 3]), _weights(rng, "b", [4], 0.1)])


def conv_constant_weight() -> onnx.ModelProto:
    """Conv without bias whose weight is a Constant node, as paddle2onnx writes them (PP-OCR cls):
    quantize_dynamic then quantizes the weight at run time too (DynamicQuantizeLinear on both ConvInteger operands;
    with a bias it refuses a non-initializer weight)."""
    rng = np.random.default_rng(707)
    nodes = [helper.make_node("Constant", [], ["w"], value=_weights(rng, "w", [4, 3, 3, 3])),
             helper.make_node("Conv", ["x", "w"], ["h"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    return _model("conv_constant_weight", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], [])


FLOAT_MODELS = {"matmul": matmul, "gemm": gemm, "conv": conv, "mlp": mlp, "cnn": cnn, "attention": attention,
                "conv_constant_weight": conv_constant_weight}
# setting -> (quantize_dynamic options, the models it applies to; None: all)
SETTINGS = {
    "dyn_s8": (dict(weight_type="QInt8"), None),
    "dyn_u8": (dict(weight_type="QUInt8"), None),
    "dyn_s8_perchannel": (dict(weight_type="QInt8", per_channel=True), None),
    "dyn_u8_perchannel": (dict(weight_type="QUInt8", per_channel=True), None),
    # every MatMul, also of two activations (Q.K^T, attention.V): both operands quantized at run time
    "dyn_s8_activations": (dict(weight_type="QInt8", extra_options={"MatMulConstBOnly": False}), ("attention",)),
}


@functools.cache
def _built() -> dict[str, bytes]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = {}
    with tempfile.TemporaryDirectory(prefix="onnx-qtypes-dynamic-") as folder:
        for model_name, make in FLOAT_MODELS.items():
            for setting, (kwargs, applies_to) in SETTINGS.items():
                if applies_to is not None and model_name not in applies_to:
                    continue
                path = os.path.join(folder, f"{model_name}-{setting}.onnx")
                options = dict(kwargs, weight_type=QuantType[kwargs["weight_type"]])
                with _quiet():
                    quantize_dynamic(make(), path, **options)
                out[f"{model_name}-{setting}"] = open(path, "rb").read()
    return out


def dynamic_models() -> dict[str, onnx.ModelProto]:
    """Every quantize_dynamic corpus model (fresh copies)."""
    return {name: onnx.load_from_string(data) for name, data in _built().items()}


def dynamic_feeds(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    model_name = name.split("-", 1)[0]
    return _samples(FLOAT_MODELS[model_name](), _seed(f"{model_name}/dynamic/{seed}"), 1)[0]
