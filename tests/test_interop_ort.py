"""Lift and lower on the onnxruntime corpus: the shape of the lifted model, and
bit-identical onnxruntime outputs after lower(lift(q))."""

from __future__ import annotations

from onnx_qtypes.proto.encoding import marker  # noqa: E402

import numpy as np
import onnx
import pytest
from corpus import MODELS, corpus_feeds, corpus_models, float_models, run_onnxruntime
from onnx import TensorProto

from onnx_qtypes import lift, lower, quantized_tensors
from onnx_qtypes.interop import lift_model

NAMES = sorted(corpus_models())
FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16)


@pytest.fixture(scope="module")
def corpus() -> dict[str, onnx.ModelProto]:
    return corpus_models()


@pytest.fixture(scope="module")
def lifted(corpus) -> dict[str, onnx.ModelProto]:
    return {name: lift(model) for name, model in corpus.items()}


def test_corpus_covers_the_issue_settings(corpus):
    settings = {name.split("-", 1)[1] for name in corpus}
    assert {"qdq_s8_perchannel", "qdq_u8_pertensor", "qop_u8", "qdq_a16w8", "qdq_reduce_range"} <= settings
    assert {name.split("-", 1)[0] for name in corpus} == set(MODELS)
    ops = {name: {n.op_type for n in m.graph.node} for name, m in corpus.items()}
    assert {"QLinearConv", "QLinearAdd", "QGemm", "QLinearGlobalAveragePool"} <= ops["cnn-qop_u8"]
    assert {"QLinearMatMul", "QLinearSoftmax", "QLinearConcat", "QLinearMul"} <= ops["attention-qop_u8"]
    assert {"MatMul", "Softmax", "Transpose", "Reshape", "Concat"} <= ops["attention-qdq_s8_perchannel"]
    assert "Relu" not in ops["cnn-qdq_u8_pertensor"]  # onnxruntime folded both Relus into the ranges


@pytest.mark.parametrize("name", NAMES)
def test_lifted_model_keeps_float_ops_between_typed_tensors(name, corpus, lifted):
    q, typed = corpus[name], lifted[name]
    graph = typed.graph
    # float interface unchanged
    assert [(i.name, i.type.tensor_type.elem_type) for i in graph.input] == [
        (i.name, i.type.tensor_type.elem_type) for i in q.graph.input
    ]
    assert all(o.type.tensor_type.elem_type in FLOAT_TYPES for o in graph.output)
    inputs, outputs = {i.name for i in graph.input}, {o.name for o in graph.output}
    for node in graph.node:
        assert node.domain in ("", "ai.onnx"), node  # no com.microsoft op survives
        if node.op_type == "QuantizeLinear":
            assert node.input[0] in inputs, f"QuantizeLinear inside the graph: {node}"
        if node.op_type == "DequantizeLinear":
            assert node.output[0] in outputs, f"DequantizeLinear inside the graph: {node}"
    # the float op sequence is the float model's, minus the Relus onnxruntime folded
    float_ops = [n.op_type for n in float_models()[name.split("-")[0]].graph.node if n.op_type != "Relu"]
    assert [n.op_type for n in graph.node if n.op_type not in ("QuantizeLinear", "DequantizeLinear")] == float_ops
    # every integer initializer of q is now a typed initializer
    types = quantized_tensors(typed)
    integer_inits = {t.name for t in q.graph.initializer if t.data_type not in FLOAT_TYPES + (TensorProto.INT64,)}
    weights = {t.name for t in graph.initializer if t.name in types}
    assert weights and weights <= integer_inits
    for init in graph.initializer:
        if init.name in types:
            assert init.data_type == marker(types[init.name].storage_type.data_type)  # marked: fails closed
    assert typed.ir_version == q.ir_version


def test_lift_types_biases_as_int32_products_of_scales(lifted):
    typed = lifted["cnn-qdq_s8_perchannel"]
    conv = next(n for n in typed.graph.node if n.op_type == "Conv")
    x, w, b = (quantized_tensors(typed)[n] for n in conv.input)
    assert b.storage == "int32" and b.axis == 0 and set(b.zero_point) == {0}
    # onnxruntime writes the bias scale as a float32 product of input and weight scales
    expected = np.float32(x.scale[0]) * np.asarray(w.scale, np.float32)
    assert np.array_equal(np.asarray(b.scale, np.float32), expected)
    assert w.axis == 0 and len(w.scale) == 4


