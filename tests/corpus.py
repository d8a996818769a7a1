"""The interop test corpus: small float models quantized by onnxruntime.

Nearly every quantized ONNX model in use was written by
``onnxruntime.quantization.quantize_static``. This module builds three small
float models and quantizes each of them under several settings, so that tests
see exactly what that tool writes (QDQ pairs, QOperator ops, dropped Relus,
int32 biases, per-channel and blocked weights). Nothing is downloaded.

Stable API (other test modules import it; keep it small):

- ``corpus_models() -> dict[str, onnx.ModelProto]``: every quantized model,
  keyed ``"<model>-<setting>"`` (e.g. ``"cnn-qdq_s8_perchannel"``). Each call
  returns fresh copies, so callers may modify them.
- ``corpus_paths() -> dict[str, pathlib.Path]``: the same models as files.
- ``corpus_feeds(name) -> dict[str, np.ndarray]``: a deterministic test input
  for a corpus (or float) model, drawn apart from the calibration samples.
- ``calibration_cache(name) -> pathlib.Path``: onnxruntime's calibration
  cache (``TensorsData`` as JSON) that quantized the model.
- ``calibration_samples(name) -> list[dict[str, np.ndarray]]``: the inputs
  that calibration saw.
- ``run_onnxruntime(model, feeds, optimize=True) -> dict[str, np.ndarray]``:
  one CPU run (outputs by name), optimizations at onnxruntime's defaults, or
  with ``optimize=False`` all graph optimizations disabled (``ORT_DISABLE_ALL``:
  its definition path, DequantizeLinear -> float op -> QuantizeLinear).
- ``float_models() -> dict[str, onnx.ModelProto]``: the float sources
  (``"cnn"``, ``"mlp"``, ``"attention"``).
- ``MODELS``, ``SETTINGS``: the names that make up the keys.

Everything is built once per test session (per process) in a temporary
folder, removed at exit; set ``ONNX_QTYPES_CORPUS_DIR`` to keep and reuse the
files between sessions. Models are written at IR 10 / opset 21, which
onnxruntime 1.31 loads.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import logging
import os
import pathlib
import shutil
import tempfile
from collections.abc import Callable, Iterator

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION, OPSET = 10, 21
CALIBRATION_SAMPLES = 4
_VERSION = "1"  # bump when the models or settings change (invalidates ONNX_QTYPES_CORPUS_DIR caches)


# --- the float models ----------------------------------------------------------


def _weights(rng: np.random.Generator, name: str, shape: list[int], std: float = 0.3) -> TensorProto:
    return numpy_helper.from_array(rng.normal(0.0, std, size=shape).astype(np.float32), name)


def _model(name: str, nodes: list, inputs: list, outputs: list, inits: list) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    model.producer_name = "onnx-qtypes tests/corpus.py"
    onnx.checker.check_model(model, full_check=True)
    return model


def cnn() -> onnx.ModelProto:
    """Conv-Relu, Conv + residual Add, Relu, MaxPool, GlobalAveragePool, Flatten, Gemm."""
    rng = np.random.default_rng(101)
    inits = [
        _weights(rng, "w1", [4, 3, 3, 3]),
        _weights(rng, "b1", [4], 0.1),
        _weights(rng, "w2", [4, 4, 3, 3]),
        _weights(rng, "b2", [4], 0.1),
        _weights(rng, "wg", [5, 4]),
        _weights(rng, "bg", [5], 0.1),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["res"], name="residual"),
        helper.make_node("Relu", ["res"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["pool"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["pool"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "wg", "bg"], ["y"], name="fc", transB=1),
    ]
    return _model(
        "cnn",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        inits,
    )


def mlp() -> onnx.ModelProto:
    """MatMul + Add, Relu, MatMul + Add."""
    rng = np.random.default_rng(202)
    inits = [
        _weights(rng, "w1", [16, 32], 0.25),
        _weights(rng, "b1", [32], 0.1),
        _weights(rng, "w2", [32, 8], 0.2),
        _weights(rng, "b2", [8], 0.1),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="fc1_bias"),
        helper.make_node("Relu", ["hb"], ["hr"], name="relu"),
        helper.make_node("MatMul", ["hr", "w2"], ["o"], name="fc2"),
        helper.make_node("Add", ["o", "b2"], ["y"], name="fc2_bias"),
    ]
    return _model(
        "mlp",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        inits,
    )


def attention() -> onnx.ModelProto:
    """One two-head self-attention block: MatMul, Reshape, Transpose, Softmax, Concat."""
    rng = np.random.default_rng(303)
    seq, dim, heads = 4, 8, 2
    head = dim // heads
    inits = [
        _weights(rng, "wq", [dim, dim]),
        _weights(rng, "wk", [dim, dim]),
        _weights(rng, "wv", [dim, dim]),
        _weights(rng, "wo", [2 * dim, dim], 0.2),
        numpy_helper.from_array(np.array([1, seq, heads, head], np.int64), "split_heads"),
        numpy_helper.from_array(np.array([1, seq, dim], np.int64), "merge_heads"),
        numpy_helper.from_array(np.array(1.0 / np.sqrt(head), np.float32), "inv_sqrt_d"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="proj_q"),
        helper.make_node("MatMul", ["x", "wk"], ["k"], name="proj_k"),
        helper.make_node("MatMul", ["x", "wv"], ["v"], name="proj_v"),
        helper.make_node("Reshape", ["q", "split_heads"], ["q4"], name="reshape_q"),
        helper.make_node("Reshape", ["k", "split_heads"], ["k4"], name="reshape_k"),
        helper.make_node("Reshape", ["v", "split_heads"], ["v4"], name="reshape_v"),
        helper.make_node("Transpose", ["q4"], ["qh"], name="heads_q", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k4"], ["kt"], name="heads_k", perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v4"], ["vh"], name="heads_v", perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qh", "kt"], ["scores"], name="scores"),
        helper.make_node("Mul", ["scores", "inv_sqrt_d"], ["scaled"], name="scale"),
        helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "vh"], ["ctx"], name="context"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="merge_t", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "merge_heads"], ["attn"], name="merge"),
        helper.make_node("Concat", ["attn", "x"], ["cat"], name="concat", axis=-1),
        helper.make_node("MatMul", ["cat", "wo"], ["y"], name="proj_out"),
    ]
    return _model(
        "attention",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, dim])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, dim])],
        inits,
    )


FLOAT_MODELS: dict[str, Callable[[], onnx.ModelProto]] = {"cnn": cnn, "mlp": mlp, "attention": attention}
MODELS = tuple(FLOAT_MODELS)


# --- the quantization settings ---------------------------------------------------


def _settings() -> dict[str, tuple[dict, tuple[str, ...]]]:
    """Setting name -> (quantize_static keyword arguments, models it applies to)."""
    from onnxruntime.quantization import QuantFormat, QuantType

    every = MODELS
    return {
        # int8 activations, int8 per-channel symmetric weights (onnxruntime's default QDQ recipe)
        "qdq_s8_perchannel": (
            dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                 per_channel=True),
            every,
        ),
        # uint8 everywhere, asymmetric, per-tensor
        "qdq_u8_pertensor": (
            dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8,
                 extra_options={"WeightSymmetric": False, "ActivationSymmetric": False}),
            every,
        ),
        # QLinearConv / QLinearMatMul and com.microsoft QLinearAdd, QLinearConcat, QGemm, ...
        "qop_u8": (
            dict(quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8,
                 weight_type=QuantType.QUInt8),
            every,
        ),
        # int16 activations with int8 weights (opset 21 Q/DQ)
        "qdq_a16w8": (
            dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt16, weight_type=QuantType.QInt8),
            every,
        ),
        # 7-bit weights, as recommended for x86 without VNNI
        "qdq_reduce_range": (
            dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                 per_channel=True, reduce_range=True),
            every,
        ),
        # uint16 activations, uint4 per-channel weights
        "qdq_u16_u4": (
            dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt16, weight_type=QuantType.QUInt4,
                 per_channel=True, extra_options={"WeightSymmetric": False}),
            every,
        ),
        # int4 weights in blocks of 4 along axis 0 (onnxruntime blocks rank-2 weights only)
        "qdq_w4_blocked": (
            dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt4,
                 extra_options={"BlockSize": 4}),
            ("mlp", "attention"),
        ),
    }


SETTINGS = tuple(_settings())


# --- building and caching ----------------------------------------------------------


def _input_shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    return {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}


def _samples(model: onnx.ModelProto, seed: int, count: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    shapes = _input_shapes(model)
    return [{n: rng.normal(0.0, 1.0, size=s).astype(np.float32) for n, s in shapes.items()} for _ in range(count)]


class _Reader:
    """onnxruntime CalibrationDataReader over a fixed list of samples."""

    def __init__(self, samples: list[dict[str, np.ndarray]]) -> None:
        self._items = iter(samples)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._items, None)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """quantize_static logs advice on every call; keep test output clean."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


