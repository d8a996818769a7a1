"""NNCF-style symmetric weight compression, with the negative per-channel scales NNCF writes on purpose.

NNCF (3.4) ``compress_weights`` with INT8_SYM / INT4_SYM divides every channel (or group) of a MatMul
weight by its value of largest magnitude *with its sign*, over storage_min (-128, -8): that value is stored
as storage_min and the channel uses every level, and the channels whose extreme value is positive get a
negative scale. The file is plain QDQ: an integer initializer, a float scale, no zero point, and one
DequantizeLinear (axis -1 per channel; axis 0 with block_size per group) feeding the MatMul.

``handmade_models()`` builds that structure by the same recipe, without NNCF (the suite does not depend
on it); ``nncf_models()`` runs ``nncf.compress_weights`` itself on the same float model when nncf is
installed (``pip install nncf``), so that tests can show the handmade files are what NNCF writes.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION, OPSET = 10, 21
K, HIDDEN, N, BATCH = 32, 64, 16, 4
# name -> (storage, group size or None for per channel, NNCF's mode name)
MODES = {
    "int8_sym": (TensorProto.INT8, None, "INT8_SYM"),
    "int4_sym": (TensorProto.INT4, None, "INT4_SYM"),
    "int4_sym_g16": (TensorProto.INT4, 16, "INT4_SYM"),
}
STORAGE_MIN = {TensorProto.INT8: -128, TensorProto.INT4: -8}
STORAGE_MAX = {TensorProto.INT8: 127, TensorProto.INT4: 7}


def float_model(seed: int = 0) -> onnx.ModelProto:
    """x [4, 32] -> MatMul W1 [32, 64] -> Relu -> MatMul W2 [64, 16] -> y: the float model both are made from."""
    rng = np.random.default_rng(seed)
    w1 = rng.normal(size=(K, HIDDEN)).astype(np.float32)
    w2 = rng.normal(size=(HIDDEN, N)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "W2"], ["y"])],
        "nncf_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, N])],
        [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2")])
    return helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", OPSET)])


def compress(weight: np.ndarray, storage: int, group: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(stored integers, scales) of one [K, N] weight: per output channel (scales [N]) or per group of
    ``group`` rows (scales [K / group, N]); each slice's signed extreme maps to storage_min."""
    lo, hi = STORAGE_MIN[storage], STORAGE_MAX[storage]
    k, n = weight.shape
    slices = weight.reshape(k // group if group else 1, group or k, n)
    extreme = np.take_along_axis(slices, np.abs(slices).argmax(axis=1)[:, None, :], axis=1)  # [G, 1, N]
    scale = (extreme / np.float32(lo)).astype(np.float32)
    q = np.clip(np.rint(slices / scale), lo, hi).reshape(k, n).astype(np.int8)
    return q, scale[:, 0, :] if group else scale[0, 0, :]


def _compressed(model: onnx.ModelProto, storage: int, group: int | None) -> onnx.ModelProto:
    graph = model.graph
    weights = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    nodes, inits = [], []
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights:
            name = node.input[1]
            q, scale = compress(weights[name], storage, group)
            inits += [helper.make_tensor(f"{name}_quantized", storage, q.shape, q.reshape(-1).tolist()),
                      numpy_helper.from_array(scale, f"{name}_scale")]
            attrs = {"axis": 0, "block_size": group} if group else {"axis": -1}
            nodes.append(helper.make_node("DequantizeLinear", [f"{name}_quantized", f"{name}_scale"],
                                          [f"{name}_dequantized"], **attrs))
            node = helper.make_node("MatMul", [node.input[0], f"{name}_dequantized"], list(node.output))
        nodes.append(node)
    out = helper.make_graph(nodes, graph.name, graph.input, graph.output, inits)
    return helper.make_model(out, ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", OPSET)])


def handmade_models() -> dict[str, onnx.ModelProto]:
    """The NNCF-style models built here, keyed by mode name (fresh copies)."""
    return {name: _compressed(float_model(), storage, group) for name, (storage, group, _) in MODES.items()}


@functools.cache
def _nncf_bytes() -> dict[str, bytes]:
    try:
        import nncf
    except ImportError:
        return {}
    out = {}
    nncf_logger = logging.getLogger("nncf")
    level = nncf_logger.level
    nncf_logger.setLevel(logging.ERROR)
    try:
        for name, (_, group, mode) in MODES.items():
            kwargs = {} if mode == "INT8_SYM" else {"ratio": 1.0, "group_size": group or -1, "all_layers": True}
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                compressed = nncf.compress_weights(float_model(), mode=getattr(nncf.CompressWeightsMode, mode), **kwargs)
            out[name] = compressed.SerializeToString()
    finally:
        nncf_logger.setLevel(level)
    return out


def nncf_models() -> dict[str, onnx.ModelProto]:
    """The same modes written by nncf.compress_weights itself; empty when nncf is not installed."""
    return {name: onnx.load_from_string(data) for name, data in _nncf_bytes().items()}


def negative_slices(model: onnx.ModelProto) -> list[tuple[str, int, int, int]]:
    """Per DequantizeLinear: (integer tensor, slices, negative slices, negative slices holding storage_min),
    a slice being a channel or a group; the last count is how many cannot be negated exactly."""
    inits = {t.name: t for t in model.graph.initializer}
    out = []
    for node in model.graph.node:
        if node.op_type != "DequantizeLinear":
            continue
        stored, scale = inits[node.input[0]], numpy_helper.to_array(inits[node.input[1]])
        q = numpy_helper.to_array(stored).astype(np.int64)
        block = next((a.i for a in node.attribute if a.name == "block_size"), 0)
        slices = q.reshape(q.shape[0] // block, block, -1) if block else q[None]
        holds_min = (slices == STORAGE_MIN[stored.data_type]).any(axis=1).reshape(scale.shape)
        negative = scale < 0
        out.append((node.input[0], int(scale.size), int(negative.sum()), int((negative & holds_min).sum())))
    return out


def feeds(seed: int = 1) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).normal(size=(BATCH, K)).astype(np.float32)}