def test_lift_carries_each_storage_type_and_granularity(lifted):
    def storages(name):
        return {q.storage for q in quantized_tensors(lifted[name]).values()}

    assert storages("cnn-qdq_a16w8") == {"int16", "int8", "int32"}
    assert storages("cnn-qdq_u16_u4") == {"uint16", "uint4", "int32"}
    assert storages("cnn-qop_u8") == {"uint8", "int32"}
    blocked = [q for q in quantized_tensors(lifted["mlp-qdq_w4_blocked"]).values() if q.block_size]
    assert {(q.storage, q.block_size, q.axis) for q in blocked} == {("int4", 4, 0)}
    # reduce_range: 7-bit weights stored in int8 (the type says int8; only the data is narrower)
    reduce = lifted["mlp-qdq_reduce_range"]
    for init in reduce.graph.initializer:
        if init.data_type == TensorProto.INT8:
            values = onnx.numpy_helper.to_array(init)
            assert np.abs(values.astype(int)).max() <= 64  # onnxruntime: symmetric 7-bit range [-64, 64]


@pytest.mark.parametrize("name", NAMES)
def test_onnxruntime_is_bit_identical_after_lower_of_lift(name, corpus, lifted):
    q = corpus[name]
    form = "qoperator" if "-qop" in name else "qdq"
    lowered = lower(lifted[name], form=form)
    assert lowered.ir_version == 10
    assert {o.domain or "": o.version for o in lowered.opset_import}.get("") == 21
    for seed in range(3):
        feeds = corpus_feeds(name, seed)
        expected = run_onnxruntime(q, feeds, optimize=False)
        got = run_onnxruntime(lowered, feeds, optimize=False)
        assert expected.keys() == got.keys()
        for out in expected:
            assert expected[out].dtype == got[out].dtype
            assert np.array_equal(expected[out], got[out]), (name, out, seed)
            assert np.ptp(expected[out]) > 0  # a non-trivial output


def test_qoperator_lowering_uses_standard_qlinear_ops(corpus, lifted):
    lowered = lower(lifted["attention-qop_u8"], form="qoperator")
    ops = [n.op_type for n in lowered.graph.node]
    assert ops.count("QLinearMatMul") == 6
    # com.microsoft exactly where the original had it (tests/test_lower_contrib.py)
    contrib = lambda m: {n.op_type for n in m.graph.node if n.domain not in ("", "ai.onnx")}  # noqa: E731
    assert contrib(lowered) == contrib(corpus["attention-qop_u8"])
    # Reshape / Transpose run on the stored integers, as in onnxruntime's own QOperator model
    reshape = next(n for n in lowered.graph.node if n.op_type == "Reshape")
    producer = next(n for n in lowered.graph.node if reshape.input[0] in n.output)
    assert producer.op_type == "QLinearMatMul"


def test_qdq_lowering_of_a_qoperator_model_stays_within_one_step(corpus, lifted):
    """Same types, other kernels: onnxruntime's fused QDQ path may round the last step differently."""
    name = "cnn-qop_u8"
    lowered = lower(lifted[name], form="qdq")
    assert not any(n.op_type.startswith("QLinear") for n in lowered.graph.node)
    feeds = corpus_feeds(name, 1)
    scale = quantized_tensors(lifted[name])["y_quantized"].scale[0]
    diff = np.abs(run_onnxruntime(corpus[name], feeds, optimize=False)["y"] - run_onnxruntime(lowered, feeds, optimize=False)["y"])
    assert diff.max() <= scale * (1 + 1e-6)


def test_lift_report_counts(corpus):
    qdq = lift_model(corpus["mlp-qdq_s8_perchannel"])
    q = corpus["mlp-qdq_s8_perchannel"]
    n_q = sum(n.op_type == "QuantizeLinear" for n in q.graph.node)
    n_dq = sum(n.op_type == "DequantizeLinear" for n in q.graph.node)
    assert (qdq.removed_quantize, qdq.removed_dequantize) == (n_q - 1, n_dq - 1)  # the edge pair stays
    assert qdq.qoperator_nodes == 0 and not qdq.warnings
    qop = lift_model(corpus["mlp-qop_u8"])
    assert qop.qoperator_nodes == 4 and (qop.removed_quantize, qop.removed_dequantize) == (0, 0)
    assert "4 QOperator node(s) lifted" in qop.summary()
