"""Where onnx.reference is wrong or missing, the reference evaluator gives ONNX's result or refuses, located.

One test (or a few) per corrected operator in reference_ops/corrected/. Each compares with onnxruntime's
unoptimized path (ORT_DISABLE_ALL: every node runs the kernel it names) on real models, and, where onnxruntime
cannot run the input, with the formula ONNX states, written here independently of the code under test.
proposal/experiments/float_op_differential.py measured what these fix (its table lists every operator).
"""

from __future__ import annotations

import re
import warnings

import ml_dtypes
import numpy as np
import onnx
import onnx.reference
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
        [onnx.ValueInfoProto(name=o) for o in outputs if o],
        [numpy_helper.from_array(v, n) for n, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=7 if opset < 14 else 10)
    inferred = {v.name: v.type.tensor_type.elem_type for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    for output in model.graph.output:  # onnxruntime needs the element types: onnx's inference gives them
        output.CopyFrom(helper.make_tensor_value_info(output.name, inferred.get(output.name, F), None))
    return model


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


# --- pooling --------------------------------------------------------------------------------------


def agree(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Our outputs, after asserting they equal onnxruntime's unoptimized path's (shape, dtype, values)."""
    got, want = ours(model, feeds), unoptimized(model, feeds)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    return got


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices_count_over_the_whole_tensor(storage_order):
    """ONNX: Indices are in [0, N x C x D1 x ... x Dn); onnx.reference restarted them in every channel."""
    x = RNG.permutation(2 * 3 * 4 * 5).astype(np.float32).reshape(2, 3, 4, 5)
    model = single("MaxPool", {"x": x}, ["y", "indices"], kernel_shape=[2, 2], strides=[1, 2],
                   storage_order=storage_order)
    y, indices = agree(model, {"x": x})
    order = "F" if storage_order else "C"
    for n, c in ((0, 0), (1, 2)):
        plane = x[n, c].reshape(-1, order=order)
        np.testing.assert_array_equal(plane[indices[n, c] - (n * 3 + c) * 20], y[n, c])


@pytest.mark.parametrize("attrs, shape", [
    ({"kernel_shape": [2, 3], "strides": [2, 3], "auto_pad": "SAME_LOWER", "ceil_mode": 1}, (1, 2, 3, 3)),
    ({"kernel_shape": [1, 2], "pads": [0, 1, 0, 1]}, (1, 1, 2, 2)),  # pads differ between axes
    ({"kernel_shape": [2, 2], "strides": [1, 1], "pads": [1, 1, 1, 1], "ceil_mode": 1}, (1, 1, 2, 2)),
    ({"kernel_shape": [2], "strides": [2], "pads": [0, 1], "ceil_mode": 1}, (1, 1, 4)),  # no window in end pads
])
def test_max_pool_and_average_pool_shapes_follow_onnxruntime(attrs, shape):
    x = RNG.normal(size=shape).astype(np.float32)
    for op in ("MaxPool", "AveragePool"):
        extra = {"count_include_pad": 1} if op == "AveragePool" else {}
        (y,) = agree(single(op, {"x": x}, ["y"], **attrs, **extra), {"x": x})
        if attrs.get("auto_pad") == "SAME_LOWER":  # ONNX: ceil(input / stride)
            assert y.shape[2:] == (2, 1)


def test_average_pool_same_padding_with_stride_above_kernel_takes_no_padding():
    """pad_shape = (out - 1) * stride + kernel - in is negative here; onnx.reference failed on it."""
    x = RNG.normal(size=(1, 2, 3, 3)).astype(np.float32)
    model = single("AveragePool", {"x": x}, ["y"], kernel_shape=[3, 1], strides=[2, 3], auto_pad="SAME_LOWER")
    (y,) = agree(model, {"x": x})
    np.testing.assert_allclose(y[0, :, 0, 0], x[0, :, 0:2, 0].mean(-1), rtol=1e-6)


def test_global_max_pool_of_a_3d_input_keeps_the_channels():
    x = RNG.normal(size=(2, 3, 5)).astype(np.float32)
    (y,) = agree(single("GlobalMaxPool", {"x": x}, ["y"]), {"x": x})
    np.testing.assert_array_equal(y[..., 0], x.max(-1))


# --- data movement --------------------------------------------------------------------------------


def test_pad_with_negative_pads_removes_elements():
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    pads = np.array([-1, 2, 1, -2], np.int64)  # begin [-1, 2], end [1, -2]
    (y,) = agree(single("Pad", {"x": x}, ["y"], initializers={"pads": pads}, mode="constant"), {"x": x})
    np.testing.assert_array_equal(y[:2, 2:4], x[1:, :2])
    assert y.shape == (3, 4) and not y[2].any()


def test_pad_reflect_beyond_the_axis_is_refused():
    """numpy reflects again; ONNX does not say; onnxruntime refuses."""
    x = RNG.normal(size=(3, 2)).astype(np.float32)
    model = single("Pad", {"x": x}, ["y"], initializers={"pads": np.array([0, 2, 0, 0], np.int64)}, mode="reflect")
    with pytest.raises(EvaluationError, match=r"node 'the_pad' \(Pad\): Pad mode 'reflect' adds 2 elements to axis 1"):
        ours(model, {"x": x})
    with pytest.raises(Exception, match="reflect"):
        unoptimized(model, {"x": x})


def test_slice_with_a_negative_step_ends_before_the_first_element():
    x = np.arange(25, dtype=np.float32).reshape(5, 5, 1)
    for starts, ends in (([-2, -2], [-2, -2]), ([0, 3], [-9, -9])):
        model = single("Slice", {"x": x}, ["y"], initializers={
            "starts": np.array(starts, np.int32), "ends": np.array(ends, np.int32),
            "axes": np.array([-1, 0], np.int32), "steps": np.array([-2, -1], np.int32)})
        agree(model, {"x": x})
    # axis 2 (size 1): start -2 -> 0, end -9 -> -1 (before the first element): one element; axis 0: rows 3..0
    np.testing.assert_array_equal(ours(model, {"x": x})[0][:, :, 0], x[3::-1, :, 0])


@pytest.mark.parametrize("start, end", [(None, -3), (-5, 1), (1, 9), (2, 1)])
def test_shape_clamps_start_and_end(start, end):
    x = np.zeros((2, 3), np.float32)
    attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    (y,) = agree(single("Shape", {"x": x}, ["y"], **attrs), {"x": x})
    lo = 0 if start is None else min(max(start + 2 if start < 0 else start, 0), 2)
    hi = min(max(end + 2 if end < 0 else end, 0), 2)
    assert y.tolist() == [2, 3][lo:hi]


def test_softsign_of_a_scalar():
    x = np.array(-3.0, np.float32)
    (y,) = agree(single("Softsign", {"x": x}, ["y"]), {"x": x})
    assert y.shape == () and y == np.float32(-0.75)


# --- Softmax, LogSoftmax, Hardmax before opset 13 ----------------------------------------------------


def _coerced_2d(op: str, x: np.ndarray, axis: int) -> np.ndarray:
    """ONNX before opset 13: x as a 2-D matrix [prod(shape[:axis]), prod(shape[axis:])], the op along its rows."""
    rows = x.astype(np.float64).reshape(int(np.prod(x.shape[:axis % x.ndim])), -1)
    if op == "Hardmax":
        out = np.zeros_like(rows)
        out[np.arange(len(rows)), rows.argmax(axis=1)] = 1
    else:
        e = np.exp(rows - rows.max(axis=1, keepdims=True))
        out = e / e.sum(axis=1, keepdims=True) if op == "Softmax" else np.log(e / e.sum(axis=1, keepdims=True))
    return out.reshape(x.shape)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("shape, axis", [((2, 3, 4), None), ((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1),
                                         ((2, 3, 4), -2), ((5,), 0), ((2, 3), None), ((2, 2, 3, 2), 2)])
def test_softmax_family_flattens_before_opset_13_and_not_after(op, opset, shape, axis):
    """onnx.reference ran opset 13's meaning (along one axis, default -1) at every opset; before 13 ONNX coerces
    the input to 2-D at axis (default 1) and normalizes whole rows."""
    x = np.random.default_rng(len(shape) * 10 + (axis or 0)).normal(0, 2, shape).astype(np.float32)
    attrs = {} if axis is None else {"axis": axis}
    (y,) = agree(single(op, {"x": x}, ["y"], opset, **attrs), {"x": x})
    if opset < 13:
        np.testing.assert_allclose(y, _coerced_2d(op, x, 1 if axis is None else axis), rtol=1e-5, atol=1e-6)


def test_softmax_before_opset_11_takes_no_negative_axis():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(EvaluationError, match=r"Softmax-10 axis -1 is outside \[0, 1\]"):
        ours(single("Softmax", {"x": x}, ["y"], 10, axis=-1), {"x": x})


# --- ConvTranspose --------------------------------------------------------------------------------


def test_depthwise_conv_transpose_adds_each_channel_its_own_bias():
    """onnx.reference added B[0] to every channel of a grouped ConvTranspose with one channel per group."""
    x = RNG.normal(size=(1, 3, 4, 4)).astype(np.float32)
    w = RNG.normal(size=(3, 1, 2, 2)).astype(np.float32)
    b = np.array([10, 20, 30], np.float32)
    model = single("ConvTranspose", {"x": x}, ["y"], initializers={"w": w, "b": b}, group=3, strides=[2, 2])
    (y,) = agree(model, {"x": x})
    np.testing.assert_allclose(y[0, 1, ::2, ::2], x[0, 1] * w[1, 0, 0, 0] + 20, rtol=1e-5)


@pytest.mark.parametrize("attrs", [
    {"group": 2, "strides": [3], "pads": [1, 1]},
    {"group": 2, "strides": [2], "dilations": [2]},
    {"group": 1, "strides": [2], "output_padding": [1]},
    {"group": 2, "strides": [2], "output_shape": [8]},
    {"group": 1, "strides": [2], "auto_pad": "SAME_UPPER"},
])
def test_conv_transpose_matches_onnxruntime(attrs):
    x = RNG.normal(size=(2, 4, 4)).astype(np.float32)
    w = RNG.normal(size=(4, 2, 3)).astype(np.float32)
    agree(single("ConvTranspose", {"x": x}, ["y"], initializers={"w": w}, **attrs), {"x": x})


def test_conv_transpose_negative_total_padding_is_refused():
    """SAME, stride 3 > kernel 2: ONNX asks for output = input * stride, which needs padding -1 (ONNX's pads are
    >= 0; onnxruntime gives a shorter output)."""
    x = RNG.normal(size=(1, 1, 2)).astype(np.float32)
    model = single("ConvTranspose", {"x": x}, ["y"], initializers={"w": np.ones((1, 1, 2), np.float32)},
                   strides=[3], auto_pad="SAME_UPPER")
    with pytest.raises(EvaluationError, match=r"\(ConvTranspose\): .*negative total padding \[-1\]"):
        ours(model, {"x": x})


# --- Loop -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("per_iteration", [(), (3,), (2, 3)])
def test_loop_scan_outputs_stack_along_a_new_first_axis(per_iteration):
    """onnx.reference concatenated them with numpy.vstack: [2, 3] per iteration over 4 iterations gave [8, 3]."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "one"], ["v_out"]),
         helper.make_node("Identity", ["v_out"], ["scanned"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("v_in", F, list(per_iteration))],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", F, list(per_iteration)),
         helper.make_tensor_value_info("scanned", F, list(per_iteration))],
        [numpy_helper.from_array(np.ones(per_iteration, np.float32), "one")])
    v = np.zeros(per_iteration, np.float32)
    model = single("Loop", {"v": v}, ["final", "stacked"], initializers={"n": np.array(4, np.int64),
                                                                         "cond": np.array(True)}, body=body)
    model.graph.node[0].ClearField("input")
    model.graph.node[0].input.extend(["n", "cond", "v"])
    final, stacked = agree(model, {"v": v})
    assert stacked.shape == (4, *per_iteration) and stacked[2].ravel().tolist() == [3.0] * int(np.prod(per_iteration))


# --- Resize ---------------------------------------------------------------------------------------


def resize(x: np.ndarray, scales=None, sizes=None, roi=None, **attrs) -> onnx.ModelProto:
    constants = {"roi": np.asarray(roi if roi is not None else [], np.float32),
                 "scales": np.asarray(scales if scales is not None else [], np.float32)}
    if sizes is not None:
        constants["sizes"] = np.asarray(sizes, np.int64)
    return single("Resize", {"x": x}, ["y"], initializers=constants, **attrs)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_align_corners_with_scales_samples_the_corners(mode):
    """ONNX: x_original = x_resized * (length_original - 1) / (length_resized - 1), length_resized the output's
    integer length; onnx.reference used input * scale (4.5 for 3 x 1.5), missing the last row."""
    x = RNG.normal(size=(1, 1, 3, 5)).astype(np.float32)
    (y,) = agree(resize(x, scales=[1, 1, 1.5, 0.5], mode=mode, coordinate_transformation_mode="align_corners"),
                 {"x": x})
    assert y.shape == (1, 1, 4, 2)
    np.testing.assert_allclose(y[0, 0, [0, -1]][:, [0, -1]], x[0, 0, [0, -1]][:, [0, -1]], rtol=1e-6)


@pytest.mark.parametrize("attrs", [
    {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel", "cubic_coeff_a": -0.5},
    {"mode": "linear", "antialias": 1},
    {"mode": "cubic", "antialias": 1, "coordinate_transformation_mode": "align_corners"},
    {"mode": "cubic", "exclude_outside": 1},
    {"mode": "nearest", "nearest_mode": "ceil", "coordinate_transformation_mode": "half_pixel_symmetric"},
])
def test_resize_matches_onnxruntime(attrs):
    x = RNG.normal(size=(1, 2, 6, 5)).astype(np.float32)
    agree(resize(x, sizes=[1, 2, 1, 4], **attrs), {"x": x})
    agree(resize(x, scales=[1, 1, 0.5, 1.5], **attrs), {"x": x})


def test_resize_tf_crop_and_resize_crops_an_axis_whose_length_stays():
    """ONNX's formula crops [0.25, 0.75] of a 5-wide axis resized to 5: samples at 1, 1.5, ..., 3. (onnxruntime 1.32
    returns that axis unchanged; recorded, not asserted.)"""
    x = (np.arange(5, dtype=np.float32) * 10).reshape(1, 1, 1, 5)
    model = resize(x, sizes=[1, 1, 1, 5], roi=[0, 0, 0, 0.25, 1, 1, 1, 0.75], mode="linear",
                   coordinate_transformation_mode="tf_crop_and_resize")
    assert ours(model, {"x": x})[0].ravel().tolist() == [10, 15, 20, 25, 30]


def test_resize_output_length_is_the_floor_of_the_exact_product():
    """5 x float32(1.4) = 6.99999988: ONNX's floor(input * scale) is 6, as onnx.reference gives; onnxruntime 1.32
    multiplies in float32 (7.0) and gives 7 (recorded, not asserted)."""
    x = RNG.normal(size=(1, 1, 1, 5)).astype(np.float32)
    assert ours(resize(x, scales=[1, 1, 1, 1.4], mode="nearest"), {"x": x})[0].shape == (1, 1, 1, 6)


@pytest.mark.parametrize("scale", [np.nan, np.inf])
def test_kept_pair_with_nan_or_infinite_scale_runs_as_onnxruntime_does(scale):
    """A Q / DQ pair a lift keeps for a NaN or infinite scale (x / inf = 0, inf / inf and x / NaN are NaN; NaN
    into int8 stays the storage's lowest value in both) runs as onnxruntime's unoptimized path runs it, integers
    and reals, compared as bytes (NaN alike)."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="kept_q"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="kept_dq")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [5])],
                              [helper.make_tensor_value_info("y", F, [5]),
                               helper.make_tensor_value_info("q", TensorProto.INT8, [5])],
                              [numpy_helper.from_array(np.array(scale, np.float32), "s"),
                               numpy_helper.from_array(np.array(3, np.int8), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    x = np.array([1.0, -2.0, 0.0, np.inf, -np.inf], np.float32)
    for mine, theirs in zip(ours(model, {"x": x}), unoptimized(model, {"x": x})):
        assert mine.dtype == theirs.dtype and mine.tobytes() == theirs.tobytes()


@pytest.mark.parametrize(("scale", "zero_point"), [
    (0.5, np.int8(0)), (0.5, np.int8(-128)), (0.5, np.uint8(10)), (1e-30, np.int8(5)), (np.inf, np.int8(127)),
    (np.nan, np.int8(-128)), (0.25, np.int16(-32768)), (0.25, np.uint16(7))])
def test_a_kept_quantize_linear_saturates_infinite_and_huge_quotients_as_onnxruntime_does(scale, zero_point):
    """onnx.reference casts rint(x / scale) to int32 before adding the zero point: +inf (or 1e30 / 1e-30) came out
    as the storage's lowest value, not its highest, and NaN plus a negative zero point wrapped to the highest.
    ONNX defines saturate(round(x / scale) + zero point); NaN it leaves undefined, and onnxruntime gives the
    lowest value. NNCF's BERT keeps such a pair on the attention mask (-inf at scale inf)."""
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="kept_q")
    stored = helper.np_dtype_to_tensor_dtype(np.asarray(zero_point).dtype)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, [7])],
                              [helper.make_tensor_value_info("q", stored, [7])],
                              [numpy_helper.from_array(np.array(scale, np.float32), "s"),
                               numpy_helper.from_array(np.array(zero_point), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    x = np.array([1.0, np.nan, 0.0, np.inf, -np.inf, -3e9, 3e38], np.float32)
    (mine,), (theirs,) = ours(model, {"x": x}), unoptimized(model, {"x": x})
    assert mine.dtype == theirs.dtype and mine.tolist() == theirs.tolist()


@pytest.mark.parametrize("block_size", [0, 2, 3])  # 3: a last block of one column
def test_a_kept_per_axis_or_blocked_quantize_linear_saturates_each_element_at_its_own_scale(block_size):
    """The saturation above reads each element's own scale and zero point: per channel (axis 0) and in blocks of 2 or 3
    along axis 1, each channel or block at another scale, onnxruntime's unoptimized path gives the same bytes."""
    x = np.array([[1.0, np.inf, 3e9, -np.inf], [np.nan, -3e9, 2.0, 1e30]], np.float32)
    scale = np.array([0.5, 1e-30], np.float32) if not block_size else np.array([[0.5, 1e-30], [2.0, 0.25]], np.float32)
    zero_point = np.array([-3, 4], np.int8) if not block_size else np.array([[-3, 4], [5, -6]], np.int8)
    attrs = {"axis": 0} if not block_size else {"axis": 1, "block_size": block_size}
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="kept_q", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, [2, 4])],
                              [helper.make_tensor_value_info("q", TensorProto.INT8, [2, 4])],
                              [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero_point, "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    (mine,), (theirs,) = ours(model, {"x": x}), unoptimized(model, {"x": x})
    assert mine.dtype == theirs.dtype and mine.tolist() == theirs.tolist()
    assert mine[0, 1] == 127 and mine[0, 3] == -128  # +inf and -inf at their ends, whatever the zero point


@pytest.mark.parametrize("zero_point", [np.uint8(0), np.int8(0), ml_dtypes.float8_e4m3fn(0)])
def test_quantize_linear_with_scale_zero_is_refused_into_integer_storage(zero_point):
    """ONNX: saturate(round(x / 0) + zp), the range's end for x != 0 (onnxruntime gives 255 for uint8); onnx.reference
    casts inf to int32 first and returns 0. A float8 zero point: x / 0 = inf saturates in the type, as it computes."""
    zp = numpy_helper.from_array(np.asarray(zero_point), "z")
    graph = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="kept")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("q", zp.data_type, [3])],
                              [numpy_helper.from_array(np.array(0.0, np.float32), "s"), zp])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    x = np.array([1.0, -1.0, 0.5], np.float32)
    if np.asarray(zero_point).dtype.kind in "iu":
        with pytest.raises(EvaluationError, match=r"node 'kept' \(QuantizeLinear\): scale 0 into integer storage"):
            ReferenceEvaluator(model).run(None, {"x": x})
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a run says nothing of the division by zero it defines
            (ours,) = ReferenceEvaluator(model).run(None, {"x": x})
        with np.errstate(divide="ignore"):  # (onnx.reference's own run warns)
            (stock,) = onnx.reference.ReferenceEvaluator(model).run(None, {"x": x})
        assert np.asarray(ours).tobytes() == np.asarray(stock).tobytes()


