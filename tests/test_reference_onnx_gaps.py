"""Where onnx.reference is wrong or missing, the reference evaluator gives ONNX's result or refuses, located.

One test (or a few) per corrected operator in reference_ops/corrected/. Each compares with onnxruntime's
unoptimized path (ORT_DISABLE_ALL: every node runs the kernel it names) on real models, and, where onnxruntime
cannot run the input, with the formula ONNX states, written here independently of the code under test.
proposal/experiments/float_op_differential.py measured what these fix (its table lists every operator).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from reference_models import T, lower_to_qdq, run_onnxruntime, steps_apart, typed_model

from onnx_qtypes import QType
from onnx_qtypes.reference_ops import EvaluationError, ReferenceEvaluator

pytest.importorskip("onnxruntime")

F = TensorProto.FLOAT


def single(op: str, inputs: dict[str, np.ndarray], outputs: list[str], opset: int = 21,
           initializers: dict[str, np.ndarray] | None = None, **attrs) -> onnx.ModelProto:
    """One float node; ``inputs`` are graph inputs, ``initializers`` constants, in node-input order."""
    initializers = initializers or {}
    names = [*inputs, *initializers]
    node = helper.make_node(op, names, outputs, name=f"the_{op.lower()}", **attrs)
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                     for n, v in inputs.items()],
        [helper.make_tensor_value_info(o, F, None) for o in outputs if o],
        [numpy_helper.from_array(v, n) for n, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=7 if opset < 14 else 10)


def ours(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, feeds)]


def unoptimized(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return run_onnxruntime(model, feeds, optimize=False)


# --- BatchNormalization ---------------------------------------------------------------------------

RNG = np.random.default_rng(20)
C = 3
X = RNG.normal(2, 3, (2, C, 4, 5)).astype(np.float32)
BN = {"s": RNG.uniform(0.5, 2, C).astype(np.float32), "b": RNG.normal(0, 1, C).astype(np.float32),
      "mean": RNG.normal(0, 1, C).astype(np.float32), "var": RNG.uniform(0.5, 2, C).astype(np.float32)}


def inference(x: np.ndarray, s, b, mean, var, epsilon: float = 1e-5) -> np.ndarray:
    """ONNX: Y = (X - input_mean) / sqrt(input_var + epsilon) * scale + B, per channel."""
    c = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean.reshape(c)) / np.sqrt(var.reshape(c) + epsilon) * s.reshape(c) + b.reshape(c)


@pytest.mark.parametrize("opset", [7, 9, 13])
@pytest.mark.parametrize("momentum", [None, 0.9, 0.5])
def test_batch_normalization_with_only_y_is_inference_at_opsets_7_to_13(opset, momentum):
    """onnx.reference 1.23 normalizes by the batch's statistics at opsets 9-13 (momentum always has its default,
    so always) and fails at 7-8; ONNX: one output is test mode, whatever momentum says."""
    attrs = {} if momentum is None else {"momentum": momentum}
    model = single("BatchNormalization", {"x": X}, ["y"], opset, BN, **attrs)
    (got,) = ours(model, {"x": X})
    np.testing.assert_allclose(got, inference(X, **BN), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, unoptimized(model, {"x": X})[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", [14, 15])
def test_batch_normalization_training_mode_follows_onnx_at_opset_14(opset):
    """training_mode=1: Y by the batch's mean and population variance; running stats by momentum."""
    model = single("BatchNormalization", {"x": X}, ["y", "running_mean", "running_var"], opset, BN,
                   momentum=0.8, training_mode=1)
    got, want = ours(model, {"x": X}), unoptimized(model, {"x": X})
    batch_mean, batch_var = X.mean((0, 2, 3)), X.var((0, 2, 3))
    np.testing.assert_allclose(got[0], inference(X, BN["s"], BN["b"], batch_mean, batch_var), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], BN["mean"] * 0.8 + batch_mean * 0.2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], BN["var"] * 0.8 + batch_var * 0.2, rtol=1e-5, atol=1e-6)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_batch_normalization_opset_9_training_outputs_match_onnxruntime_and_saved_var_is_refused():
    """Opset 9-13 training mode is five outputs; saved_var is "saved variance used during training to speed up
    gradient computation" in ONNX, 1 / sqrt(var + epsilon) in onnxruntime ("saved_inv_std"): refused, not guessed."""
    model = single("BatchNormalization", {"x": X}, ["y", "running_mean", "running_var", "", ""], 9, BN, momentum=0.7)
    got, want = ours(model, {"x": X}), unoptimized(model, {"x": X})
    batch_mean, batch_var = X.mean((0, 2, 3)), X.var((0, 2, 3))
    np.testing.assert_allclose(got[0], inference(X, BN["s"], BN["b"], batch_mean, batch_var), rtol=1e-5, atol=1e-5)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    with_var = single("BatchNormalization", {"x": X}, ["y", "running_mean", "running_var", "saved_mean", "saved_var"],
                      9, BN)
    with pytest.raises(EvaluationError, match=r"node 'the_batchnormalization' \(BatchNormalization\).*saved_var"):
        ours(with_var, {"x": X})


