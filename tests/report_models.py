"""Typed models with calibration histograms, for the HTML report's tests (and a look at it in a browser)."""

from __future__ import annotations

import numpy as np
import onnx
from builders import IR_VERSION, OPSET, add_model, load_script

from onnx_qtypes import QType, Statistics, TensorStatistics, get_qtype, set_qtype
from onnx_qtypes.proto.encoding import tensor_array
from onnx_qtypes.proto.model import set_statistics

BINS = {"x_q": 64, "conv_q": 48, "w": 32}
W_CHANNEL_BINS = 16


def statistics_of(samples: np.ndarray, bins: int) -> Statistics:
    counts, edges = np.histogram(samples, bins=bins)
    return Statistics(min=float(samples.min()), max=float(samples.max()), mean=float(samples.mean()),
                      std=float(samples.std()), count=int(samples.size),
                      histogram_edges=tuple(edges.tolist()), histogram_counts=tuple(counts.tolist()))


def typed_cnn_with_histograms() -> onnx.ModelProto:
    """The bundled typed_cnn example with histograms: x_q (a normal sample, a little of it past the int8
    range), conv_q (a long right tail), and w per channel (from its own dequantized values)."""
    model = load_script("examples/make_examples.py").typed_cnn()
    rng = np.random.default_rng(7)
    x = rng.normal(0.0, 1.0, 20000)
    conv = np.concatenate([rng.normal(0.2, 0.4, 12000), rng.exponential(1.6, 8000)])
    set_statistics(model, "x_q", TensorStatistics(tensor=statistics_of(x, BINS["x_q"]), method="minmax"))
    set_statistics(model, "conv_q", TensorStatistics(tensor=statistics_of(conv, BINS["conv_q"]), method="percentile"))
    w = get_qtype(model, "w")
    q = tensor_array(next(t for t in model.graph.initializer if t.name == "w")).astype(np.float64)
    real = q * np.asarray(w.scale)[:, None, None, None]
    per_axis = tuple(statistics_of(real[c].ravel(), W_CHANNEL_BINS) for c in range(real.shape[0]))
    set_statistics(model, "w", TensorStatistics(tensor=statistics_of(real.ravel(), BINS["w"]), axis=0,
                                                per_axis=per_axis, method="minmax"))
    return model


HOSTILE = '<script>alert("x")</script>&<b>'


def hostile_names_model() -> onnx.ModelProto:
    """c = Add(a, b) with ``a`` renamed to markup, quantized with statistics, and a finding naming it."""
    model = add_model()
    for vi in model.graph.input[:1]:
        vi.name = HOSTILE
    model.graph.node[0].input[0] = HOSTILE
    stats = TensorStatistics(tensor=statistics_of(np.linspace(-1, 1, 101), 10))
    set_qtype(model, HOSTILE, QType("int8", 0.01, 0, statistics=stats))
    set_qtype(model, "b", QType("int8", 0.01, 0))
    set_qtype(model, "c", QType("int8", 0.02, 300, validate=False))  # zero point outside int8: a finding
    return model


CLIPPING_CHANNELS = (3, 20)


def per_axis_clipping_model(channels: int = 24) -> onnx.ModelProto:
    """b = Identity(a), ``a`` int8 per-axis with a histogram per channel; channels CLIPPING_CHANNELS get
    scales 0.6x too small, so their values clip (the checker's QT208 names each such slice)."""
    model = onnx.helper.make_model(
        onnx.helper.make_graph([onnx.helper.make_node("Identity", ["a"], ["b"])], "g",
                               [onnx.helper.make_tensor_value_info("a", onnx.TensorProto.INT8, [channels, 32])],
                               [onnx.helper.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [channels, 32])]),
        opset_imports=[onnx.helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    rng = np.random.default_rng(1)
    values = rng.normal(0, 1, (channels, 32)) * rng.uniform(0.2, 2, (channels, 1))
    shrink = np.where(np.isin(np.arange(channels), CLIPPING_CHANNELS), 0.6, 1.0)
    scales = (np.abs(values).max(axis=1) / 127 * shrink).astype(np.float32).astype(float)
    stats = TensorStatistics(tensor=statistics_of(values.ravel(), 40), axis=0,
                             per_axis=tuple(statistics_of(v, 16) for v in values))
    set_qtype(model, "a", QType("int8", scales, [0] * channels, axis=0, schema="symmetric", statistics=stats))
    return model


def relu_chain_with_histograms(tensors: int, bins: int = 2048) -> onnx.ModelProto:
    """x -> Relu -> ... -> Relu: ``tensors`` int8 activations with 2048-bin histograms of calibration size.
    Tensor ``t7`` has an invalid zero point (an error), ``t11`` a range that clips 5 % of its histogram and
    ``t13`` one that clips 1 %; the rest clip nothing."""
    from onnx import TensorProto, helper

    from onnx_qtypes.proto.model import set_qtypes

    rng = np.random.default_rng(9)
    names = [f"t{k}" for k in range(tensors)]
    nodes = [helper.make_node("Relu", [a], [b]) for a, b in zip(names, names[1:])]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info(names[0], TensorProto.FLOAT, [64])],
                              [helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, [64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    values = np.abs(rng.normal(0, 1, 50_000))
    stats = TensorStatistics(tensor=statistics_of(values, bins), method="minmax")
    top = float(values.max())
    types = {n: QType("int8", top / 127, 0, statistics=stats) for n in names}
    types["t7"] = QType("int8", top / 127, 300, statistics=stats, validate=False)
    for name, share in (("t11", 0.05), ("t13", 0.01)):
        types[name] = QType("int8", float(np.quantile(values, 1 - share)) / 127, 0, statistics=stats)
    set_qtypes(model, types)
    return model
