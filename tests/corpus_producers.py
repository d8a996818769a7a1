"""Small float models quantized by onnxruntime 1.32's ``quantize_static`` the way real models hit the lift's edges.

Built at test time (each model is a few kilobytes; quantizing all takes about a second). The float models have
what the producer corpus (benchmarks/producer_corpus.py) found in real files:

- ``ops``: every QOperator node onnxruntime's quantizer writes downstream of a Conv (QLinearSigmoid, QLinearMul with
  an activation and with a constant, QLinearAdd, QLinearLeakyRelu, QLinearAveragePool, QLinearConcat,
  QLinearGlobalAveragePool, QGemm with alpha != 1, QLinearMatMul, QLinearWhere, QLinearSoftmax with its ``opset``
  attribute and a non-default axis);
- ``shared_bias``: two Convs that share one float bias initializer (exporters deduplicate equal initializers),
  which onnxruntime quantizes once, at the first Conv's scale;
- ``pad``: a constant Pad after an Add, which the QOperator form runs on the stored integers, padding with the very
  zero-point initializer the QLinearAdd writes its output with (torchvision's swin_t has it).

``producer_models()`` -> {"<model>-<setting>-opset<N>": ModelProto} (fresh copies); ``producer_feeds(name)``.
"""

from __future__ import annotations

import functools
import pathlib
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.corpus import _quiet

OPSETS = (11, 13, 21)


def _w(rng: np.random.Generator, name: str, shape: tuple[int, ...], std: float = 0.3) -> TensorProto:
    return numpy_helper.from_array(rng.normal(0, std, shape).astype(np.float32), name)


def _model(name: str, nodes: list, output_shape: list[int], inits: list, opset: int) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10 if opset >= 21 else 7)
    onnx.checker.check_model(model, full_check=True)
    return model


def ops(opset: int) -> onnx.ModelProto:
    rng = np.random.default_rng(2020)
    inits = [_w(rng, "w1", (8, 3, 3, 3)), _w(rng, "b1", (8,), 0.1), _w(rng, "w2", (8, 8, 1, 1)), _w(rng, "b2", (8,), 0.1),
             _w(rng, "wg", (6, 16)), _w(rng, "bg", (6,), 0.1), _w(rng, "cm", (1, 8, 1, 1), 1.0),
             _w(rng, "ca", (1, 8, 1, 1), 1.0), _w(rng, "wm", (6, 6)), _w(rng, "alt", (1, 6), 1.0),
             numpy_helper.from_array(np.zeros((1, 6), np.float32), "zero")]
    softmax_axis = {"axis": 1} if opset < 13 else {}  # Softmax-11's default axis is 1: QLinearSoftmax keeps it
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1] * 4, name="conv1"),
        helper.make_node("Sigmoid", ["c1"], ["s1"], name="sigmoid"),
        helper.make_node("Mul", ["c1", "s1"], ["m1"], name="swish"),
        helper.make_node("Mul", ["m1", "cm"], ["m2"], name="mul_const"),
        helper.make_node("Add", ["m2", "ca"], ["a2"], name="add_const"),
        helper.make_node("LeakyRelu", ["a2"], ["l1"], alpha=0.1, name="leaky"),
        helper.make_node("AveragePool", ["l1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="avgpool"),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2"),
        helper.make_node("Add", ["c2", "p1"], ["r2"], name="residual"),
        helper.make_node("Concat", ["r2", "p1"], ["cat"], axis=1, name="concat"),
        helper.make_node("GlobalAveragePool", ["cat"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["h"], transB=1, alpha=0.5, name="fc"),
        helper.make_node("MatMul", ["h", "wm"], ["h2"], name="matmul"),
        helper.make_node("Greater", ["h2", "zero"], ["positive"], name="greater"),
        helper.make_node("Where", ["positive", "h2", "alt"], ["w"], name="where"),
        helper.make_node("Softmax", ["w"], ["y"], name="softmax", **softmax_axis),
    ]
    return _model("ops", nodes, [1, 6], inits, opset)


def shared_bias(opset: int) -> onnx.ModelProto:
    rng = np.random.default_rng(2121)
    inits = [_w(rng, "w1", (4, 3, 3, 3)), _w(rng, "w2", (4, 4, 3, 3), 0.9), _w(rng, "b", (4,), 0.1)]
    nodes = [helper.make_node("Conv", ["x", "w1", "b"], ["c1"], pads=[1] * 4, name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
             helper.make_node("Conv", ["r1", "w2", "b"], ["y"], pads=[1] * 4, name="conv2")]
    return _model("shared_bias", nodes, [1, 4, 8, 8], inits, opset)


def pad(opset: int) -> onnx.ModelProto:
    rng = np.random.default_rng(2222)
    inits = [_w(rng, "w1", (4, 3, 3, 3)), _w(rng, "w2", (4, 3, 1, 1)), _w(rng, "w3", (4, 4, 3, 3)),
             numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1] * 4, name="conv1"),
             helper.make_node("Conv", ["x", "w2"], ["c2"], name="conv2"),
             helper.make_node("Add", ["c1", "c2"], ["a"], name="add"),
             helper.make_node("Pad", ["a", "pads"], ["p"], name="pad"),  # pads with 0: the quantizer passes a zero point
             helper.make_node("Conv", ["p", "w3"], ["y"], name="conv3")]
    return _model("pad", nodes, [1, 4, 8, 8], inits, opset)


FLOAT_MODELS = {"ops": ops, "shared_bias": shared_bias, "pad": pad}


def _settings() -> dict[str, dict]:
    from onnxruntime.quantization import QuantFormat, QuantType

    forced = {"ForceQuantizeNoInputCheck": True}  # QLinearWhere is written only with it
    return {
        "qop_u8": dict(quant_format=QuantFormat.QOperator, extra_options=forced),
        "qop_s8_perchannel": dict(quant_format=QuantFormat.QOperator, per_channel=True, activation_type=QuantType.QInt8,
                                  weight_type=QuantType.QInt8, extra_options=forced),
        "qdq_s8_perchannel": dict(quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QInt8,
                                  weight_type=QuantType.QInt8),
    }


def feeds(seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).normal(0, 1, (1, 3, 8, 8)).astype(np.float32)}


class _Reader:
    def __init__(self) -> None:
        self.items = iter([feeds(1000 + k) for k in range(4)])

    def get_next(self):
        return next(self.items, None)


@functools.cache
def _built() -> dict[str, bytes]:
    from onnxruntime.quantization import quantize_static

    out = {}
    with tempfile.TemporaryDirectory() as folder:
        root = pathlib.Path(folder)
        for model_name, make in FLOAT_MODELS.items():
            for opset in OPSETS:
                source = root / f"{model_name}-{opset}.onnx"
                onnx.save(make(opset), source)
                for setting, kwargs in _settings().items():
                    if setting.startswith("qdq") and opset < 13:
                        continue  # per-channel DequantizeLinear needs opset 13
                    target = root / f"{model_name}-{setting}-{opset}.onnx"
                    with _quiet():
                        quantize_static(source, target, _Reader(), **kwargs)
                    out[f"{model_name}-{setting}-opset{opset}"] = target.read_bytes()
    return out


def producer_models() -> dict[str, onnx.ModelProto]:
    return {name: onnx.load_from_string(data) for name, data in _built().items()}


def output_step(model: onnx.ModelProto, output: str = "y") -> float:
    """One step of graph output ``output``: the scale of the DequantizeLinear (any domain) writing it."""
    node = next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == output)
    return float(numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == node.input[1])))


def producer_feeds(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    return feeds(seed)
