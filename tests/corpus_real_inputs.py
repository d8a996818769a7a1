"""Quantized models whose inputs are sized at run time, as OCR and transformer exports are.

Two float models, written the way their exporters write them, quantized by onnxruntime:

- ``ocr_det``: a PaddleOCR-detection-like network at opset 11, the input declared [-1, 3, -1, -1] (paddle2onnx
  writes -1 as dim_value): Conv / BatchNormalization (with `momentum`, as paddle2onnx writes it) / Relu,
  a strided Conv, ConvTranspose back up, Resize (nearest, x2), Conv 1x1, Sigmoid. onnxruntime leaves the
  BatchNormalizations in float between Q/DQ; onnx.reference took them for training mode.
- ``bert_embed``: a BERT-embeddings-like block at opset 17, input_ids [batch, sequence]: word, position and
  token-type embeddings (the token types gathered with GatherElements from a [1, 512] buffer, as torch exports
  HuggingFace BertEmbeddings), LayerNormalization, MatMul, GELU written with Erf, MatMul, Softmax.

``models()`` gives ``"<model>-<setting>"`` -> quantized model for the settings qdq_u8, qop_u8 (quantize_static)
and, for bert_embed, dynamic (quantize_dynamic); ``feeds(name, shape_index)`` a deterministic input of one of
``SHAPES[model]`` sizes. Built in memory once per process.
"""

from __future__ import annotations

import functools
import pathlib
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.corpus import _quiet, _Reader  # noqa: PLC2701 - the corpus's own helpers

SHAPES = {"ocr_det": [(1, 3, 32, 48), (2, 3, 48, 32)], "bert_embed": [(1, 5), (2, 9)]}
VOCAB, HIDDEN, FFN, MAX_POSITIONS = 50, 16, 32, 512


def _w(rng: np.random.Generator, name: str, shape: list[int], std: float = 0.3) -> TensorProto:
    return numpy_helper.from_array(rng.normal(0.0, std, size=shape).astype(np.float32), name)


def _bn(rng: np.random.Generator, prefix: str, channels: int) -> list[TensorProto]:
    return [numpy_helper.from_array(a.astype(np.float32), f"{prefix}_{n}") for n, a in (
        ("scale", rng.uniform(0.5, 1.5, channels)), ("bias", rng.normal(0, 0.2, channels)),
        ("mean", rng.normal(0, 0.3, channels)), ("var", rng.uniform(0.5, 2.0, channels)))]


def ocr_det() -> onnx.ModelProto:
    rng = np.random.default_rng(1111)
    inits = [_w(rng, "w1", [8, 3, 3, 3]), *_bn(rng, "bn1", 8), _w(rng, "w2", [16, 8, 3, 3]), *_bn(rng, "bn2", 16),
             _w(rng, "wt", [16, 8, 2, 2]), *_bn(rng, "bn3", 8), _w(rng, "w4", [1, 8, 1, 1]),
             numpy_helper.from_array(np.array([], np.float32), "roi"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]

    def bn(x: str, prefix: str, y: str) -> onnx.NodeProto:
        return helper.make_node("BatchNormalization", [x, *(f"{prefix}_{n}" for n in ("scale", "bias", "mean", "var"))],
                                [y], name=prefix, epsilon=1e-5, momentum=0.9)

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        bn("c1", "bn1", "n1"), helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
        bn("c2", "bn2", "n2"), helper.make_node("Relu", ["n2"], ["r2"], name="relu2"),
        helper.make_node("ConvTranspose", ["r2", "wt"], ["up"], name="deconv", strides=[2, 2]),
        bn("up", "bn3", "n3"), helper.make_node("Relu", ["n3"], ["r3"], name="relu3"),
        helper.make_node("Resize", ["r3", "roi", "scales"], ["big"], name="resize", mode="nearest"),
        helper.make_node("Conv", ["big", "w4"], ["logits"], name="head"),
        helper.make_node("Sigmoid", ["logits"], ["maps"], name="prob"),
    ]
    graph = helper.make_graph(nodes, "ocr_det", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 1, 1])],
                              [helper.make_tensor_value_info("maps", TensorProto.FLOAT, [1, 1, 1, 1])], inits)
    for value in (*graph.input, *graph.output):  # paddle2onnx: -1 for every size fixed only at run time
        dims = value.type.tensor_type.shape.dim
        for i in (0, 2, 3):
            dims[i].dim_value = -1
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=7)
    model.producer_name = "onnx-qtypes tests/corpus_real_inputs.py"
    return model