def test_batch_normalization_spatial_0_takes_per_activation_parameters_at_opset_7():
    per_activation = {k: (np.abs(RNG.normal(1, 0.3, X.shape[1:])) + 0.1).astype(np.float32) for k in BN}
    model = single("BatchNormalization", {"x": X}, ["y"], 7, per_activation, spatial=0)
    (got,) = ours(model, {"x": X})
    p = per_activation
    np.testing.assert_allclose(got, (X - p["mean"]) / np.sqrt(p["var"] + 1e-5) * p["s"] + p["b"], rtol=1e-5)
    np.testing.assert_allclose(got, unoptimized(model, {"x": X})[0], rtol=1e-5, atol=1e-5)


def test_batch_normalization_opset_6_follows_is_test():
    """onnxruntime has no opset-6 kernel; ONNX: is_test=1 is inference, the default 0 training."""
    test_mode = single("BatchNormalization", {"x": X}, ["y"], 6, BN, is_test=1)
    np.testing.assert_allclose(ours(test_mode, {"x": X})[0], inference(X, **BN), rtol=1e-5, atol=1e-5)
    training = single("BatchNormalization", {"x": X}, ["y"], 6, BN)
    batch = inference(X, BN["s"], BN["b"], X.mean((0, 2, 3)), X.var((0, 2, 3)))
    np.testing.assert_allclose(ours(training, {"x": X})[0], batch, rtol=1e-5, atol=1e-5)


def test_quantized_batch_normalization_at_opset_13_is_within_one_step_of_onnxruntime():
    """The PP-OCR case: a BatchNormalization between quantized tensors (opset 13, momentum set) - onnx.reference
    took it for training and was off by up to 5x the output range."""
    x_type, y_type = QType("int8", 0.1, 3), QType("int8", 0.08, -5)
    shape = (2, C, 4, 5)
    params = [T(n, (C,), value=BN[n]) for n in ("s", "b", "mean", "var")]
    model = typed_model("BatchNormalization", [T("x", shape, x_type), *params], [T("y", shape, y_type)],
                        opset=13, momentum=0.9)
    x = RNG.integers(-128, 128, shape).astype(np.int8)
    (got,) = ReferenceEvaluator(model).run(None, {"x": x})
    (want,) = unoptimized(lower_to_qdq(model, {"x": shape, "y": shape}), {"x": x})
    assert steps_apart(got, want) <= 1


# --- GatherElements -------------------------------------------------------------------------------


