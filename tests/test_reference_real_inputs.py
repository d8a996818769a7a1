"""Real inputs: sizes fixed only at run time, as OCR and transformer exports declare them, run as onnxruntime runs
them, and quantized models of that kind (tests/corpus_real_inputs.py) give what onnxruntime's unoptimized path
gives on the same inputs, within one step of the output."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from corpus import run_onnxruntime
from onnx import TensorProto, helper

from onnx_qtypes import get_qtype, lift
from onnx_qtypes.reference_ops import FeedError, ReferenceEvaluator
from tests import corpus_real_inputs as real

pytest.importorskip("onnxruntime")

MODELS = real.models()


def relu_pair(a_dims, b_dims) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["a"], ["ya"]), helper.make_node("Relu", ["b"], ["yb"])]
    graph = helper.make_graph(nodes, "pair", [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_dims),
                                              helper.make_tensor_value_info("b", TensorProto.FLOAT, b_dims)],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("ya", "yb")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    for value, dims in zip(model.graph.input, (a_dims, b_dims)):  # make_tensor_value_info refuses -1: set it here
        for dim, want in zip(value.type.tensor_type.shape.dim, dims):
            if want == -1:
                dim.dim_value = -1
    return model


def zeros(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


@pytest.mark.parametrize("a_dims, b_dims, a, b", [
    ([-1, 3, -1, -1], [1], zeros(2, 3, 5, 7), zeros(1)),        # paddle2onnx's -1: each its own size
    (["?", "?"], ["?"], zeros(2, 3), zeros(5)),                  # repeated "?": unnamed, free per axis and input
    ([None, None], [None], zeros(4, 1), zeros(2)),                # no value at all
    (["N", 3], ["N", 3], zeros(4, 3), zeros(4, 3)),              # a named size shared, and agreeing
])
def test_unnamed_dimensions_bind_per_axis_and_input_like_onnxruntime(a_dims, b_dims, a, b):
    model = relu_pair(a_dims, b_dims)
    ours = ReferenceEvaluator(model).run(None, {"a": a, "b": b})
    theirs = run_onnxruntime(model, {"a": a, "b": b}, optimize=False)
    assert [x.shape for x in ours] == [theirs["ya"].shape, theirs["yb"].shape] == [a.shape, b.shape]


def test_a_named_dimension_is_one_size_per_run():
    """ONNX's shape-annotation semantics (onnx.reference's check_shape_annotations): one binding per name per run.
    onnxruntime 1.32 does not check it (it runs the pair below)."""
    model = relu_pair(["N", 3], ["N", 3])
    with pytest.raises(FeedError, match=r"input 'b': .*dimension 0 is 'N', which is 4 in input 'a'"):
        ReferenceEvaluator(model).run(None, {"a": zeros(4, 3), "b": zeros(2, 3)})
    with pytest.raises(FeedError, match=r"input 'a': .*dimension 1 is 'N', which is 2 earlier in its shape"):
        ReferenceEvaluator(relu_pair(["N", "N"], [1])).run(None, {"a": zeros(2, 3), "b": zeros(1)})


@pytest.mark.parametrize("name", sorted(real.FLOAT_MODELS))
def test_float_models_run_like_onnxruntime_at_every_size(name):
    """The float sources: BatchNormalization with momentum (onnx.reference: training mode, 0.13 off) and the
    token-type GatherElements (onnx.reference: fails) at two sizes each."""
    model = real.float_models()[name]
    evaluator = ReferenceEvaluator(model)
    for index in range(len(real.SHAPES[name])):
        feeds = real.feeds(name, index)
        (ours,) = evaluator.run(None, feeds)
        (theirs,) = run_onnxruntime(model, feeds, optimize=False).values()
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def output_step(typed: onnx.ModelProto, output: str) -> float:
    dq = next(n for n in typed.graph.node if output in n.output)
    qtype = get_qtype(typed, dq.input[0])
    assert dq.op_type == "DequantizeLinear" and qtype is not None and qtype.axis is None
    return qtype.scale[0]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_lifted_models_give_onnxruntimes_result_at_every_size(name):
    """Measured (onnx 1.23.2, onnxruntime 1.32.0): 0 steps apart on every model and size."""
    q = MODELS[name]
    typed = lift(q)
    evaluator = ReferenceEvaluator(typed)
    outputs = [o.name for o in typed.graph.output]
    model = name.split("-", 1)[0]
    for index in range(len(real.SHAPES[model])):
        feeds = real.feeds(name, index)
        theirs = run_onnxruntime(q, feeds, optimize=False)
        for out, ours in zip(outputs, evaluator.run(outputs, feeds)):
            assert ours.shape == theirs[out].shape
            if name.endswith("dynamic"):  # a float output of a float MatMul / Softmax after dynamic quantization
                np.testing.assert_allclose(ours, theirs[out], rtol=1e-5, atol=1e-6)
                continue
            step = output_step(typed, out)
            steps = np.abs(np.rint(np.asarray(ours, np.float64) / step) - np.rint(np.asarray(theirs[out], np.float64) / step))
            assert steps.max() <= 1, (name, out, index, steps.max())
