"""Activations onnxruntime removed are computed exactly by the lifted types.

onnxruntime drops a Relu when the quantized output range already starts at
real 0 (zero point = storage minimum). The lifted model keeps no Relu; the
type's clamp does the clipping. These tests show the two are the same
function, first from the definition (quantize is monotone and saturates at
storage_min), then on the corpus with the reference evaluator and
onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from corpus import corpus_feeds, corpus_models, float_models, run_onnxruntime
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

from onnx_qtypes import QType, lift, lower, quantized_tensors, set_qtype
from onnx_qtypes.reference_ops import ReferenceEvaluator
from onnx_qtypes.reference_ops.quant import quantize

REALS = st.floats(-1e4, 1e4, allow_nan=False, width=32)


@settings(max_examples=200, deadline=None)
@given(x=st.lists(REALS, min_size=1, max_size=16), scale=st.floats(1e-4, 1.0), storage=st.sampled_from(["int8", "uint8", "int16", "uint4"]))
def test_relu_is_the_identity_under_a_type_whose_zero_point_is_the_storage_minimum(x, scale, storage):
    scale = float(np.float32(scale))
    low = QType(storage, 1.0).storage_min
    qtype = QType(storage, scale, low)
    values = np.asarray(x, np.float64)
    assert np.array_equal(quantize(np.maximum(values, 0.0), qtype), quantize(values, qtype))


def test_the_condition_matters():
    """With the zero point one above the minimum, negative values stay distinguishable: Relu is not implied."""
    qtype = QType("int8", 0.5, -127)
    values = np.asarray([-0.5, -0.25, 0.0])
    assert not np.array_equal(quantize(np.maximum(values, 0.0), qtype), quantize(values, qtype))


@settings(max_examples=100, deadline=None)
@given(x=st.lists(REALS, min_size=1, max_size=16), top=st.floats(0.5, 20.0))
def test_clip_is_implied_when_both_bounds_quantize_to_the_storage_ends(x, top):
    scale = float(np.float32(top / 255))
    qtype = QType("uint8", scale, 0)
    lo, hi = 0.0, float(np.float32(scale * 255))
    assert quantize(np.asarray([lo]), qtype)[0] == 0 and quantize(np.asarray([hi]), qtype)[0] == 255
    values = np.asarray(x, np.float64)
    assert np.array_equal(quantize(np.clip(values, lo, hi), qtype), quantize(values, qtype))


# (corpus model, typed tensors that stand for a removed Relu's output)
REMOVED = [
    ("cnn-qdq_s8_perchannel", ["r1", "r2"]),
    ("cnn-qdq_u8_pertensor", ["r1", "r2"]),
    ("cnn-qdq_a16w8", ["r1", "r2"]),
    ("cnn-qop_u8", ["c1_quantized", "res_quantized"]),
    ("mlp-qdq_s8_perchannel", ["hr"]),
    ("mlp-qop_u8", ["hb_quantized"]),
]


def with_explicit_relu(typed: onnx.ModelProto, tensors: list[str]) -> onnx.ModelProto:
    """The same model with a typed Relu written out after each tensor (same type before and after)."""
    model = onnx.ModelProto()
    model.CopyFrom(typed)
    types = quantized_tensors(model)
    nodes = []
    for node in model.graph.node:
        nodes.append(node)
        for k, out in enumerate(node.output):
            if out in tensors:
                node.output[k] = f"{out}_before_relu"
                nodes.append(helper.make_node("Relu", [node.output[k]], [out], name=f"explicit_relu_{out}"))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    for out in tensors:
        model.graph.value_info.add().name = f"{out}_before_relu"
        set_qtype(model, f"{out}_before_relu", types[out])
    return model


@pytest.mark.parametrize("name, tensors", REMOVED, ids=[r[0] for r in REMOVED])
def test_lifted_models_compute_the_removed_relu(name, tensors):
    q = corpus_models()[name]
    assert "Relu" in {n.op_type for n in float_models()[name.split("-")[0]].graph.node}
    assert "Relu" not in {n.op_type for n in q.graph.node}
    typed = lift(q)
    assert "Relu" not in {n.op_type for n in typed.graph.node}  # the lift adds nothing
    types = quantized_tensors(typed)
    for t in tensors:
        assert types[t].zero_point == (types[t].storage_min,), t  # real 0 is the bottom of the range
    explicit = with_explicit_relu(typed, tensors)
    outputs = [o.name for o in typed.graph.output]
    for seed in range(3):
        feeds = corpus_feeds(name, seed)
        implied = ReferenceEvaluator(typed).run(outputs, feeds)
        written = ReferenceEvaluator(explicit).run(outputs, feeds)
        for a, b in zip(implied, written):
            assert np.array_equal(a, b)
    # onnxruntime agrees: the lowered model with the Relu written out gives the same bits
    form = "qoperator" if "-qop" in name else "qdq"
    feeds = corpus_feeds(name, 0)
    plain = run_onnxruntime(lower(typed, form=form), feeds, optimize=False)  # QDQ: its definition path
    relu = run_onnxruntime(lower(explicit, form=form), feeds, optimize=False)
    for out in outputs:
        assert np.array_equal(plain[out], relu[out])