def _axis_model(op: str, opset: int, axis: int, scales: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One QuantizeLinear / DequantizeLinear of a rank-1 tensor of 4 values, ``scales`` scales, attribute ``axis``."""
    scale = np.linspace(0.1, 0.4, scales, dtype=np.float32) if scales > 1 else np.float32(0.1)
    inits = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(np.zeros(np.shape(scale), np.int8), "z")]
    node = helper.make_node(op, ["x", "s", "z"], ["y"], name="n", axis=axis)
    quantize = op == "QuantizeLinear"
    x_type, y_type = (TensorProto.FLOAT, TensorProto.INT8) if quantize else (TensorProto.INT8, TensorProto.FLOAT)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", x_type, [4])],
                              [helper.make_tensor_value_info("y", y_type, [4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)
    x = np.array([0.5, -1.0, 2.0, 0.25], np.float32) if quantize else np.array([3, -4, 5, 6], np.int8)
    return model, {"x": x}


@pytest.mark.parametrize("opset", [13, 21])
@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
def test_quantization_node_axis_out_of_range_is_refused_as_check_reports_it(op, opset):
    """INC writes a bias DequantizeLinear with axis 1 on its 1-D int32 tensor: onnxruntime refuses the node, `check`
    reports QT108, and `run` now says the same instead of onnx.reference's IndexError."""
    from onnx_qtypes import diagnose  # noqa: PLC0415

    model, feeds = _axis_model(op, opset, axis=1, scales=4)
    with pytest.raises(Exception):  # noqa: B017, PT011 - the vendor refuses the node too (its wording is its own)
        run_onnxruntime(model, feeds, optimize=False)
    quantized = "y" if op == "QuantizeLinear" else "x"
    problem = "axis 1 is out of range for a rank-1 tensor; use an axis in [-1, 0]"
    with pytest.raises(EvaluationError) as refused:
        ReferenceEvaluator(model).run(None, feeds)
    assert str(refused.value) == f"node 'n' ({op}): tensor {quantized!r}: {problem} (QT108, as `check` reports it)"
    (finding,) = [d for d in diagnose(model).diagnostics if d.is_error]
    assert (finding.rule, finding.message, finding.location.tensor) == ("QT108", problem, quantized)
    assert str(finding).count(f"tensor {quantized!r}") == 1  # named by the location, not again by the message


@pytest.mark.parametrize(("axis", "scales"), [(-1, 4), (0, 4), (1, 1), (-2, 1)])
@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
def test_quantization_node_axis_in_range_or_per_tensor_runs_like_onnxruntime(op, axis, scales):
    """An axis in range, or one scale (per-tensor, any axis: ONNX ignores it then) still runs, as onnxruntime
    computes it."""
    model, feeds = _axis_model(op, 21, axis=axis, scales=scales)
    (ours,) = ReferenceEvaluator(model).run(None, feeds)
    (theirs,) = run_onnxruntime(model, feeds, optimize=False)
    assert np.asarray(ours).tobytes() == np.asarray(theirs).tobytes()


def _qlinear_conv(x_shape: list[int], w: np.ndarray, per_channel: bool = True, bias: bool = True,
                  **attrs: object) -> onnx.ModelProto:
    channels = w.shape[0]
    w_zero = np.full(channels, 128 if w.dtype == np.uint8 else 0, w.dtype)
    values = {"xs": np.float32(0.05), "xz": np.uint8(120), "w": w,
              "ws": np.linspace(0.01, 0.04, channels, dtype=np.float32) if per_channel else np.float32(0.02),
              "wz": w_zero if per_channel else w_zero[0], "ys": np.float32(0.1), "yz": np.uint8(128)}
    if bias:
        values["b"] = np.arange(channels, dtype=np.int32) * 300 - 500
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", *(["b"] if bias else [])],
                            ["y"], name="conv", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in values.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize(("attrs", "options"), [
    ({}, {}), ({"pads": [2, 1], "strides": [2]}, {}), ({"dilations": [2], "group": 2}, {}),
    ({"auto_pad": "SAME_UPPER", "strides": [3]}, {}), ({"auto_pad": "SAME_LOWER", "strides": [2]}, {}),
    ({"kernel_shape": [3], "pads": [0, 3]}, {"bias": False}), ({}, {"per_channel": False}),
    ({"pads": [1, 1]}, {"weights": np.uint8}), ({"pads": [1, 1, 1, 1]}, {"rank": 2}),
    ({}, {"rank": 3}), ({"pads": [1, 0, 1, 1, 2, 0], "strides": [1, 2, 1], "group": 2}, {"rank": 3}),
    ({"dilations": [2, 1, 1], "group": 4}, {"rank": 3, "weights": np.uint8}),
])
def test_a_kept_qlinear_conv_with_per_channel_weights_runs(attrs, options):
    """onnx.reference shaped a per-channel w_scale for 2-D convolutions only: a 1-D one (a kept QOperator node of an
    audio model) or a 3-D one (video) failed with numpy's broadcast error. onnxruntime's unoptimized path within one
    step, 1-D, 2-D and 3-D, per channel and per tensor, int8 and uint8 weights, grouped and depthwise."""
    rng = np.random.default_rng(5)
    rank, dtype = options.get("rank", 1), options.get("weights", np.int8)
    spatial = {1: [11], 2: [7, 6], 3: [5, 6, 4]}[rank]
    w = rng.integers(0 if dtype == np.uint8 else -127, 256 if dtype == np.uint8 else 128,
                     (4, 4 // attrs.get("group", 1), *[3] * rank)).astype(dtype)
    model = _qlinear_conv([2, 4, *spatial], w, per_channel=options.get("per_channel", True),
                          bias=options.get("bias", True), **attrs)
    x = rng.integers(0, 256, (2, 4, *spatial)).astype(np.uint8)
    (mine,), (theirs,) = ours(model, {"x": x}), unoptimized(model, {"x": x})
    assert mine.shape == theirs.shape and np.abs(mine.astype(int) - theirs.astype(int)).max() <= 1


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs", "said"), [
    ([1, 1, 2, 2, 2], (2, 1, 1, 1), {}, "x of shape [1, 1, 2, 2, 2], w of shape [2, 1, 1, 1]"),
    ([1, 3, 5], (2, 1, 3), {"group": 2}, "group 2 does not split x's 3 channels and w's 2 evenly"),
    ([1, 1, 5], (2, 1, 3), {"pads": [1]}, "pads [1]"),
    ([1, 1, 5], (2, 1, 3), {"kernel_shape": [2]}, "kernel_shape [2] for weights of shape [2, 1, 3]"),
    ([1, 1, 5], (2, 1, 3), {"strides": [1, 2]}, "strides [1, 2]"),
    ([1, 1, 3, 3, 3], (2, 1, 1, 1, 1), {"dilations": [1, 1]}, "dilations [1, 1]"),
])
def test_a_kept_qlinear_conv_onnx_reference_cannot_compute_is_refused_with_its_reason(x_shape, w_shape, attrs, said):
    model = _qlinear_conv(x_shape, np.ones(w_shape, np.int8), **attrs)
    with pytest.raises(EvaluationError, match=rf"'conv'.*{re.escape(said)}"):
        ReferenceEvaluator(model).run(None, {"x": np.zeros(x_shape, np.uint8)})


@pytest.mark.parametrize(("attrs", "operand", "said"), [
    ({"group": 0}, None, "group 0: a convolution has at least one group"),
    ({"strides": [0]}, None, "strides [0] and dilations [] must be 1 or more"),
    ({"auto_pad": "FOO"}, None, "auto_pad 'FOO' is none of NOTSET, SAME_UPPER, SAME_LOWER, VALID"),
    ({}, ("b", np.array([1, 2, 3], np.int32)), "the bias has shape [3], where it takes one value per output channel (2)"),
    ({}, ("b", np.array([1], np.int32)), "the bias has shape [1]"),
    ({}, ("xs", np.array([0.1, 0.2], np.float32)), "x_scale holds 2 values, where it takes one"),
    ({}, ("wz", np.zeros(3, np.int8)), "w_zero_point holds 3 values for 2 output channels"),
])
def test_a_kept_per_channel_qlinear_conv_onnxruntime_refuses_is_refused_naming_the_operand(attrs, operand, said):
    """The per-channel path read group 0 as 1, dropped a bias's third value for two channels and took an auto_pad
    of no meaning, where onnxruntime refuses each model; other operands of the wrong size ended in numpy's words."""
    model = _qlinear_conv([1, 2, 5], np.ones((2, 2, 3), np.int8), **attrs)
    if operand is not None:
        name, value = operand
        tensor = next(t for t in model.graph.initializer if t.name == name)
        tensor.CopyFrom(numpy_helper.from_array(value, name))
    with pytest.raises(EvaluationError, match=rf"'conv'.*{re.escape(said)}"):
        ReferenceEvaluator(model).run(None, {"x": np.zeros([1, 2, 5], np.uint8)})


@pytest.mark.parametrize("zero_point", [np.int16(32767), np.uint16(65535), np.int16(-32768)])
def test_a_kept_quantize_linear_just_inside_int32_saturates_once_its_zero_point_is_added(zero_point):
    """x / scale below 2^31 in float32 but past it once a 16-bit zero point is added: onnx.reference's int32 sum
    wraps there too, so the margin of the saturation above must hold the largest zero point (a margin of 2^31
    gave -32768 for 2147483520 + 32767 into int16, where onnxruntime gives 32767)."""
    x = np.array([2147483520.0, -2147483520.0, 1.0], np.float32)
    stored = helper.np_dtype_to_tensor_dtype(np.asarray(zero_point).dtype)
    graph = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="kept_q")], "g",
                              [helper.make_tensor_value_info("x", F, [3])],
                              [helper.make_tensor_value_info("q", stored, [3])],
                              [numpy_helper.from_array(np.array(1.0, np.float32), "s"),
                               numpy_helper.from_array(np.asarray(zero_point), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    (mine,), (theirs,) = ours(model, {"x": x}), unoptimized(model, {"x": x})
    assert mine.dtype == theirs.dtype and mine.tolist() == theirs.tolist()