@functools.cache
def _folder() -> pathlib.Path:
    kept = os.environ.get("ONNX_QTYPES_CORPUS_DIR")
    if kept:
        folder = pathlib.Path(kept) / f"v{_VERSION}"
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    folder = pathlib.Path(tempfile.mkdtemp(prefix="onnx-qtypes-corpus-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.cache
def _build() -> dict[str, pathlib.Path]:
    from onnxruntime.quantization import quantize_static

    folder = _folder()
    out: dict[str, pathlib.Path] = {}
    for model_name, make in FLOAT_MODELS.items():
        float_path = folder / f"{model_name}.onnx"
        if not float_path.exists():
            onnx.save(make(), float_path)
        for setting, (kwargs, applies_to) in _settings().items():
            if model_name not in applies_to:
                continue
            name = f"{model_name}-{setting}"
            path, cache = folder / f"{name}.onnx", folder / f"{name}.calibration.json"
            if not (path.exists() and cache.exists()):
                samples = calibration_samples(model_name)
                tmp = folder / f".{name}.{os.getpid()}.tmp.onnx"  # unique: sessions may share ONNX_QTYPES_CORPUS_DIR
                with _quiet():
                    quantize_static(float_path, tmp, _Reader(samples), calibration_cache_path=cache, **kwargs)
                os.replace(tmp, path)
            out[name] = path
    return out


def _seed(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")


@functools.cache
def _loaded() -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in _build().items()}


# --- the API -------------------------------------------------------------------------


def corpus_paths() -> dict[str, pathlib.Path]:
    """Every quantized corpus model as a file, keyed "<model>-<setting>"."""
    return dict(_build())


def corpus_models() -> dict[str, onnx.ModelProto]:
    """Every quantized corpus model (fresh copies), keyed "<model>-<setting>"."""
    return {name: onnx.load_from_string(data) for name, data in _loaded().items()}


def float_models() -> dict[str, onnx.ModelProto]:
    """The float models the corpus is quantized from."""
    return {name: make() for name, make in FLOAT_MODELS.items()}


def calibration_cache(name: str) -> pathlib.Path:
    """onnxruntime's calibration cache (TensorsData JSON) for corpus model ``name``."""
    return _build()[name].with_suffix(".calibration.json")


def calibration_samples(name: str) -> list[dict[str, np.ndarray]]:
    """The inputs onnxruntime calibrated corpus model ``name`` (or a float model) with."""
    model_name = name.split("-", 1)[0]
    return _samples(FLOAT_MODELS[model_name](), _seed(model_name), CALIBRATION_SAMPLES)


def run_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray], optimize: bool = True) -> dict[str, np.ndarray]:
    """Run ``model`` once on onnxruntime's CPU provider; outputs keyed by name. ``optimize=False`` disables
    every graph optimization (no fused QDQ kernels): the path tests compare our reference with."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    if not optimize:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def corpus_feeds(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """A deterministic input for corpus model ``name`` (or a float model name), unlike any calibration sample."""
    model_name = name.split("-", 1)[0]
    return _samples(FLOAT_MODELS[model_name](), _seed(f"{model_name}/test/{seed}"), 1)[0]