def bert_embed() -> onnx.ModelProto:
    rng = np.random.default_rng(2222)
    inits = [
        _w(rng, "word_embeddings", [VOCAB, HIDDEN]), _w(rng, "position_embeddings", [MAX_POSITIONS, HIDDEN], 0.1),
        _w(rng, "token_type_embeddings", [2, HIDDEN], 0.1),
        numpy_helper.from_array(np.arange(MAX_POSITIONS, dtype=np.int64).reshape(1, -1), "position_ids"),
        numpy_helper.from_array(np.zeros((1, MAX_POSITIONS), np.int64), "token_type_ids"),
        numpy_helper.from_array(np.ones(HIDDEN, np.float32), "ln_scale"),
        numpy_helper.from_array(np.zeros(HIDDEN, np.float32), "ln_bias"),
        _w(rng, "w_in", [HIDDEN, FFN]), _w(rng, "b_in", [FFN], 0.1), _w(rng, "w_out", [FFN, HIDDEN]),
        numpy_helper.from_array(np.array([0], np.int64), "zero"), numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([2], np.int64), "two"),
        numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one_f"), numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ]
    nodes = [
        helper.make_node("Shape", ["input_ids"], ["ids_shape"]),
        helper.make_node("Slice", ["ids_shape", "one", "two"], ["seq"]),
        helper.make_node("Slice", ["position_ids", "zero", "seq", "one"], ["positions"]),
        helper.make_node("GatherElements", ["token_type_ids", "positions"], ["types"], axis=1, name="token_types"),
        helper.make_node("Expand", ["types", "ids_shape"], ["token_type"]),
        helper.make_node("Gather", ["word_embeddings", "input_ids"], ["words"], name="word_lookup"),
        helper.make_node("Gather", ["token_type_embeddings", "token_type"], ["type_vectors"], name="type_lookup"),
        helper.make_node("Gather", ["position_embeddings", "positions"], ["position_vectors"], name="position_lookup"),
        helper.make_node("Add", ["words", "type_vectors"], ["sum1"], name="add_types"),
        helper.make_node("Add", ["sum1", "position_vectors"], ["embedded"], name="add_positions"),
        helper.make_node("LayerNormalization", ["embedded", "ln_scale", "ln_bias"], ["normed"], name="layer_norm",
                         axis=-1, epsilon=1e-12),
        helper.make_node("MatMul", ["normed", "w_in"], ["h"], name="ffn_in"),
        helper.make_node("Add", ["h", "b_in"], ["hb"], name="ffn_bias"),
        helper.make_node("Div", ["hb", "sqrt2"], ["hs"], name="gelu_div"),
        helper.make_node("Erf", ["hs"], ["he"], name="gelu_erf"),
        helper.make_node("Add", ["he", "one_f"], ["he1"], name="gelu_add"),
        helper.make_node("Mul", ["hb", "he1"], ["hm"], name="gelu_mul"),
        helper.make_node("Mul", ["hm", "half"], ["act"], name="gelu_half"),
        helper.make_node("MatMul", ["act", "w_out"], ["o"], name="ffn_out"),
        helper.make_node("Softmax", ["o"], ["y"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(nodes, "bert_embed",
                              [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", HIDDEN])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model.producer_name = "onnx-qtypes tests/corpus_real_inputs.py"
    return model


FLOAT_MODELS = {"ocr_det": ocr_det, "bert_embed": bert_embed}


def feeds(name: str, shape_index: int = 0, seed: int = 0) -> dict[str, np.ndarray]:
    """An input for model ``name`` ("<model>" or "<model>-<setting>") of size SHAPES[model][shape_index]."""
    model = name.split("-", 1)[0]
    shape = SHAPES[model][shape_index]
    rng = np.random.default_rng([seed, shape_index, len(model)])
    if model == "bert_embed":
        return {"input_ids": rng.integers(0, VOCAB, shape).astype(np.int64)}
    return {"x": rng.normal(0.0, 1.0, shape).astype(np.float32)}


@functools.cache
def _built() -> dict[str, bytes]:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    settings = {
        "qdq_u8": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8),
        "qop_u8": dict(quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8,
                       weight_type=QuantType.QUInt8),
    }
    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="onnx-qtypes-real-inputs-") as folder:
        for model_name, make in FLOAT_MODELS.items():
            float_path = pathlib.Path(folder) / f"{model_name}.onnx"
            onnx.save(make(), float_path)
            samples = [feeds(model_name, i % 2, seed=100 + i) for i in range(4)]  # both sizes
            for setting, kwargs in settings.items():
                path = pathlib.Path(folder) / f"{model_name}-{setting}.onnx"
                with _quiet():
                    quantize_static(float_path, path, _Reader(samples), **kwargs)
                out[f"{model_name}-{setting}"] = path.read_bytes()
            if model_name == "bert_embed":
                path = pathlib.Path(folder) / f"{model_name}-dynamic.onnx"
                with _quiet():
                    quantize_dynamic(float_path, path, weight_type=QuantType.QUInt8)
                out[f"{model_name}-dynamic"] = path.read_bytes()
    return out


def models() -> dict[str, onnx.ModelProto]:
    """Every quantized model (fresh copies), keyed "<model>-<setting>"."""
    return {name: onnx.load_from_string(data) for name, data in _built().items()}


def float_models() -> dict[str, onnx.ModelProto]:
    return {name: make() for name, make in FLOAT_MODELS.items()}