def bert_token_types(index_type: int = TensorProto.INT64) -> onnx.ModelProto:
    """The token-type lookup of HuggingFace BertEmbeddings as torch 2.13's exporter writes it (no token_type_ids
    given): the buffers position_ids and token_type_ids [1, 512], position_ids sliced to the sequence length,
    token_type_ids gathered by them along axis 1 (torch.gather), expanded to [batch, sequence]. Stock
    onnx.reference fails on it with "cannot reshape array of size 1 into shape (1,7)"."""
    nodes = [
        helper.make_node("Shape", ["input_ids"], ["ids_shape"]),
        helper.make_node("Slice", ["ids_shape", "one", "two"], ["seq"]),
        helper.make_node("Slice", ["position_ids", "zero", "seq", "one"], ["positions"]),
        helper.make_node("Cast", ["positions"], ["index"], to=index_type),
        helper.make_node("GatherElements", ["token_type_ids", "index"], ["gathered"], axis=1, name="token_types"),
        helper.make_node("Expand", ["gathered", "ids_shape"], ["token_type"]),
    ]
    inits = [numpy_helper.from_array(a, n) for n, a in {
        "position_ids": np.arange(512, dtype=np.int64).reshape(1, 512),
        "token_type_ids": (np.arange(512) % 3 == 0).astype(np.int64).reshape(1, 512),
        "zero": np.array([0], np.int64), "one": np.array([1], np.int64), "two": np.array([2], np.int64)}.items()]
    graph = helper.make_graph(nodes, "bert_embeddings", [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                                                                        ["batch", "sequence"])],
                              [helper.make_tensor_value_info("token_type", TensorProto.INT64, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("index_type", [TensorProto.INT64, TensorProto.INT32])
def test_gather_elements_over_512_positions_runs_like_onnxruntime(index_type):
    """onnx.reference picks with numpy.choose (at most 64 choices): HuggingFace BERT exports failed here."""
    model = bert_token_types(index_type)
    feeds = {"input_ids": np.ones((2, 7), np.int64)}
    (got,) = ours(model, feeds)
    (want,) = unoptimized(model, feeds)
    assert got.dtype == want.dtype and got.shape == (2, 7)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[0], (np.arange(7) % 3 == 0).astype(np.int64))


def test_gather_elements_with_smaller_indices_and_negative_int32_indices_matches_onnxruntime():
    data = np.arange(4 * 5 * 70, dtype=np.float32).reshape(4, 5, 70)
    indices = np.array([[[-1, 0, 69], [5, -70, 3]], [[2, 2, -2], [0, 1, 1]]], np.int32)  # [2, 2, 3] into [4, 5, 70]
    model = single("GatherElements", {"data": data, "indices": indices}, ["y"], axis=-1)
    (got,) = ours(model, {"data": data, "indices": indices})
    (want,) = unoptimized(model, {"data": data, "indices": indices})
    np.testing.assert_array_equal(got, want)
    assert got[0, 0, 0] == data[0, 0, 69] and got[0, 1, 1] == data[0, 1, 0]  # ONNX's formula, read off


def test_quantized_gather_elements_is_exact():
    qtype = QType("int8", 0.05, 4)
    indices = np.array([[0, -1, 100, -200, 511]], np.int64)
    model = typed_model("GatherElements", [T("x", (1, 512), qtype), T("i", (1, 5), dtype=TensorProto.INT64, value=indices)],
                        [T("y", (1, 5), qtype)], axis=1)
    x = RNG.integers(-128, 128, (1, 512)).astype(np.int8)
    (got,) = ReferenceEvaluator(model).run(None, {"x": x})
    (want,) = unoptimized(lower_to_qdq(model, {"x": (1, 512), "y": (1, 5)}), {"x": x})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[0], x[0, [0, 511, 100, 312, 511]])


def test_gather_elements_index_out_of_range_is_refused_and_located():
    """onnx.reference wraps an index of 5 around a 4-element axis; onnxruntime refuses it too."""
    data, indices = np.zeros((2, 4), np.float32), np.array([[0, 5]], np.int64)
    model = single("GatherElements", {"data": data, "indices": indices}, ["y"], axis=1)
    with pytest.raises(EvaluationError, match=r"node 'the_gatherelements' \(GatherElements\): .*index 5 at \[0, 1\]"):
        ours(model, {"data": data, "indices": indices})
    with pytest.raises(Exception, match="out of bounds|range"):
        unoptimized(model, {"data": data, "indices": indices})
